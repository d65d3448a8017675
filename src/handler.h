/*
 * handler.h
 *		Runs a route's handler for a request.
 */
#ifndef WEBGRES_HANDLER_H
#define WEBGRES_HANDLER_H

#include "request.h"
#include "routes.h"

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
 * Prepares a handler as role owner, with search_path in effect (NULL: the
 * session's), to check it (for the routes trigger).
 */
extern void handler_validate(const char *handler, Oid owner, const char *search_path);

#endif
