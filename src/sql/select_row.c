/*
 * select_row.c
 *		webgres.select_row(type, query, args...), select_rows and
 *		select_each: a read-only query run as a statement of its own, with
 *		its plan kept for the backend, and its first row (or all its rows,
 *		or the first row of each run, as an array) returned as a value of
 *		the given type.
 *
 * The usual way to run a query once per row of another, each run its own
 * statement (its own line in pg_stat_statements, its own executor), is a
 * PL/pgSQL function around one SELECT ... INTO.  Beyond the statement
 * itself that costs the PL/pgSQL call (the function's state set up, the row
 * moved into a record variable and out again), SPI's connection and its
 * tuple table: about a fifth of the instructions of a one-row index read.
 * Here the query is planned once per backend into Postgres' plan cache,
 * which plans it again after DDL on what it reads, a changed search_path
 * or another role (row-level security), as for SPI's kept plans; each call
 * runs the executor directly on the cached plan with the caller's snapshot,
 * as Postgres runs the queries of a STABLE SQL function (fmgr_sql), and
 * keeps the first row.  select_rows keeps every row, in an array: a set of
 * rows read by one statement that the caller's expression can hold without
 * a function scan (and the executor node around it) of its own.
 * select_each runs the query once for each element of an array, each run a
 * statement of its own, and returns each run's first row in an array: what
 * a subquery calling select_row for each element returns, without the
 * subquery's executor around the runs.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/params.h"
#include "parser/parser.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "core/pg_compat.h"

PG_FUNCTION_INFO_V1(webgres_select_row);
PG_FUNCTION_INFO_V1(webgres_select_rows);
PG_FUNCTION_INFO_V1(webgres_select_each);

/* The leading arguments before the query's parameters: type and query. */
#define SELECT_ROW_FIXED_ARGS	2

/*
 * The most queries whose plans a backend keeps.  A query past it is planned
 * for the call and dropped after it: text built per call cannot grow the
 * backend without bound.
 */
#define SELECT_ROW_MAX_PLANS	256

/* Plans select_row_plans holds before it first grows. */
#define SELECT_ROW_PLANS_INITIAL	32

/* Rows select_rows has room for before it first grows. */
#define SELECT_ROWS_INITIAL		16

/* What identifies a kept plan: the query's text and its parameters' types. */
typedef struct SelectRowKey
{
	const char *sql;			/* NUL-terminated where kept; a lookup's need not be */
	int			len;			/* the text's length in bytes */
	int			nargs;
	const Oid  *types;			/* nargs of them */
} SelectRowKey;

/* One kept plan (select_row_plans' entry); never removed. */
typedef struct SelectRowPlan
{
	SelectRowKey key;			/* its sql and types in TopMemoryContext */
	CachedPlanSource *source;	/* saved: lives as long as the backend */
} SelectRowPlan;

/* One call site's state for an execution of its expression (fn_extra). */
typedef struct SelectRowSite
{
	const char *fname;			/* webgres.select_row or select_rows */
	SelectRowPlan *plan;		/* the plan of the last call, or NULL */
	Oid			type;			/* the type asked for */
	TypeCacheEntry *row_type;	/* its type cache entry, if a row type */
	int16		typlen;			/* select_rows: the type's storage (0: not
								 * looked up yet; select_row needs none) */
	bool		typbyval;
	char		typalign;
} SelectRowSite;

/*
 * Receives the query's first row, as the value select_row returns, or all
 * of them (select_rows).
 */
typedef struct RowsReceiver
{
	DestReceiver pub;
	SelectRowSite *site;
	MemoryContext result_cxt;	/* where the values are made: the caller's,
								 * or the context of the array they go in */
	bool		all;			/* keep every row, not only the first */
	bool		whole_column;	/* one column of the type asked for */
	TupleConversionMap *map;	/* a row of another layout, else NULL */
	int			nrows;			/* rows kept */
	int			maxrows;		/* room in values and nulls */
	Datum	   *values;			/* each row as a value of the type */
	bool	   *nulls;
	Datum		first_value;	/* the room of select_row's one row */
	bool		first_null;
} RowsReceiver;

