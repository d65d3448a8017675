/*
 * respond.c
 *		The one exit: frames, counts and sends every response (respond.h).
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "core/stats.h"
#include "http/h2_guard.h"
#include "http/respond.h"
#include "routes/route_stats.h"

/* Whether req is a HEAD request, whose answer has no content. */
static inline bool
is_head_request(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

/*
 * Sends a finished response (respond.h).  A HEAD answer keeps the GET's
 * status, headers and Content-Length but sends no content (RFC 9110
 * 9.3.2): libh2o 2.2.5 sends whatever it is given, for HEAD too.  A 1xx,
 * 204 or 304 answer has no content and no Content-Length (RFC 9110 6.4.1,
 * 8.6), whatever body the handler gave: a client reads none, so bytes sent
 * would be taken for the next response.  A routed answer counts the body
 * the handler gave (none for HEAD).
 */
void
respond_send(h2o_req_t *req, char *body, size_t bodylen, int64 route_id, TimestampTz started)
{
	static h2o_generator_t generator = {NULL, NULL};
	bool		is_head = is_head_request(req);
	int			status = req->res.status;
	bool		no_content = status < 200 || status == 204 || status == 304;
	h2o_iovec_t buf = h2o_iovec_init(body, no_content ? 0 : bodylen);

	stats_count_response(status);
	h2_guard_answered(req, buf.len);
	req->res.content_length = no_content ? SIZE_MAX : buf.len;
	h2o_start_response(req, &generator);
	if (is_head || buf.len == 0)
		h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
	else
		h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
	if (started != 0)
		route_stats_count(route_id, status, is_head ? 0 : bodylen, started);
}

/* A static mount's file handler started the response: counts it (respond.h). */
void
respond_file_started(h2o_req_t *req)
{
	stats_count_response(req->res.status);
	h2_guard_answered(req, req->res.content_length != SIZE_MAX ? req->res.content_length : 0);
}

/* A streamed response's head goes out: its status is counted (respond.h). */
void
respond_stream_head(h2o_req_t *req)
{
	stats_count_response(req->res.status);
}

/* A streamed response ended or was cut: counted under its route (respond.h). */
void
respond_stream_end(int status, int64 route_id, uint64 bytes, TimestampTz started)
{
	route_stats_count(route_id, status, bytes, started);
}

/* The exit as the hand-off reaches it. */
const PhaseExit respond_exit = {
	respond_send, respond_stream_head, respond_stream_end
};
