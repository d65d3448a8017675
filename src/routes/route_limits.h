/*
 * route_limits.h
 *		Per-route execution state shared by every worker and executor.
 *
 * A small fixed-size table in shared memory, keyed by route id, holds for
 * each route that has left the event loop at least once: whether mode auto
 * currently sends it to executors (slow), how many of its requests are
 * admitted to executors (running) and how many wait for admission (queued).
 */
#ifndef WEBGRES_ROUTE_LIMITS_H
#define WEBGRES_ROUTE_LIMITS_H

typedef struct RouteLimits RouteLimits;

/* Module load: ask for shared memory (when preloaded). */
extern void route_limits_shmem_request(void);

/* The route's entry, created on first use; NULL if the table is full. */
extern RouteLimits *route_limits_get(int64 route_id);

/* Whether mode auto currently runs the route on executors. */
extern bool route_limits_is_slow(RouteLimits *rl);

/* A run on the event loop went past webgres.inline_budget. */
extern void route_limits_mark_slow(RouteLimits *rl);

/* An executor ran the route in elapsed_ms: may return it to the loop. */
extern void route_limits_observe_run(RouteLimits *rl, long elapsed_ms);

/* Admits one more running request if fewer than cap run; true if admitted. */
extern bool route_limits_try_run(RouteLimits *rl, int cap);

/* A request admitted by route_limits_try_run has finished. */
extern void route_limits_end_run(RouteLimits *rl);

/* Takes a place in the route's queue if fewer than max wait; true if taken. */
extern bool route_limits_try_queue(RouteLimits *rl, int max);

/* Gives back a place taken with route_limits_try_queue. */
extern void route_limits_leave_queue(RouteLimits *rl);

/* Calls fn for each route with shared state; false without shared memory. */
extern bool route_limits_walk(void (*fn) (int64 route_id, bool slow, int running,
										  int queued, void *arg), void *arg);

/* The cap of a route whose max_concurrency is NULL. */
extern int	route_limits_default_cap(void);

/* webgres.inline_budget: how long an auto route's handler may run on the event loop. */
extern int	webgres_inline_budget;

/* Defines webgres.inline_budget; from _PG_init. */
extern void route_limits_define_settings(void);

#endif