/* The plans kept by this backend, by query and parameter types. */
static HTAB *select_row_plans = NULL;

/* Hashes a key: its text and its parameters' types. */
static uint32
select_row_key_hash(const void *key, Size keysize)
{
	const SelectRowKey *k = (const SelectRowKey *) key;

	uint32		h = hash_bytes((const unsigned char *) k->sql, k->len);

	if (k->nargs > 0)
		h = hash_combine(h, hash_bytes((const unsigned char *) k->types,
									   k->nargs * sizeof(Oid)));
	return h;
}

/* Compares two keys, 0 when equal. */
static int
select_row_key_match(const void *key1, const void *key2, Size keysize)
{
	const SelectRowKey *a = (const SelectRowKey *) key1;
	const SelectRowKey *b = (const SelectRowKey *) key2;

	if (a->len != b->len || a->nargs != b->nargs ||
		(a->nargs > 0 && memcmp(a->types, b->types, a->nargs * sizeof(Oid)) != 0))
		return 1;
	return memcmp(a->sql, b->sql, a->len);
}

/*
 * The plan the backend keeps for this text and these parameters, or NULL:
 * looked up by the text's bytes as they are, without a copy.
 */
static SelectRowPlan *
found_plan(const text *sql, int nargs, const Oid *types)
{
	SelectRowKey key = {VARDATA_ANY(sql), (int) VARSIZE_ANY_EXHDR(sql), nargs, types};

	if (select_row_plans == NULL)
		return NULL;
	return hash_search(select_row_plans, &key, HASH_FIND, NULL);
}

/* Whether a kept plan is the one for this text and these parameters. */
static bool
plan_is_for(const SelectRowPlan *plan, const text *sql, int nargs, const Oid *types)
{
	return (Size) plan->key.len == VARSIZE_ANY_EXHDR(sql) &&
		plan->key.nargs == nargs &&
		(nargs == 0 || memcmp(plan->key.types, types, nargs * sizeof(Oid)) == 0) &&
		memcmp(plan->key.sql, VARDATA_ANY(sql), plan->key.len) == 0;
}

/* What an error names: the function and its query. */
typedef struct SelectRowErrorArg
{
	const char *fname;
	const char *query;
} SelectRowErrorArg;

/*
 * Error context: which query failed.  A syntax error's position is in the
 * query, not in the statement that called select_row, so it is moved there
 * (as SPI does for the queries it runs).
 */
static void
select_row_error_context(void *arg)
{
	const SelectRowErrorArg *e = (const SelectRowErrorArg *) arg;
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		internalerrposition(position);
		internalerrquery(e->query);
	}
	else
		errcontext("query of %s: %s", e->fname, e->query);
}

/*
 * Parses, analyses and prepares sql with parameters of types, as
 * SPI_prepare would: one statement, and a plain SELECT (the function is
 * STABLE, so what it runs may not write, lock rows or change the schema).
 * The plan source is unsaved, in the current memory context.
 */
static CachedPlanSource *
prepare_select(const char *fname, const char *sql, int nargs, const Oid *types)
{
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	RawStmt    *stmt;
	CachedPlanSource *source;
	List	   *queries;
	Query	   *query;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s runs one statement, not %d",
						fname, list_length(raw)),
				 errhint("Call it once for each statement.")));
	stmt = linitial_node(RawStmt, raw);
	source = CreateCachedPlan(stmt, sql, CreateCommandTag(stmt->stmt));
	queries = pg_analyze_and_rewrite_fixedparams(stmt, sql, types, nargs, NULL);
	query = list_length(queries) == 1 ? linitial_node(Query, queries) : NULL;
	if (query == NULL || query->commandType != CMD_SELECT ||
		query->utilityStmt != NULL || query->rowMarks != NIL ||
		query->hasModifyingCTE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s runs only a SELECT that writes nothing and locks no rows",
						fname),
				 errhint("Run statements that write from a handler or a function of their own.")));
	CompleteCachedPlan(source, queries, NULL, (Oid *) types, nargs,
					   NULL, NULL, 0, false);
	return source;
}

/*
 * The kept plan of sql for parameters of types, prepared as the current
 * user on first use; NULL when the backend keeps SELECT_ROW_MAX_PLANS
 * already (the caller then prepares one for the call).
 */
