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

#include "executor/spi.h"

#include "pattern.h"
#include "simple_eval.h"
#include "splice.h"

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
	SPIPlanPtr	plan;			/* prepared on first use */
	bool		read_only;		/* plan only reads: SELECT without locks or writes */
	struct CachedPlanSource *source;	/* the plan's one statement */
	bool		shareable;		/* read_only and calls no volatile function ... */
	int			shareable_generation;	/* ... as of this generation of source */
	bool		constant;		/* plan folds to one constant row */
	struct CachedResponse *cached;	/* that row's response, once built */
	SimpleEvalCache simple;		/* whether the plan is one row of expressions */
	SplicedHandler spliced;
} Route;

typedef struct RouteTable
{
	bool		installed;		/* the extension exists in this database */
	int			nroutes;
	Route	   *routes;			/* in matching order */
	int			max_captures;	/* most segments of any pattern */
} RouteTable;

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

/* Drops cached responses whose plan was invalidated.  Inside a transaction. */
extern void routes_forget_stale_responses(RouteTable *routes);

#endif
