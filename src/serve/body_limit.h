/*
 * body_limit.h
 *		A route's own limit on request bodies (webgres.routes.max_body_size),
 *		beside the server's webgres.max_body_size (docs/uploads.md).
 *
 * libh2o 2.2.5 reads a request's whole body before webgres sees the
 * request, refusing with 413 whatever exceeds webgres.max_body_size (from
 * Content-Length before reading, while reading a chunked body); a route's
 * lower limit is checked as soon as the route is matched, before any SQL
 * runs and before the body is copied to an executor.  An HTTP/1 body is
 * also looked at while it arrives (http/body_early.c).
 */
#ifndef WEBGRES_BODY_LIMIT_H
#define WEBGRES_BODY_LIMIT_H

#include "routes/routes.h"

struct st_h2o_req_t;

/* True to go on; false after answering 413 into *body. */
extern bool body_limit_admit(struct st_h2o_req_t *req, const Route *r,
							 char **body, size_t *bodylen);

#endif