static SelectRowPlan *
kept_plan(const char *fname, const char *sql, int nargs, const Oid *types)
{
	SelectRowKey key = {sql, (int) strlen(sql), nargs, types};
	SelectRowPlan *plan;
	CachedPlanSource *source;
	MemoryContext old;
	bool		found;

	if (select_row_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(SelectRowKey);
		ctl.entrysize = sizeof(SelectRowPlan);
		ctl.hash = select_row_key_hash;
		ctl.match = select_row_key_match;
		ctl.hcxt = TopMemoryContext;
		select_row_plans = hash_create("webgres.select_row plans",
									   SELECT_ROW_PLANS_INITIAL, &ctl,
									   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE |
									   HASH_CONTEXT);
	}
	plan = hash_search(select_row_plans, &key, HASH_FIND, NULL);
	if (plan != NULL)
		return plan;
	if (hash_get_num_entries(select_row_plans) >= SELECT_ROW_MAX_PLANS)
		return NULL;

	/* Entered only once prepared, so an error leaves no half entry. */
	source = prepare_select(fname, sql, nargs, types);
	SaveCachedPlan(source);
	old = MemoryContextSwitchTo(TopMemoryContext);
	key.sql = pstrdup(sql);
	key.types = nargs > 0 ? memcpy(palloc(nargs * sizeof(Oid)), types,
								   nargs * sizeof(Oid)) : NULL;
	MemoryContextSwitchTo(old);
	plan = hash_search(select_row_plans, &key, HASH_ENTER, &found);
	plan->key = key;
	plan->source = source;
	return plan;
}

/* The row type's descriptor, as the type cache has it now. */
static TupleDesc
row_type_desc(SelectRowSite *site)
{
	if (site->row_type->tupDesc == NULL)
		site->row_type = lookup_type_cache(site->type, TYPECACHE_TUPDESC);
	return site->row_type->tupDesc;
}

/* Whether a result of layout desc is a row of target's columns as they are. */
static bool
same_columns(TupleDesc desc, TupleDesc target)
{
	if (desc->natts != target->natts)
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(target, i);

		if (a->attisdropped || a->atttypid != TupleDescAttr(desc, i)->atttypid)
			return false;
	}
	return true;
}

/*
 * Executor start: checks the query's columns against the type asked for,
 * before any row, so a mismatch is an error whether rows come or not.
 */
static void
rows_startup(DestReceiver *self, int operation, TupleDesc desc)
{
	RowsReceiver *r = (RowsReceiver *) self;
	SelectRowSite *site = r->site;
	TupleDesc	target;

	r->whole_column = desc->natts == 1 &&
		TupleDescAttr(desc, 0)->atttypid == site->type;
	r->map = NULL;
	if (r->whole_column)
		return;
	if (site->row_type == NULL && desc->natts == 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query of %s returns %s, not %s", site->fname,
						format_type_be(TupleDescAttr(desc, 0)->atttypid),
						format_type_be(site->type)),
				 errhint("Cast the column to the type the first argument names.")));
	if (site->row_type == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the query of %s returns %d columns, not one of type %s",
						site->fname, desc->natts, format_type_be(site->type)),
				 errhint("Select one column, or name a row type as the first argument.")));
	target = row_type_desc(site);
	if (!same_columns(desc, target))
	{
		MemoryContext old = MemoryContextSwitchTo(r->result_cxt);

		/* An error here when the columns do not match in number or type. */
		r->map = convert_tuples_by_position(desc, target,
											r->all ?
											gettext_noop("the query of webgres.select_rows does not return the row type asked for") :
											strcmp(site->fname, "webgres.select_each") == 0 ?
											gettext_noop("the query of webgres.select_each does not return the row type asked for") :
											gettext_noop("the query of webgres.select_row does not return the row type asked for"));
		MemoryContextSwitchTo(old);
	}
}

/*
 * A table's row as the value of the type asked for, copied as it is stored,
 * or 0 when it must be formed from its columns.  A query that reads a
 * table's columns in order hands over the scan's own tuple: its bytes are
 * already the row value's, without taking it apart and forming it again.
 * A row stored before a column was added has fewer attributes than the
 * type; it is formed from its columns, so that every row value holds every
 * attribute of its type, as the whole-row values Postgres forms do.
 */
