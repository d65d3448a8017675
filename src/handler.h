/*
 * handler.h
 *		Runs a route's handler for a request.
 */
#ifndef WEBGRES_HANDLER_H
#define WEBGRES_HANDLER_H

#include "datatype/timestamp.h"

#include "request.h"
#include "routes.h"

struct StreamSink;

/*
 * Runs route's handler with the route owner's privileges, inside the
 * caller's transaction and SPI connection.  If it returns a row, shapes the
 * response into rd->req and returns true; zero rows return false.  Errors
 * propagate.
 */
extern bool handler_run(Route *route, RequestData *rd, char **body, size_t *bodylen);

/*
 * True if route's handler, as last run, neither writes nor calls a volatile
 * function and its plan is still current, so that the request may share a
 * read-only transaction with others.  Needs no transaction.
 */
extern bool handler_can_share(const Route *route);

/*
 * Runs route's handler (mode stream) as a cursor and streams its rows to
 * sink, inside the caller's transaction and SPI connection (see stream.h).
 * Answers in *body instead, without running anything, when the Accept
 * header allows no format (406) or there is no sink (503: no executors).
 * Errors propagate.
 */
extern void handler_stream(Route *route, RequestData *rd, const struct StreamSink *sink,
						   bool head_only, TimestampTz stream_deadline,
						   char **body, size_t *bodylen);

/*
 * Prepares a handler as role owner to check it (for the routes trigger);
 * a handler that streams needs rows but no particular columns.
 */
extern void handler_validate(const char *handler, Oid owner, bool streams);

#endif
