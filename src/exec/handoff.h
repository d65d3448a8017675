/*
 * handoff.h
 *		The HTTP worker's side of running a request on an executor.
 *
 * handoff_start() takes a request the pipeline decided not to run on the
 * event loop.  The request then waits for its route's concurrency cap (in
 * this worker, its place counted for every worker in shared memory), goes
 * to an executor over a Unix socket, and is answered through the worker's
 * send function when the executor's response arrives.  Meanwhile the event
 * loop goes on serving every other connection.  A request that cannot wait
 * (the route's queue is full, no executor socket) is answered 503 with
 * Retry-After at once; one whose handler_timeout runs out while it waits
 * is answered 504.  If the client goes away, the executor's connection is
 * closed, and the executor cancels the handler.
 */
#ifndef WEBGRES_HANDOFF_H
#define WEBGRES_HANDOFF_H

#include "datatype/timestamp.h"

#include "serve/phase.h"

struct st_h2o_req_t;
struct st_h2o_evloop_t;

/*
 * Once per worker, after its event loop exists; exit is the worker's one
 * exit (http/respond.h), through which every answer of a hand-off leaves.
 */
extern void handoff_init(struct st_h2o_evloop_t *loop, const PhaseExit *exit);

/* True if requests can be handed off: executors are configured and reachable. */
extern bool handoff_enabled(void);

/*
 * Hands req to an executor.  route_id is the route whose mode or slowness
 * sent it (its cap applies: max_concurrency, or NULL (< 1) for the
 * default), head_at is when its head was complete, started when the
 * pipeline began routing it (its latency counts from there), and rerun says that it
 * already ran on the loop and was cancelled after webgres.inline_budget;
 * states are the pipeline modules' per-request states as pipeline_run()
 * readied them to cross, which the executor's pipeline goes on from.
 * req is answered later, or at once when it cannot wait.
 */
extern void handoff_start(struct st_h2o_req_t *req, int64 route_id, int max_concurrency,
						  TimestampTz head_at, TimestampTz started, bool rerun,
						  const PhaseStates *states);

/* The moment a request's head was complete, from h2o's timestamps. */
extern TimestampTz handoff_head_complete_at(struct st_h2o_req_t *req);

/* Defines webgres.max_queue; from _PG_init. */
extern void handoff_define_settings(void);

#endif