static Datum
stored_row_value(RowsReceiver *r, TupleTableSlot *slot)
{
	TupleDesc	target = row_type_desc(r->site);
	HeapTuple	tuple;
	bool		should_free;
	Datum		value = (Datum) 0;

	if (!TTS_IS_BUFFERTUPLE(slot) && !TTS_IS_HEAPTUPLE(slot))
		return (Datum) 0;
	tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
	/* Flattens any value kept out of line, as a row value must be. */
	if (HeapTupleHeaderGetNatts(tuple->t_data) == target->natts)
		value = heap_copy_tuple_as_datum(tuple, target);
	if (should_free)
		heap_freetuple(tuple);
	return value;
}

/* The row in slot as a value of the type asked for, made in the caller's context. */
static Datum
row_value(RowsReceiver *r, TupleTableSlot *slot, bool *isnull)
{
	HeapTuple	row;
	Datum		stored;

	if (r->whole_column)
	{
		Form_pg_attribute a = TupleDescAttr(slot->tts_tupleDescriptor, 0);

		slot_getallattrs(slot);
		*isnull = slot->tts_isnull[0];
		if (*isnull)
			return (Datum) 0;
		return datumCopy(slot->tts_values[0], a->attbyval, a->attlen);
	}
	*isnull = false;
	if (r->map == NULL && (stored = stored_row_value(r, slot)) != (Datum) 0)
		return stored;
	slot_getallattrs(slot);
	if (r->map == NULL)
		row = heap_form_tuple(row_type_desc(r->site), slot->tts_values,
							  slot->tts_isnull);
	else
		row = execute_attr_map_tuple(heap_form_tuple(slot->tts_tupleDescriptor,
													 slot->tts_values,
													 slot->tts_isnull),
									 r->map);
	return HeapTupleGetDatum(row);
}

/* Keeps the first row (select_row) or every row (select_rows). */
static bool
rows_receive(TupleTableSlot *slot, DestReceiver *self)
{
	RowsReceiver *r = (RowsReceiver *) self;
	MemoryContext old;

	if (r->nrows > 0 && !r->all)
		return true;
	old = MemoryContextSwitchTo(r->result_cxt);
	if (r->nrows == r->maxrows)
	{
		r->maxrows = r->maxrows == 0 ? SELECT_ROWS_INITIAL : r->maxrows * 2;
		r->values = r->values == NULL ? palloc(r->maxrows * sizeof(Datum)) :
			repalloc(r->values, r->maxrows * sizeof(Datum));
		r->nulls = r->nulls == NULL ? palloc(r->maxrows * sizeof(bool)) :
			repalloc(r->nulls, r->maxrows * sizeof(bool));
	}
	r->values[r->nrows] = row_value(r, slot, &r->nulls[r->nrows]);
	r->nrows++;
	MemoryContextSwitchTo(old);

	/*
	 * Go on: the executor counts the row (es_processed, which
	 * pg_stat_statements reports as the statement's rows) only when the
	 * receiver takes it, and select_row's run stops by itself after the one
	 * row asked for.
	 */
	return true;
}

/* Executor end: nothing to release. */
static void
rows_shutdown(DestReceiver *self)
{
}

/* The receiver lives on the caller's stack. */
static void
rows_destroy(DestReceiver *self)
{
}

/*
 * Runs a plan source's SELECT with params; the receiver keeps its first row,
 * or all of them.
 */
static void
run_select(CachedPlanSource *source, bool saved, ParamListInfo params,
		   RowsReceiver *receiver)
{
	ResourceOwner owner = saved ? CurrentResourceOwner : NULL;
	CachedPlan *cplan = GetCachedPlan(source, params, owner, NULL);
	PlannedStmt *stmt = linitial_node(PlannedStmt, cplan->stmt_list);
	QueryDesc  *qd;

	qd = CreateQueryDesc(stmt, source->query_string, GetActiveSnapshot(),
						 InvalidSnapshot, &receiver->pub, params, NULL, 0);
	ExecutorStart(qd, 0);
	ExecutorRun(qd, ForwardScanDirection, receiver->all ? 0 : 1);
	ExecutorFinish(qd);
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	ReleaseCachedPlan(cplan, owner);
}

