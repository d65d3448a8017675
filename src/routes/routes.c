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
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "lib/stringinfo.h"

#include "routes/route_modules.h"
#include "routes/routes.h"
#include "core/stats.h"

static RouteTable table;
static MemoryContext routes_cxt = NULL;
static Oid	routes_relid = InvalidOid;
static bool routes_stale = true;
static bool warned_missing = false;

/* Called before the table is replaced; see routes_on_replace(). */
#define MAX_REPLACE_CALLBACKS 8
static RoutesReplaceCallback replace_callbacks[MAX_REPLACE_CALLBACKS];
static int	nreplace_callbacks = 0;

/* Called once the table is loaded; see routes_on_load(). */
#define MAX_LOAD_CALLBACKS 8
static RoutesLoadCallback load_callbacks[MAX_LOAD_CALLBACKS];
static int	nload_callbacks = 0;

/* Relcache callback: a change to webgres.routes makes the table stale. */
static void
routes_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == routes_relid)
		routes_stale = true;
}

/* Registers the invalidation callback; once per process. */
void
routes_init(void)
{
	CacheRegisterRelcacheCallback(routes_invalidate, (Datum) 0);
}

/* qsort comparator: routes in matching order. */
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

/* Registers a function to call before the table is replaced. */
void
routes_on_replace(RoutesReplaceCallback callback)
{
	if (nreplace_callbacks >= MAX_REPLACE_CALLBACKS)
		elog(ERROR, "too many route table callbacks");
	replace_callbacks[nreplace_callbacks++] = callback;
}

/* Registers a function called once the table is loaded (routes.h). */
void
routes_on_load(RoutesLoadCallback callback)
{
	if (nload_callbacks >= MAX_LOAD_CALLBACKS)
		elog(ERROR, "too many route table callbacks");
	load_callbacks[nload_callbacks++] = callback;
}

/* Drops the table, after telling the modules that keep state per route. */
static void
free_table(void)
{
	for (int i = 0; i < nreplace_callbacks; i++)
		replace_callbacks[i] ();
	table.nroutes = 0;
	table.routes = NULL;
	table.max_captures = 0;
	table.trie = NULL;
	table.generation++;			/* walks begun on the old table end */
	if (routes_cxt != NULL)
		MemoryContextReset(routes_cxt);
}

/* Builds the table's trie, in which route i is the i-th in matching order. */
static void
build_trie(void)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(routes_cxt);
	const PathPattern **patterns = palloc(sizeof(PathPattern *) * Max(table.nroutes, 1));

	for (int i = 0; i < table.nroutes; i++)
		patterns[i] = &table.routes[i].pattern;
	table.trie = route_trie_build(patterns, table.nroutes);
	pfree(patterns);
	MemoryContextSwitchTo(oldcxt);
}

/* Attribute number of the first module column: after the table's own 16. */
#define FIRST_MODULE_ATTNO 17

/*
 * Appends the pipeline modules' columns (routes/route_modules.h) to a
 * select list, in their registration order: each column, or a NULL of its
 * type while the installed extension is older than the column.
 */
static void
append_module_columns(StringInfo sql)
{
	for (int m = 0; m < route_modules_count(); m++)
	{
		const char *const *col = route_modules_get(m)->columns;

		for (; col != NULL && col[0] != NULL; col += 2)
		{
			if (get_attnum(routes_relid, col[0]) != InvalidAttrNumber)
				appendStringInfo(sql, ", %s", quote_identifier(col[0]));
			else
				appendStringInfo(sql, ", NULL::%s", col[1]);
		}
	}
}

/*
 * Runs the query that reads webgres.routes; a database not yet updated to
 * 1.2 has no mode columns (all auto) and records no search_path (the
 * default then).  Sets *has_modes to whether it has the mode columns.
 */
