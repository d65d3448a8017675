/*
 * route_placement.h
 *		Per-route execution state shared by every worker and executor.
 *
 * A small fixed-size table in shared memory, keyed by route id, holds for
 * each route that has left the event loop at least once: whether mode auto
 * currently sends it to executors (slow), how many of its requests are
 * admitted to executors (running) and how many wait for admission (queued).
 */
#ifndef WEBGRES_ROUTE_PLACEMENT_H
#define WEBGRES_ROUTE_PLACEMENT_H

typedef struct RoutePlacement RoutePlacement;

/* Module load: ask for shared memory (when preloaded). */
extern void route_placement_shmem_request(void);

/* The route's entry, created on first use; NULL if the table is full. */
extern RoutePlacement *route_placement_get(int64 route_id);

/* Whether mode auto currently runs the route on executors. */
extern bool route_placement_is_slow(RoutePlacement *rl);

/* A run on the event loop went past webgres.inline_budget. */
extern void route_placement_mark_slow(RoutePlacement *rl);

/* An executor ran the route in elapsed_ms: may return it to the loop. */
extern void route_placement_observe_run(RoutePlacement *rl, long elapsed_ms);

/* Admits one more running request if fewer than cap run; true if admitted. */
extern bool route_placement_try_run(RoutePlacement *rl, int cap);

/* A request admitted by route_placement_try_run has finished. */
extern void route_placement_end_run(RoutePlacement *rl);

/* Takes a place in the route's queue if fewer than max wait; true if taken. */
extern bool route_placement_try_queue(RoutePlacement *rl, int max);

/* Gives back a place taken with route_placement_try_queue. */
extern void route_placement_leave_queue(RoutePlacement *rl);

/* Calls fn for each route with shared state; false without shared memory. */
extern bool route_placement_walk(void (*fn) (int64 route_id, bool slow, int running,
										  int queued, void *arg), void *arg);

/* The cap of a route whose max_concurrency is NULL. */
extern int	route_placement_default_cap(void);

/* webgres.inline_budget in ms: how long an auto route's handler may run on the event loop. */
extern int	route_placement_inline_budget_ms(void);

/* Defines webgres.inline_budget; from _PG_init. */
extern void route_placement_define_settings(void);

#endif
