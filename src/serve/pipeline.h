/*
 * pipeline.h
 *		Routes and answers one request inside this backend.
 *
 * The pipeline is everything between a parsed request and a finished
 * response: matching the route, the constant-route fast path, the
 * transaction (or the read-only transaction shared by several requests),
 * running the handler through SPI, and turning errors into responses.  It
 * knows nothing of sockets, connections or the event loop, so any backend
 * that has a request in memory can call it: the HTTP worker does, from its
 * h2o handler, and so can a process that received the request some other
 * way.
 *
 * Contract of pipeline_run():
 *
 * Input: an h2o_req_t of which the pipeline reads only
 *	 method		the request method, as sent ("GET", "HEAD", ...)
 *	 path		the origin-form target, query included ("/p?q")
 *	 query_at	offset of '?' in path, or SIZE_MAX when there is none
 *	 headers	the request headers (names as h2o tokens or strings)
 *	 entity		the body, or base NULL when the request has none
 *	 pool		where the response is allocated
 * and of run->client, when set (the worker passes req->conn), only what
 * the pipeline's modules read through their states (serve/phase.h: the
 * rate limits its peer address); and writes only
 * req->res (status, reason, headers, content_length) and
 * req->compress_hint (the answering route's compress column).  It reads
 * nothing else of req->conn, nor req->version, req->input or any other
 * field, and does not call h2o_start_response() or h2o_send(): sending is
 * the caller's business (except for an event stream, which sse.c sends
 * from the worker's loop).  A process without an HTTP connection can
 * therefore build the request itself: zero an h2o_req_t,
 * h2o_mem_init_pool() its pool, fill in the six fields above and call
 * pipeline_run() with place PIPELINE_RUN_HERE, run->client NULL and
 * run->states.begun zero (no module's state handed over: the rate limits
 * count nothing by address); afterwards h2o_mem_clear_pool() frees what
 * the response used.
 *
 * Output: what became of the request (PipelineOutcome), and for an answer
 * req->res and the body in *body / *bodylen, both allocated in req->pool,
 * so they stay valid until the pool is cleared.  A HEAD request is routed
 * to GET routes and gets the GET response's body; leaving it out on the
 * wire is the sender's job.
 *
 * The caller must be a backend connected to the database (background
 * worker or otherwise), outside any transaction, with no SPI connection
 * open, in a memory context that outlives the call.  Errors are answered,
 * never raised.
 */
#ifndef WEBGRES_PIPELINE_H
#define WEBGRES_PIPELINE_H

#include <stddef.h>

#include "datatype/timestamp.h"

#include "serve/phase.h"

struct st_h2o_req_t;
struct st_h2o_conn_t;
struct StreamSink;
struct Mount;

/*
 * Where pipeline_run() is called from.  On the event loop it may decline to
 * run a request and say so (PIPELINE_HAND_OFF): when a matching route is in mode
 * executor, or in mode auto and marked slow, or when a handler of a route in
 * mode auto ran past webgres.inline_budget and was cancelled and rolled
 * back.  Elsewhere (an executor, or a worker with no executors) it runs
 * everything.
 */
typedef enum PipelinePlace
{
	PIPELINE_ON_LOOP,
	PIPELINE_RUN_HERE
} PipelinePlace;

/* What became of a request; the caller acts on it and on nothing else. */
typedef enum PipelineOutcome
{
	PIPELINE_ANSWERED,			/* req->res and *body hold the answer: send it */
	PIPELINE_HAND_OFF,			/* not answered, nothing committed: run it on
								 * an executor (route_id, max_concurrency,
								 * rerun say how) */
	PIPELINE_EVENT_STREAM,		/* an event stream, its response under way
								 * from the loop (sse.c): nothing to send */
	PIPELINE_STREAMED,			/* a route in mode stream wrote its whole
								 * document to the sink: end it */
	PIPELINE_STREAM_CUT,		/* a stream failed after its head went to the
								 * sink: cut it, without an end */
	PIPELINE_STATIC				/* not answered: no route has the path, and
								 * run->static_mount's files answer it
								 * (only if run->static_ok) */
} PipelineOutcome;