static void
select_routes(bool *has_modes)
{
	StringInfoData sql;
	int			rc;

	*has_modes = get_attnum(routes_relid, "mode") != InvalidAttrNumber;
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT id, method, path, priority, handler, owner::oid, "
					 "%s, %s, %s, %s, %s, %s, %s, %s",
					 get_attnum(routes_relid, "search_path") != InvalidAttrNumber ?
					 "search_path" : "NULL::text",
					 *has_modes ? "mode" : "NULL::text",
					 *has_modes ? "max_concurrency" : "NULL::integer",
					 get_attnum(routes_relid, "stream_headers") != InvalidAttrNumber ?
					 "stream_headers" : "NULL::jsonb",
					 get_attnum(routes_relid, "compress") != InvalidAttrNumber ?
					 "compress" : "NULL::boolean",
					 get_attnum(routes_relid, "auth") != InvalidAttrNumber ?
					 "auth" : "NULL::text",
					 get_attnum(routes_relid, "max_body_size") != InvalidAttrNumber ?
					 "max_body_size" : "NULL::integer",
					 get_attnum(routes_relid, "upgrade") != InvalidAttrNumber ?
					 "upgrade, on_message, on_close" :
					 "NULL::text, NULL::text, NULL::text");
	append_module_columns(&sql);
	appendStringInfoString(&sql, " FROM webgres.routes");
	rc = SPI_execute(sql.data, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read webgres.routes: %s", SPI_result_code_string(rc));
	pfree(sql.data);
}

/*
 * Lets each pipeline module read its columns of a row into r, from the
 * attribute numbers select_routes() gave them.
 */
static void
read_module_columns(HeapTuple tup, TupleDesc desc, Route *r)
{
	int			attno = FIRST_MODULE_ATTNO;

	for (int m = 0; m < route_modules_count(); m++)
	{
		const RouteModuleHooks *hooks = route_modules_get(m);
		int			ncols = 0;

		for (const char *const *col = hooks->columns; col != NULL && col[0] != NULL; col += 2)
			ncols++;
		r->module_conf[m] = NULL;	/* the slot may hold a row refused before */
		if (hooks->read_route != NULL)
			hooks->read_route(tup, desc, attno, r);
		attno += ncols;
	}
}

/* The auth column's value as a RouteAuth; NULL (before 1.4) is none. */
static RouteAuth
route_auth_of(const char *auth)
{
	if (auth != NULL && strcmp(auth, "optional") == 0)
		return ROUTE_AUTH_OPTIONAL;
	if (auth != NULL && strcmp(auth, "required") == 0)
		return ROUTE_AUTH_REQUIRED;
	return ROUTE_AUTH_NONE;
}

/*
 * Fills r from a row of select_routes(), in the current memory context;
 * false (with a warning) if the route cannot be served.
 */
static bool
read_route(HeapTuple tup, TupleDesc desc, bool has_modes, Route *r)
{
	bool		isnull;
	char	   *error;

	r->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	r->method = SPI_getvalue(tup, desc, 2);
	r->path = SPI_getvalue(tup, desc, 3);
	r->priority = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	r->handler = SPI_getvalue(tup, desc, 5);
	r->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 6, &isnull));
	r->search_path = SPI_getvalue(tup, desc, 7);
	r->mode = ROUTE_MODE_AUTO;
	if (has_modes)
	{
		char	   *mode = SPI_getvalue(tup, desc, 8);
		Datum		cap = SPI_getbinval(tup, desc, 9, &isnull);

		if (mode != NULL && strcmp(mode, "inline") == 0)
			r->mode = ROUTE_MODE_INLINE;
		else if (mode != NULL && strcmp(mode, "executor") == 0)
			r->mode = ROUTE_MODE_EXECUTOR;
		else if (mode != NULL && strcmp(mode, "stream") == 0)
			r->mode = ROUTE_MODE_STREAM;
		r->max_concurrency = isnull ? 0 : DatumGetInt32(cap);
	}
	r->stream_headers = SPI_getvalue(tup, desc, 10);
	{
		Datum		compress = SPI_getbinval(tup, desc, 11, &isnull);

		r->compress = isnull ? ROUTE_COMPRESS_AUTO :
			DatumGetBool(compress) ? ROUTE_COMPRESS_ALWAYS : ROUTE_COMPRESS_NEVER;
	}
	r->auth = route_auth_of(SPI_getvalue(tup, desc, 12));
	{
		Datum		limit = SPI_getbinval(tup, desc, 13, &isnull);

		r->max_body_size = isnull ? -1 : DatumGetInt32(limit);
	}
	r->websocket = SPI_getvalue(tup, desc, 14) != NULL;
	r->on_message = SPI_getvalue(tup, desc, 15);
	r->on_close = SPI_getvalue(tup, desc, 16);
	read_module_columns(tup, desc, r);
	r->label = psprintf("%s %s (route %lld)", r->method ? r->method : "*", r->path,
						(long long) r->id);

	/* Rows were checked on the way in; this guards against edits that bypassed the trigger. */
	if (!pattern_compile(r->path, &r->pattern, &error))
	{
		ereport(WARNING,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("webgres route %lld is ignored: %s", (long long) r->id, error)));
		return false;
	}
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(r->owner)))
	{
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("webgres route %s is ignored: its owner role (OID %u) no longer exists",
						r->label, r->owner),
				 errhint("Set the route's owner to an existing role.")));
		return false;
	}
	return true;
}

