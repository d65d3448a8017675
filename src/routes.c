/*
 * routes.c
 *		Loads webgres.routes into worker memory and keeps it current.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "routes.h"
#include "stats.h"

static RouteTable table;
static MemoryContext routes_cxt = NULL;
static Oid	routes_relid = InvalidOid;
static bool routes_stale = true;
static bool warned_missing = false;

static void
routes_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == routes_relid)
		routes_stale = true;
}

void
routes_init(void)
{
	CacheRegisterRelcacheCallback(routes_invalidate, (Datum) 0);
}

static int
route_cmp(const void *a, const void *b)
{
	const Route *ra = a;
	const Route *rb = b;
	int			c;

	if (ra->priority != rb->priority)
		return ra->priority > rb->priority ? -1 : 1;
	c = pattern_compare(&ra->pattern, &rb->pattern);
	if (c != 0)
		return c;
	/* A route for one method before a route for any method. */
	if ((ra->method == NULL) != (rb->method == NULL))
		return ra->method == NULL ? 1 : -1;
	return ra->id < rb->id ? -1 : (ra->id > rb->id ? 1 : 0);
}

static void
free_table(void)
{
	for (int i = 0; i < table.nroutes; i++)
		if (table.routes[i].plan != NULL)
			SPI_freeplan(table.routes[i].plan);
	table.nroutes = 0;
	table.routes = NULL;
	table.max_captures = 0;
	if (routes_cxt != NULL)
		MemoryContextReset(routes_cxt);
}

static void
load_routes(void)
{
	Oid			nsp;
	int			rc;
	MemoryContext oldcxt;

	free_table();
	stats_count(STAT_ROUTE_LOADS);
	if (routes_cxt == NULL)
		routes_cxt = AllocSetContextCreate(TopMemoryContext, "webgres routes",
										   ALLOCSET_DEFAULT_SIZES);

	nsp = get_namespace_oid("webgres", true);
	routes_relid = OidIsValid(nsp) ? get_relname_relid("routes", nsp) : InvalidOid;
	table.installed = OidIsValid(routes_relid);
	if (!table.installed)
	{
		if (!warned_missing)
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("webgres is not installed in database \"%s\"", get_database_name(MyDatabaseId)),
					 errhint("Run CREATE EXTENSION webgres in that database, or point webgres.database at the database that has it.")));
		warned_missing = true;
		return;					/* stays stale: look again next request */
	}
	warned_missing = false;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	/* A database not yet updated to 1.2 records no search_path: the default then. */
	rc = SPI_execute(get_attnum(routes_relid, "search_path") != InvalidAttrNumber ?
					 "SELECT id, method, path, priority, handler, owner::oid, search_path "
					 "FROM webgres.routes" :
					 "SELECT id, method, path, priority, handler, owner::oid, NULL::text "
					 "FROM webgres.routes", true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read webgres.routes: %s", SPI_result_code_string(rc));

	oldcxt = MemoryContextSwitchTo(routes_cxt);
	table.routes = palloc0(sizeof(Route) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Route	   *r = &table.routes[table.nroutes];
		bool		isnull;
		char	   *error;

		r->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		r->method = SPI_getvalue(tup, desc, 2);
		r->path = SPI_getvalue(tup, desc, 3);
		r->priority = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		r->handler = SPI_getvalue(tup, desc, 5);
		r->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
		r->search_path = SPI_getvalue(tup, desc, 7);
		r->label = psprintf("%s %s (route %lld)", r->method ? r->method : "*", r->path,
							(long long) r->id);

		/* Rows were checked on the way in; this guards against edits that bypassed the trigger. */
		if (!pattern_compile(r->path, &r->pattern, &error))
		{
			ereport(WARNING,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("webgres route %lld is ignored: %s", (long long) r->id, error)));
			continue;
		}
		if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(r->owner)))
		{
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("webgres route %s is ignored: its owner role (OID %u) no longer exists",
							r->label, r->owner),
					 errhint("Set the route's owner to an existing role.")));
			continue;
		}
		table.max_captures = Max(table.max_captures, r->pattern.nsegs);
		table.nroutes++;
	}
	MemoryContextSwitchTo(oldcxt);
	SPI_finish();

	if (table.nroutes > 1)
		qsort(table.routes, table.nroutes, sizeof(Route), route_cmp);
	routes_stale = false;
}

void
routes_forget_stale_responses(RouteTable *routes)
{
	for (int i = 0; i < routes->nroutes; i++)
	{
		Route	   *r = &routes->routes[i];

		if (r->cached != NULL && !SPI_plan_is_valid(r->plan))
		{
			/* Its memory goes with the table's; rebuilt on the next request. */
			r->cached = NULL;
			r->constant = false;
			SPI_freeplan(r->plan);
			r->plan = NULL;
		}
	}
}

RouteTable *
routes_peek(void)
{
	return (routes_stale || !table.installed) ? NULL : &table;
}

RouteTable *
routes_current(void)
{
	Assert(IsTransactionState());
	if (routes_stale)
		load_routes();
	return &table;
}