/* What one call runs: a query, and its parameters for each run of it. */
typedef struct SelectCall
{
	text	   *sql;
	int			nargs;			/* parameters a run */
	Oid		   *types;			/* their types */
	int			nruns;			/* runs: 1, or select_each's elements */
	Datum	   *args;			/* nruns * nargs values, run after run */
	bool	   *nulls;
} SelectCall;

/* The call site's state, made on its first call. */
static SelectRowSite *
select_site(FunctionCallInfo fcinfo, const char *fname)
{
	SelectRowSite *site = (SelectRowSite *) fcinfo->flinfo->fn_extra;
	Oid			type;
	TypeCacheEntry *entry;

	if (site != NULL)
		return site;
	type = get_fn_expr_argtype(fcinfo->flinfo, 0);
	if (!OidIsValid(type) || type == RECORDOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s needs the type of its result named", fname),
				 errhint("Pass a typed null as the first argument, as in NULL::my_table.")));
	site = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(SelectRowSite));
	site->fname = fname;
	site->type = type;
	/*
	 * A domain over a row type is asked for as one column of it.  The type
	 * cache says what kind of type it is without a catalog lookup.
	 */
	entry = lookup_type_cache(type, TYPECACHE_TUPDESC);
	if (entry->typtype == TYPTYPE_COMPOSITE)
		site->row_type = entry;
	fcinfo->flinfo->fn_extra = site;
	return site;
}

/* The query argument, which must not be NULL. */
static text *
query_arg(FunctionCallInfo fcinfo, const char *fname)
{
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the query of %s must not be null", fname)));
	return PG_GETARG_TEXT_PP(1);
}

/* A call of select_row or select_rows: one run, its VARIADIC args bound. */
static void
variadic_call(FunctionCallInfo fcinfo, const char *fname, SelectCall *call)
{
	int			nargs;

	call->sql = query_arg(fcinfo, fname);
	call->nruns = 1;
	if (PG_NARGS() > SELECT_ROW_FIXED_ARGS)
		nargs = extract_variadic_args(fcinfo, SELECT_ROW_FIXED_ARGS, true,
									  &call->args, &call->types, &call->nulls);
	else
		nargs = 0;				/* the overload without parameters */
	call->nargs = nargs;
	if (nargs <= 0)				/* none, or VARIADIC NULL */
	{
		call->nargs = 0;
		call->args = NULL;
		call->types = NULL;
		call->nulls = NULL;
	}
}

/*
 * Runs a call's query (select_row, select_rows or select_each): finds or
 * prepares its plan, and runs it once for each set of parameters with the
 * caller's snapshot, each run a statement of its own.  The receiver keeps
 * the first row, or all of them; with one_per_run, values[r] and nulls[r]
 * get run r's first row (NULL when it returned none).
 */