/* Reads webgres.routes into a new table, replacing the old one. */
static void
load_routes(void)
{
	Oid			nsp;
	int			rc;
	bool		has_modes;
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
	select_routes(&has_modes);

	oldcxt = MemoryContextSwitchTo(routes_cxt);
	table.routes = palloc0(sizeof(Route) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Route	   *r = &table.routes[table.nroutes];

		if (!read_route(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, has_modes, r))
			continue;
		table.max_captures = Max(table.max_captures, r->pattern.nsegs);
		table.nroutes++;
	}
	MemoryContextSwitchTo(oldcxt);
	SPI_finish();

	if (table.nroutes > 1)
		qsort(table.routes, table.nroutes, sizeof(Route), route_cmp);
	build_trie();
	for (int i = 0; i < nload_callbacks; i++)
		load_callbacks[i] (&table);
	routes_stale = false;
}

/* Sorts a few route indexes in place: candidate sets are small. */
static void
sort_indexes(int *idx, int n)
{
	for (int i = 1; i < n; i++)
	{
		int			v = idx[i];
		int			j = i - 1;

		for (; j >= 0 && idx[j] > v; j--)
			idx[j + 1] = idx[j];
		idx[j + 1] = v;
	}
}

/* qsort comparator for route indexes. */
static int
index_cmp(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Below this many candidates insertion sort beats qsort's overhead; a
 * request rarely matches more than a handful of routes.
 */
#define INSERTION_SORT_MAX 16

/* Starts a walk over the routes whose pattern matches segs. */
void
routes_match_init(RouteMatch *m, const RouteTable *table, const PathSegments *segs)
{
	m->table = table;
	m->generation = table->generation;
	m->segs = segs;
	m->next = 0;
	route_trie_lookup(table->trie, segs, &m->candidates);
	/* The table is in matching order, so the order of the indexes is the order of the routes. */
	if (m->candidates.n <= INSERTION_SORT_MAX)
		sort_indexes(m->candidates.idx, m->candidates.n);
	else
		qsort(m->candidates.idx, m->candidates.n, sizeof(int), index_cmp);
}

/* The next route of the walk, with its captures; NULL at the end. */
Route *
routes_match_next(RouteMatch *m, int *ncaps, PathCapture *caps)
{
	while (m->next < m->candidates.n)
	{
		Route	   *r = &m->table->routes[m->candidates.idx[m->next++]];

		/* Confirms the trie's choice and takes the captures. */
		*ncaps = pattern_match(&r->pattern, m->segs, caps);
		if (*ncaps >= 0)
			return r;
	}
	return NULL;
}

/* Frees what the walk allocated. */
void
routes_match_end(RouteMatch *m)
{
	route_trie_candidates_free(&m->candidates);
	m->next = 0;
}

/* Rewinds m to walk the same routes again, if table has not been reloaded. */
bool
routes_match_rewind(RouteMatch *m, const RouteTable *table)
{
	if (m->table != table || m->generation != table->generation)
		return false;
	m->next = 0;
	return true;
}

/* The table as last loaded, or NULL if it is known to be stale. */
RouteTable *
routes_peek(void)
{
	return (routes_stale || !table.installed) ? NULL : &table;
}

/* The current table, reloaded if it changed; inside a transaction. */
RouteTable *
routes_current(void)
{
	Assert(IsTransactionState());
	if (routes_stale)
		load_routes();
	return &table;
}
