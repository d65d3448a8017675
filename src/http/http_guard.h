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
 * The module http_guard_module of PHASE_CONNECTION (serve/phase.h): a
 * request goes on if it may be routed, an absolute-form target turned into
 * its path; otherwise the refusal is in req->res and *body, and the
 * connection will be closed after it is sent.
 */

#endif