static void
select_query(FunctionCallInfo fcinfo, const char *fname, SelectCall *call,
			 RowsReceiver *receiver, bool one_per_run)
{
	SelectRowSite *site = select_site(fcinfo, fname);
	int			nargs = call->nargs;
	SelectRowPlan *plan;
	CachedPlanSource *source;
	ParamListInfo params;
	SelectRowErrorArg error_arg = {fname, NULL};
	ErrorContextCallback errcallback;
	Datum	   *values = receiver->values;
	bool	   *nulls = receiver->nulls;
	bool		pushed = false;

	errcallback.callback = select_row_error_context;
	errcallback.arg = &error_arg;
	errcallback.previous = error_context_stack;

	/* The call site's plan of the last call, unless the query changed. */
	plan = site->plan;
	if (plan == NULL || !plan_is_for(plan, call->sql, nargs, call->types))
		plan = site->plan = found_plan(call->sql, nargs, call->types);
	if (plan == NULL)
	{
		char	   *query = text_to_cstring(call->sql);

		error_arg.query = query;
		error_context_stack = &errcallback;
		plan = kept_plan(fname, query, nargs, call->types);
		site->plan = plan;
		source = plan != NULL ? plan->source :
			prepare_select(fname, query, nargs, call->types);
		error_context_stack = errcallback.previous;
	}
	else
		source = plan->source;

	params = makeParamList(nargs);
	for (int i = 0; i < nargs; i++)
	{
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = call->types[i];
	}

	receiver->pub.receiveSlot = rows_receive;
	receiver->pub.rStartup = rows_startup;
	receiver->pub.rShutdown = rows_shutdown;
	receiver->pub.rDestroy = rows_destroy;
	receiver->pub.mydest = DestNone;
	receiver->site = site;
	if (receiver->result_cxt == NULL)
		receiver->result_cxt = CurrentMemoryContext;

	error_arg.query = source->query_string;
	error_context_stack = &errcallback;
	if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	for (int r = 0; r < call->nruns; r++)
	{
		for (int i = 0; i < nargs; i++)
		{
			params->params[i].value = call->args[r * nargs + i];
			params->params[i].isnull = call->nulls[r * nargs + i];
		}
		if (one_per_run)
		{
			/* Room for this run's one row. */
			receiver->nrows = 0;
			receiver->maxrows = 1;
			receiver->values = &values[r];
			receiver->nulls = &nulls[r];
		}
		run_select(source, plan != NULL, params, receiver);
		if (one_per_run && receiver->nrows == 0)
			nulls[r] = true;
	}
	if (pushed)
		PopActiveSnapshot();
	error_context_stack = errcallback.previous;
	if (plan == NULL)
		DropCachedPlan(source);
}

/* The storage of the type asked for, which an array of it needs. */
static SelectRowSite *
site_with_storage(FunctionCallInfo fcinfo)
{
	SelectRowSite *site = (SelectRowSite *) fcinfo->flinfo->fn_extra;

	if (site->typlen == 0)
		get_typlenbyvalalign(site->type, &site->typlen, &site->typbyval,
							 &site->typalign);
	return site;
}

/*
 * An empty expanded array of the type asked for, made in the caller's
 * context before the query runs, so that each row's value can be made in
 * the array's own context.  select_rows returns its rows as an expanded
 * array (utils/array.h), as array_append returns its result:
 * the caller's array_append or || adds to it in place, and html_rows_of or
 * json_rows_of reads its elements as they are, where a flat array would be
 * copied once to build it and once more to expand it again.  Postgres
 * flattens it wherever a value must be stored.
 */
static ExpandedArrayHeader *
rows_array_new(FunctionCallInfo fcinfo, const char *fname)
{
	SelectRowSite *site;
	ArrayMetaState meta;

	select_site(fcinfo, fname);
	site = site_with_storage(fcinfo);
	meta.element_type = site->type;
	meta.typlen = site->typlen;
	meta.typbyval = site->typbyval;
	meta.typalign = site->typalign;
	return construct_empty_expanded_array(site->type, CurrentMemoryContext,
										  &meta);
}

/*
 * The expanded array of values[0..n), one dimension from 1: values and
 * nulls were made in the array's context with room for room elements,
 * which it takes over (array_set_element grows them in place).
 */
static Datum
rows_array_result(ExpandedArrayHeader *eah, Datum *values, bool *nulls,
				  int n, int room)
{
	bool		any_null = false;

	if (n == 0)
		return EOHPGetRWDatum(&eah->hdr);
	for (int i = 0; i < n; i++)
		any_null |= nulls[i];
	eah->ndims = 1;
	eah->dims = MemoryContextAlloc(eah->hdr.eoh_context, 2 * sizeof(int));
	eah->lbound = eah->dims + 1;
	eah->dims[0] = n;
	eah->lbound[0] = 1;
	eah->dvalues = values;
	/* as construct_md_array, no null bitmap unless an element is NULL */
	eah->dnulls = any_null ? nulls : NULL;
	eah->dvalueslen = room;
	eah->nelems = n;
	eah->flat_size = 0;
	/* the empty flat value it was made from no longer describes it */
	eah->fvalue = NULL;
	eah->fstartptr = NULL;
	eah->fendptr = NULL;
	return EOHPGetRWDatum(&eah->hdr);
}