typedef struct PipelineRun
{
	PipelinePlace place;		/* in */
	TimestampTz head_at;		/* in: handler_timeout counts from here; 0: now */
	const struct StreamSink *sink;	/* in: where a route in mode stream writes;
									 * NULL: such routes answer 503 */
	bool		static_ok;		/* in: the caller can serve static mounts */
	int64		cut_route_id;	/* in, PIPELINE_RUN_HERE: the route whose run
								 * on the loop was cut after
								 * webgres.inline_budget, sending the request
								 * here; 0: none */
	struct st_h2o_conn_t *client;	/* in: the connection the pipeline's
									 * modules begin their states with;
									 * NULL: they use states as handed over */
	PhaseStates states;			/* in, client NULL: the modules' states
								 * handed over (begun zero: none); out,
								 * PIPELINE_HAND_OFF: theirs, to hand over */
	bool		failed;			/* out: the answer is an error's (a stream
								 * that had begun was cut) */
	int64		answered_by;	/* out: the route that answered or failed; 0: none */
	TimestampTz started;		/* out: when routing began (for latency) */
	const char *role;			/* out: the role a route with auth ran its
								 * handler as, in req's pool; NULL: none */
	int64		plan_us;		/* out: microseconds spent planning (handler/plan_clock.h) */
	bool		rerun;			/* out, PIPELINE_HAND_OFF: although it started
								 * on the loop */
	int64		route_id;		/* out, PIPELINE_HAND_OFF: the route that sent
								 * it off the loop */
	int			max_concurrency;	/* out, PIPELINE_HAND_OFF: that route's cap;
									 * 0: the default */
	const struct Mount *static_mount;	/* out, PIPELINE_STATIC: the mount */
} PipelineRun;

/* Sets up the pipeline's memory and route table; once per process. */
extern void pipeline_init(void);

/*
 * Routes and answers req (see the contract above) at run->place, with
 * handler_timeout counted from run->head_at.
 */
extern PipelineOutcome pipeline_run(struct st_h2o_req_t *req, PipelineRun *run,
									char **body, size_t *bodylen);

/* After SIGHUP: reads the configuration again, and the keys authentication uses. */
extern void pipeline_reload(void);

/*
 * Called before the process waits for more requests: commits the read-only
 * transaction shared by the requests served since the last wait, and
 * reports the process idle in pg_stat_activity.
 */
extern void pipeline_before_wait(void);

/*
 * A run beside the pipeline's on the event loop (a WebSocket's message
 * handler, exec/ws_dispatch.c), in a transaction of its own that the caller
 * starts after pipeline_inline_begin(): that commits the read-only
 * transaction shared by the pass's requests and, with budget, puts the run
 * (begun at began) under webgres.inline_budget, whose watchdog cancels it
 * (ERRCODE_QUERY_CANCELED) once it runs past; true if it did (not with a
 * budget of 0).  pipeline_inline_end(), after the run or in its
 * error-recovery path, says whether the budget ran out.
 */
extern bool pipeline_inline_begin(TimestampTz began, bool budget);
extern bool pipeline_inline_end(void);

/*
 * webgres.handler_timeout and webgres.expose_errors, which the hand-off to
 * an executor and the WebSocket calls apply too: read through these, the
 * variables are the pipeline's own.
 */
/* webgres.handler_timeout in milliseconds; 0: none. */
extern int	pipeline_handler_timeout_ms(void);

/* The deadline of a handler whose request became complete at from; 0: none. */
extern TimestampTz pipeline_deadline_from(TimestampTz from);

/* webgres.expose_errors: whether a 5xx names its cause to the client. */
extern bool pipeline_expose_errors(void);

/* Defines the pipeline's settings (webgres.handler_timeout and its companions); from _PG_init. */
extern void pipeline_define_settings(void);

#endif
