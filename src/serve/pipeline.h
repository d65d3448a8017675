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
 * Contract of pipeline_serve():
 *
 * Input: an h2o_req_t of which the pipeline reads only
 *	 method		the request method, as sent ("GET", "HEAD", ...)
 *	 path		the origin-form target, query included ("/p?q")
 *	 query_at	offset of '?' in path, or SIZE_MAX when there is none
 *	 headers	the request headers (names as h2o tokens or strings)
 *	 entity		the body, or base NULL when the request has none
 *	 pool		where the response is allocated
 * and writes only req->res (status, reason, headers, content_length).  It
 * reads nothing of req->conn, req->version, req->input or any other field,
 * and does not call h2o_start_response() or h2o_send(): sending is the
 * caller's business.  A process without an HTTP connection can therefore
 * build the request itself: zero an h2o_req_t, h2o_mem_init_pool() its
 * pool, fill in the six fields above and call pipeline_serve(); afterwards
 * h2o_mem_clear_pool() frees what the response used.
 *
 * Output: req->res and the body in *body / *bodylen, both allocated in
 * req->pool, so they stay valid until the pool is cleared.  A HEAD request
 * is routed to GET routes and gets the GET response's body; leaving it
 * out on the wire is the sender's job.
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

struct st_h2o_req_t;
struct StreamSink;

/*
 * Where pipeline_run() is called from.  On the event loop it may decline to
 * run a request and say so (hand_off): when a matching route is in mode
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

typedef struct PipelineRun
{
	PipelinePlace place;		/* in */
	TimestampTz head_at;		/* in: handler_timeout counts from here; 0: now */
	const struct StreamSink *sink;	/* in: where a route in mode stream writes;
									 * NULL: such routes answer 503 */
	bool		failed;			/* out: answered with an error (a stream that
								 * had begun was cut, and has no end) */
	bool		hand_off;		/* out: not answered, run it on an executor */
	bool		rerun;			/* out: ... although it started on the loop */
	int64		route_id;		/* out: the route that sent it off the loop */
	int			max_concurrency;	/* out: that route's cap; 0: the default */
	int64		answered_by;	/* out: the route that answered or failed; 0: none */
	TimestampTz started;		/* out: when routing began (for latency) */
} PipelineRun;

/* Sets up the pipeline's memory and route table; once per process. */
extern void pipeline_init(void);

/* Routes and answers req (see the contract above), all in this process. */
extern void pipeline_serve(struct st_h2o_req_t *req, char **body, size_t *bodylen);

/*
 * pipeline_serve() with a place and a start for handler_timeout; when
 * run->hand_off comes back set, nothing was answered or committed.
 */
extern void pipeline_run(struct st_h2o_req_t *req, PipelineRun *run,
						 char **body, size_t *bodylen);

/*
 * Called before the process waits for more requests: commits the read-only
 * transaction shared by the requests served since the last wait, and
 * reports the process idle in pg_stat_activity.
 */
extern void pipeline_before_wait(void);

#endif
