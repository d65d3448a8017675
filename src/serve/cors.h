/*
 * cors.h
 *		Cross-origin resource sharing: which other origins' pages may call a
 *		route from a browser, set per route (the cors_* columns of
 *		webgres.routes) or for every route (the webgres.cors_* settings).
 *
 * A module of two phases (serve/phase_list.h, cors_module).  In
 * PHASE_PREFLIGHT a preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) is answered from the route table before
 * anything else, without a transaction when the table is current and never
 * with a handler.  In PHASE_FILTER cors_respond() adds the allow headers to
 * whatever answered a route's request: its handler, its cached constant
 * response, an error, a 405, the head of a stream, the worker's own answer
 * to a request it handed off.  While no route has origins allowed, the
 * default, the module is on neither list and costs nothing.
 */
#ifndef WEBGRES_CORS_H
#define WEBGRES_CORS_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/guc.h"

#include "routes/routes.h"

struct st_h2o_req_t;

/* Registers the route table callbacks that keep the per-route columns. */
extern void cors_init(void);

/*
 * Answers req if it is a CORS preflight for a route of table that has
 * origins allowed: 204 with the Access-Control-Allow-* headers when the
 * origin, method and headers asked for are allowed, else 403 without them.
 * False, with nothing touched, for any other request (the common case costs
 * one method comparison), when table is NULL, or when the route that would
 * answer the method asked for has no CORS origins.
 */
extern bool cors_preflight(struct st_h2o_req_t *req, const RouteTable *table,
						   const PathSegments *segs, char **body, size_t *bodylen);

/*
 * Adds route's CORS headers to req->res: Vary: Origin, and for an allowed
 * Origin Access-Control-Allow-Origin (with -Allow-Credentials and
 * -Expose-Headers as set).  Nothing when route is NULL or allows no origin.
 * Adds them once: a second call for the same response does nothing.
 */
extern void cors_respond(struct st_h2o_req_t *req, const Route *route);

/*
 * The route whose CORS settings cover an answer no handler gave for a path
 * (405): the first route that matches segs, whatever its method.
 */
extern Route *cors_route_at(const RouteTable *table, const PathSegments *segs);

/*
 * Whether route's CORS settings name origin (len bytes, as the Origin
 * header sent it), exactly or by a pattern (* standing for part of a host name).
 * "*" alone (any origin) does not count: such an origin may not send
 * credentials, so a check of cookie-authenticated requests (CSRF) should
 * refuse it.  False when route is NULL.
 */
extern bool cors_origin_allowed(const Route *route, const char *origin, size_t len);

/* Defines the webgres.cors_* settings (serve/cors_policy.c); from _PG_init. */
extern void cors_define_settings(void);

/*
 * Checks the cors_* columns of a webgres.routes row being saved (the
 * route_check trigger): each list entry well formed, and no route that
 * would allow credentials from any origin, whether by its own columns or
 * by the settings its NULL columns fall back to (these only while
 * check_function_bodies is on, so that a restore is not refused for
 * today's settings).  Raises the error.
 */
extern void cors_check_route(HeapTuple tuple, TupleDesc desc);

#endif
