/*
 * http_guard.h
 *		Screens each request before it is routed (see screen.h).
 */
#ifndef WEBGRES_HTTP_GUARD_H
#define WEBGRES_HTTP_GUARD_H

#include <stddef.h>
#include <stdbool.h>

struct st_h2o_req_t;

/*
 * True if req may be routed; an absolute-form target has then been turned
 * into its path.  Otherwise the refusal is in req->res and *body, and the
 * connection will be closed after it is sent.
 */
extern bool http_guard_check(struct st_h2o_req_t *req, char **body, size_t *bodylen);

#endif
