/*
 * body_limit.c
 *		A route's own limit on request bodies (webgres.routes.max_body_size),
 *		beside the server's webgres.max_body_size (docs/uploads.md): a
 *		module of the access phase (serve/phase.h), registered in
 *		serve/phase_list.h.
 *
 * libh2o 2.2.5 reads a request's whole body before webgres sees the
 * request, refusing with 413 whatever exceeds webgres.max_body_size (from
 * Content-Length before reading, while reading a chunked body); a route's
 * lower limit is checked as soon as the route is matched, right after its
 * rate limits, before any SQL runs and before the body is copied to an
 * executor.  An HTTP/1 body is also looked at while it arrives
 * (http/body_early.c).  The module is on the lists only while some route
 * has a limit of its own.
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/response.h"
#include "serve/phase.h"

/* Room for the 413's message, a route label of a long path included. */
#define BODY_LIMIT_MESSAGE_MAX	512

/* PHASE_ACCESS: true to go on; false after answering 413. */
static bool
admit(PhaseRequest *pr, const Route *r)
{
	h2o_req_t  *req = pr->req;
	char		message[BODY_LIMIT_MESSAGE_MAX];

	if (r->max_body_size < 0 || req->entity.base == NULL ||
		req->entity.len <= (size_t) r->max_body_size)
		return true;
	/* On the loop outside any transaction: nothing allocated but in req's pool. */
	snprintf(message, sizeof(message), "the request body is %zu bytes; route %s takes at most %lld",
			 req->entity.len, r->label, (long long) r->max_body_size);
	response_simple(req, 413, message, pr->body, pr->bodylen);
	return false;
}

/* On the lists only while some route of the table has a limit of its own. */
static bool
body_limit_enabled(const RouteTable *routes)
{
	for (int i = 0; routes != NULL && i < routes->nroutes; i++)
		if (routes->routes[i].max_body_size >= 0)
			return true;
	return false;
}

/* The module: a route's body limit, right after its rate limits. */
const PhaseModule body_limit_module = {
	.name = "body_limit",
	.enabled = body_limit_enabled,
	.hooks = {[PHASE_ACCESS] = admit}
};
