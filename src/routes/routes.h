/*
 * routes.h
 *		The worker's copy of webgres.routes, compiled for matching.
 *
 * Loaded on first use and again after any change to the table: the table's
 * trigger sends a relcache invalidation for it, which reaches every backend
 * (and hot standbys, through WAL) and is accepted at the start of the next
 * request's transaction.
 */
#ifndef WEBGRES_ROUTES_H
#define WEBGRES_ROUTES_H

#include "parse/pattern.h"
#include "routes/route_trie.h"

/* Where a route's handlers run (the mode column). */
typedef enum RouteMode
{
	ROUTE_MODE_AUTO,			/* on the loop while fast, else on executors */
	ROUTE_MODE_INLINE,			/* always on the event loop */
	ROUTE_MODE_EXECUTOR,		/* always on an executor */
	ROUTE_MODE_STREAM			/* on an executor, rows streamed (stream.c) */
} RouteMode;

/* Whether a route's requests carry a token (the auth column). */
typedef enum RouteAuth
{
	ROUTE_AUTH_NONE,			/* tokens ignored; the handler runs as the owner */
	ROUTE_AUTH_OPTIONAL,		/* a token's role, else webgres.anon_role */
	ROUTE_AUTH_REQUIRED			/* a token's role; none: 401 */
} RouteAuth;

/* A route's compress column: may its responses be gzipped (serve/compress.c)? */
typedef enum RouteCompress
{
	ROUTE_COMPRESS_AUTO,		/* NULL: unless the request carries credentials */
	ROUTE_COMPRESS_ALWAYS,		/* true: credentialed requests too (opted in) */
	ROUTE_COMPRESS_NEVER		/* false */
} RouteCompress;

/*
 * The most pipeline modules (serve/phase_list.h) a route keeps
 * configuration for; serve/phase.c checks the list fits.
 */
#define ROUTE_MAX_MODULES 8

typedef struct Route
{
	int64		id;
	char	   *method;			/* NULL matches any method */
	char	   *path;
	PathPattern pattern;
	int			priority;
	char	   *handler;
	Oid			owner;
	char	   *search_path;	/* the handler plans and runs with this */
	char	   *label;			/* "GET /users/:handle (route 3)", for messages */
	struct HandlerState *handler_state; /* handler.c's; NULL until it runs */
	RouteMode	mode;
	int			max_concurrency;	/* 0: the default */
	char	   *stream_headers; /* mode stream: extra headers (jsonb text), or NULL */
	RouteCompress compress;		/* may its responses be compressed (compress.c) */
	struct RoutePlacement *limits; /* shared execution state, once looked up */
	struct CorsPolicy *cors;	/* serve/cors.c's: the route's own CORS
								 * columns, or NULL when all are unset */
	bool		limits_looked_up;
	RouteAuth	auth;
	int64		max_body_size;	/* bytes its requests' bodies may hold; -1:
								 * webgres.max_body_size only (body_limit.c) */
	bool		websocket;		/* upgrade = 'websocket': GET opens a WebSocket */
	char	   *on_message;		/* WebSocket: SQL run per message, or NULL */
	char	   *on_close;		/* WebSocket: SQL run once it closed, or NULL */

	/*
	 * Each pipeline module's own configuration of the route, from its
	 * columns (routes/route_modules.h), by its index in serve/phase_list.h;
	 * NULL when the route does not use the module.  In the table's memory.
	 */
	void	   *module_conf[ROUTE_MAX_MODULES];
} Route;

typedef struct RouteTable
{
	bool		installed;		/* the extension exists in this database */
	int			nroutes;
	Route	   *routes;			/* in matching order */
	int			max_captures;	/* most segments of any pattern */
	RouteTrie  *trie;			/* the patterns, for matching */
	uint64		generation;		/* counts loads: a match is for one of them */
} RouteTable;

/*
 * Walks the routes whose pattern matches a path, in matching order: higher
 * priority first, then the more specific pattern (pattern_compare), then a
 * route for one method before a route for any method, then the lower id.
 * Which methods a route takes is the caller's to check.
 *
 *	RouteMatch	m;
 *	Route	   *r;
 *	int			ncaps;
 *
 *	routes_match_init(&m, table, &segs);
 *	while ((r = routes_match_next(&m, &ncaps, caps)) != NULL)
 *		...
 *	routes_match_end(&m);
 *
 * caps needs room for table->max_captures + 1 captures; each call
 * overwrites it with the captures of the route it returns.  The table must
 * not be reloaded during the walk.  The cost of a walk does not grow with
 * the number of routes: the table's trie yields the few routes whose
 * pattern can match, which are then put in matching order.  Allocates in
 * CurrentMemoryContext only when very many routes match; routes_match_end()
 * frees it (a caller whose context is reset anyway may skip it).
 */
typedef struct RouteMatch
{
	const RouteTable *table;
	uint64		generation;		/* table->generation when the walk began */
	const PathSegments *segs;
	TrieCandidates candidates;	/* indexes into table->routes, ascending */
	int			next;			/* the next candidate to return */
} RouteMatch;

extern void routes_match_init(RouteMatch *m, const RouteTable *table,
							  const PathSegments *segs);
extern Route *routes_match_next(RouteMatch *m, int *ncaps, PathCapture *caps);
extern void routes_match_end(RouteMatch *m);

/*
 * Rewinds m to walk the same routes again, if table is the table m was
 * made for and has not been reloaded since; otherwise returns false and
 * leaves m to be ended.  A request looks at its routes twice (outside its
 * transaction for the constant-route fast path, then inside it), and the
 * second look then costs no trie lookup.
 */
extern bool routes_match_rewind(RouteMatch *m, const RouteTable *table);

/* Registers the invalidation callback; once per worker. */
extern void routes_init(void);

/* The current table, reloaded if it changed.  Call inside a transaction. */
extern RouteTable *routes_current(void);

/*
 * The table as last loaded, without looking for changes, or NULL if it is
 * known to be stale.  For the constant-route fast path, which runs outside
 * a transaction.
 */
extern RouteTable *routes_peek(void);

/*
 * Registers a function to call just before the table is replaced (or
 * dropped), while its routes are still valid: whatever a module keeps per
 * route must go then.  Called inside a transaction.
 */
typedef void (*RoutesReplaceCallback) (void);
extern void routes_on_replace(RoutesReplaceCallback callback);

/*
 * Registers a function to call once the table has been loaded, inside the
 * loading transaction and with no SPI connection open: a module that keeps
 * state per route can read what it needs for every route then, so that it
 * is there for requests answered without a transaction.
 */
typedef void (*RoutesLoadCallback) (RouteTable *table);
extern void routes_on_load(RoutesLoadCallback callback);

#endif
