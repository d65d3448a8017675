/*
 * body_limit.c
 *		A route's own limit on request bodies (body_limit.h).
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/response.h"
#include "serve/body_limit.h"

/* Room for the 413's message, a route label of a long path included. */
#define BODY_LIMIT_MESSAGE_MAX	512

/* True to go on; false after answering 413. */
bool
body_limit_admit(h2o_req_t *req, const Route *r, char **body, size_t *bodylen)
{
	char		message[BODY_LIMIT_MESSAGE_MAX];

	if (r->max_body_size < 0 || req->entity.base == NULL ||
		req->entity.len <= (size_t) r->max_body_size)
		return true;
	/* On the loop outside any transaction: nothing allocated but in req's pool. */
	snprintf(message, sizeof(message), "the request body is %zu bytes; route %s takes at most %lld",
			 req->entity.len, r->label, (long long) r->max_body_size);
	response_simple(req, 413, message, body, bodylen);
	return false;
}
