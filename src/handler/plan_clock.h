/*
 * plan_clock.h
 *		The time this process spent planning queries, for the slow-request
 *		log's split of a request's time.
 */
#ifndef WEBGRES_PLAN_CLOCK_H
#define WEBGRES_PLAN_CLOCK_H

/* Once per process: starts counting planning time (a planner hook). */
extern void plan_clock_install(void);

/* Microseconds spent planning in this process so far; a request takes the difference. */
extern uint64 plan_clock_us(void);

#endif
