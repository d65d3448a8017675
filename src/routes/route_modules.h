/*
 * route_modules.h
 *		What the pipeline's modules add to webgres.routes and to its
 *		statistics, handed down to the routes floor.
 *
 * A pipeline module (serve/phase.h's PhaseModule) may keep its own
 * configuration per route in columns of webgres.routes, check those
 * columns in the table's trigger, and count its refusals per route.  The
 * route table (routes.c), the trigger (sql/functions.c) and the route
 * statistics (route_stats.c) serve every such module alike, without
 * naming any: serve/phase.c hands this floor the modules' RouteModuleHooks
 * at module load (route_modules_register()), in the order of
 * serve/phase_list.h, as a table of pointers.  The routes floor cannot
 * include serve/'s headers (docs/internals-modules.md's floors), so the
 * table is passed down instead of being looked up.
 */
#ifndef WEBGRES_ROUTE_MODULES_H
#define WEBGRES_ROUTE_MODULES_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "routes/routes.h"

/*
 * A module's part in webgres.routes and its statistics; every member may
 * be NULL (the module has none of it).
 *
 * columns: the module's columns of webgres.routes, as a NULL-terminated
 * list of pairs "name", "SQL type".  The route table selects each column,
 * or a NULL of its type while the installed extension is older than the
 * column, after the table's own columns.
 *
 * read_route: called for every route as the table loads, with the row and
 * the attribute number of the module's first column (the others follow in
 * order), in the route table's memory context.  It stores the module's
 * configuration in r->module_conf[its index in serve/phase_list.h], and
 * should leave NULL there for a route that does not use the module, so
 * that a request of it costs a NULL test.
 *
 * check_route: called by the table's trigger for every row inserted or
 * updated; ereports ERROR to refuse the row.
 *
 * counter, counter_help: a refusal counter per route, as name and help
 * text: counted by route_stats_count_module(), shown by the metrics
 * endpoint as webgres_route_<counter>_total.
 */
typedef struct RouteModuleHooks
{
	const char *const *columns;
	void		(*read_route) (HeapTuple tup, TupleDesc desc, int first_attno, Route *r);
	void		(*check_route) (HeapTuple tup, TupleDesc desc);
	const char *counter;
	const char *counter_help;
} RouteModuleHooks;

/*
 * The most modules that may declare a counter: each takes a counter in
 * every stripe of route_stats.c's entries, which have room for this many.
 */
#define ROUTE_MAX_COUNTERS 4

/*
 * The pipeline's modules, hooks[i] for the module of index i in
 * serve/phase_list.h (n <= ROUTE_MAX_MODULES); from _PG_init, before any
 * route is read.  The table must stay valid for the process' life.
 */
extern void route_modules_register(const RouteModuleHooks *const *hooks, int n);

/* Modules registered, and module i's hooks (never NULL for i < that). */
extern int	route_modules_count(void);
extern const RouteModuleHooks *route_modules_get(int i);

/*
 * Counters: the modules that declare one, numbered 0 .. n - 1 in their
 * registration order.  route_modules_counter_of() is a module's counter
 * (-1: none), route_modules_counter() the hooks of the module that counts
 * counter c.
 */
extern int	route_modules_ncounters(void);
extern int	route_modules_counter_of(int module);
extern const RouteModuleHooks *route_modules_counter(int c);

/* The routes trigger: every module's check_route on a row. */
extern void route_modules_check_route(HeapTuple tup, TupleDesc desc);

#endif
