/*
 * respond.h
 *		The one exit: every response leaves the worker through here.
 *
 * Whatever produced it (a module of the worker's phases, the pipeline on
 * the loop, an executor through the hand-off, a static mount's file
 * handler, an event stream, the metrics-only listeners' handler), a
 * response is framed, counted and sent here, and nowhere else: HEAD and
 * no-content framing, its status counted (core/stats.h), the HTTP/2 guard
 * told of the answer, and the answer counted under its route
 * (routes/route_stats.h).  CORS's allow headers
 * are the pipeline's PHASE_FILTER, where the answering route is known;
 * compression, nosniff and HSTS, and the access log are libh2o's filters
 * and logger on the worker's paths (http/response_phase_list.h), which see
 * what leaves from here (PHASE_FILTER, PHASE_LOG in serve/phase.h).
 */
#ifndef WEBGRES_RESPOND_H
#define WEBGRES_RESPOND_H

#include "serve/phase.h"

struct st_h2o_req_t;

/*
 * Sends a whole answer: req->res and body, framed for HEAD and for the
 * statuses that have no content.  Counted under route_id when started is
 * not 0 (a routed request; route_id 0: no route answered).
 */
extern void respond_send(struct st_h2o_req_t *req, char *body, size_t bodylen,
						 int64 route_id, TimestampTz started);

/* A static mount's file handler started req's response: counts it. */
extern void respond_file_started(struct st_h2o_req_t *req);

/* A streamed response's head goes out (an event stream, an executor's stream). */
extern void respond_stream_head(struct st_h2o_req_t *req);

/* A streamed response of status ended, or was cut, after bytes. */
extern void respond_stream_end(int status, int64 route_id, uint64 bytes, TimestampTz started);

/* The exit, for the hand-off, which reaches it through these (exec/handoff.h). */
extern const PhaseExit respond_exit;

#endif
