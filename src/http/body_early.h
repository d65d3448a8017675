/*
 * body_early.h
 *		A route's own body limit, applied while an HTTP/1 body still arrives
 *		(docs/uploads.md#body-limits).
 *
 * libh2o 2.2.5 hands a request over only once its whole body has come;
 * the client timeouts' sweep (timeouts.c) looks at each connection that is
 * reading a body and asks here whether the route that will answer has a
 * limit the body passes: from Content-Length, or for a chunked body from
 * what has come so far.  Such a connection is answered 413 and closed at
 * once rather than when the body is complete.  The pipeline's check
 * (serve/body_limit.c) stays the exact one, for HTTP/2 and for what a
 * sweep does not see in time.
 */
#ifndef WEBGRES_BODY_EARLY_H
#define WEBGRES_BODY_EARLY_H

#include "core/h2o_mirror.h"

/* True if c's body is over its route's limit: c has been answered 413 and shut down. */
extern bool body_early_refuse(Http1ConnHead *c);

#endif