/*
 * webgres.select_row(type anyelement, query text, VARIADIC args "any")
 * returns anyelement: query's first row as a value of type's type (NULL
 * when it returns none).  The query may return one column of that type, or,
 * for a row type, the row's columns in order.  Its parameters $1, $2, ...
 * are args, of their own types (an untyped literal is text).
 */
Datum
webgres_select_row(PG_FUNCTION_ARGS)
{
	RowsReceiver receiver;
	SelectCall	call;

	memset(&receiver, 0, sizeof(receiver));
	/* Room for the one row, on the stack. */
	receiver.maxrows = 1;
	receiver.values = &receiver.first_value;
	receiver.nulls = &receiver.first_null;
	variadic_call(fcinfo, "webgres.select_row", &call);
	select_query(fcinfo, "webgres.select_row", &call, &receiver, false);

	if (receiver.nrows == 0 || receiver.first_null)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(receiver.first_value);
}

/*
 * webgres.select_rows(type anyelement, query text, VARIADIC args "any")
 * returns anyarray: every row of query, in the order it returns them, as an
 * array of type's type (empty when it returns none); each row as
 * select_row makes its one.
 */
Datum
webgres_select_rows(PG_FUNCTION_ARGS)
{
	RowsReceiver receiver;
	SelectCall	call;
	ExpandedArrayHeader *eah;

	memset(&receiver, 0, sizeof(receiver));
	receiver.all = true;
	variadic_call(fcinfo, "webgres.select_rows", &call);
	eah = rows_array_new(fcinfo, "webgres.select_rows");
	receiver.result_cxt = eah->hdr.eoh_context;
	select_query(fcinfo, "webgres.select_rows", &call, &receiver, false);

	PG_RETURN_DATUM(rows_array_result(eah, receiver.values, receiver.nulls,
									  receiver.nrows, receiver.maxrows));
}

/*
 * webgres.select_each(type anyelement, query text, args anycompatiblearray)
 * returns anyarray: query run once for each element of args, that element
 * as its $1, each run a statement of its own; element i of the result is
 * run i's first row as select_row makes it (NULL when it returned none).
 * NULL for a NULL args, empty for an empty one.
 */
Datum
webgres_select_each(PG_FUNCTION_ARGS)
{
	const char *fname = "webgres.select_each";
	RowsReceiver receiver;
	SelectCall	call;
	SelectRowSite *site;
	ArrayType  *args;
	Oid			elem_type;
	int16		elem_len;
	bool		elem_byval;
	char		elem_align;
	Datum	   *rows;
	bool	   *row_nulls;
	int			dims[1];
	int			lbs[1] = {1};

	call.sql = query_arg(fcinfo, fname);
	if (PG_ARGISNULL(2))
		PG_RETURN_NULL();
	args = PG_GETARG_ARRAYTYPE_P(2);
	if (ARR_NDIM(args) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("the arguments of %s must be a one-dimensional array, not %d-dimensional",
						fname, ARR_NDIM(args))));
	elem_type = ARR_ELEMTYPE(args);
	get_typlenbyvalalign(elem_type, &elem_len, &elem_byval, &elem_align);
	deconstruct_array(args, elem_type, elem_len, elem_byval, elem_align,
					  &call.args, &call.nulls, &call.nruns);
	call.nargs = 1;
	call.types = &elem_type;

	rows = palloc(Max(call.nruns, 1) * sizeof(Datum));
	row_nulls = palloc(Max(call.nruns, 1) * sizeof(bool));
	memset(&receiver, 0, sizeof(receiver));
	receiver.values = rows;
	receiver.nulls = row_nulls;
	select_query(fcinfo, fname, &call, &receiver, true);
	site = site_with_storage(fcinfo);

	/*
	 * A flat array: its caller reads it (json_rows_of), and for the one or
	 * few rows of a request the expanded array's own context costs more
	 * than the copy it saves.
	 */
	if (call.nruns == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(site->type));
	dims[0] = call.nruns;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(rows, row_nulls, 1, dims, lbs,
											 site->type, site->typlen,
											 site->typbyval, site->typalign));
}
