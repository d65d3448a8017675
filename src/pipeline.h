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

struct st_h2o_req_t;

/* Sets up the pipeline's memory and route table; once per process. */
extern void pipeline_init(void);

/* Routes and answers req (see the contract above). */
extern void pipeline_serve(struct st_h2o_req_t *req, char **body, size_t *bodylen);

/*
 * Called before the process waits for more requests: commits the read-only
 * transaction shared by the requests served since the last wait, and
 * reports the process idle in pg_stat_activity.
 */
extern void pipeline_before_wait(void);

#endif
