/*
 * handler.c
 *		Prepares a route's handler once per worker and runs it per request.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "utils/resowner.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "handler.h"
#include "response.h"
#include "simple_eval.h"

/*
 * Handlers run as their route's owner, as a security-restricted operation:
 * SET ROLE, SET SESSION AUTHORIZATION and temporary tables are refused, so
 * a handler cannot step outside its owner's privileges.
 */
#define HANDLER_SEC_CONTEXT (SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION)

/*
 * True if the generic plan is a Result node of constants: the planner
 * folded the whole handler, so every execution yields the same row.
 */
static bool
plan_is_constant(SPIPlanPtr plan)
{
	CachedPlan *cplan = SPI_plan_get_cached_plan(plan);
	bool		constant = false;

	if (cplan != NULL && list_length(cplan->stmt_list) == 1)
	{
		PlannedStmt *stmt = linitial_node(PlannedStmt, cplan->stmt_list);
		Plan	   *top = stmt->planTree;

		if (stmt->commandType == CMD_SELECT && !stmt->hasModifyingCTE &&
			stmt->subplans == NIL && stmt->rowMarks == NIL &&
			IsA(top, Result) && top->lefttree == NULL && top->qual == NIL &&
			top->initPlan == NIL && ((Result *) top)->resconstantqual == NULL)
		{
			ListCell   *lc;

			constant = true;
			foreach(lc, top->targetlist)
				if (!IsA(lfirst_node(TargetEntry, lc)->expr, Const))
					constant = false;
		}
	}
	if (cplan != NULL)
		ReleaseCachedPlan(cplan, CurrentResourceOwner);
	return constant;
}

static void
prepare_route(Route *route)
{
	SPIPlanPtr	plan = handler_prepare(route->handler, &route->spliced);

	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));
	ListCell   *lc;

	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");

	/* Read-only handlers run on the request's snapshot, without taking another. */
	route->read_only = true;
	foreach(lc, source->query_list)
	{
		Query	   *q = lfirst_node(Query, lc);

		if (q->commandType != CMD_SELECT || q->hasModifyingCTE || q->rowMarks != NIL)
			route->read_only = false;
	}
	route->plan = plan;
	route->source = source;
	route->shareable = false;
	route->shareable_generation = -1;
	memset(&route->simple, 0, sizeof(route->simple));
	route->constant = route->read_only && plan_is_constant(plan);
}

/* webgres.random_distinct_ints, which only draws numbers. */
static bool
is_own_sampler(Oid func_id)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(func_id));
	bool		result = false;

	if (HeapTupleIsValid(tuple))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tuple);

		if (proc->prolang == ClanguageId &&
			strcmp(NameStr(proc->proname), "random_distinct_ints") == 0 &&
			proc->pronamespace == get_namespace_oid("webgres", true))
		{
			bool		isnull;
			Datum		src = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);

			result = !isnull &&
				strcmp(TextDatumGetCString(src), "webgres_random_distinct_ints") == 0;
		}
		ReleaseSysCache(tuple);
	}
	return result;
}

/*
 * True for a volatile function that may touch the database.  The exceptions
 * are volatile only because each call gives a new value (random numbers,
 * the clock): they read and write nothing, so sharing a transaction changes
 * nothing for them.
 */
static bool
volatile_function_may_write(Oid func_id, void *context)
{
	if (func_volatile(func_id) != PROVOLATILE_VOLATILE)
		return false;
	switch (func_id)
	{
		case F_RANDOM:
		case F_GEN_RANDOM_UUID:
		case F_CLOCK_TIMESTAMP:
		case F_TIMEOFDAY:
			return false;
		default:
			return !is_own_sampler(func_id);
	}
}

/* contain_volatile_functions(), less the exceptions above. */
static bool
may_write_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, volatile_function_may_write, context) ||
		IsA(node, NextValueExpr))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, may_write_walker, context, 0);
	return expression_tree_walker(node, may_write_walker, context);
}

/*
 * Notes whether the handler, as currently planned, can share a read-only
 * transaction with other requests: it must not write, and must call nothing
 * volatile that might (a stable or immutable function cannot write).  Looked
 * at again whenever the plan cache builds a new plan, which it does after
 * anything the handler depends on (a function's volatility included)
 * changes.
 */
static void
note_shareable(Route *route)
{
	CachedPlanSource *source = route->source;

	if (!source->is_valid || source->generation == route->shareable_generation)
		return;
	route->shareable = route->read_only &&
		!may_write_walker((Node *) source->query_list, NULL);
	route->shareable_generation = source->generation;
}

bool
handler_can_share(const Route *route)
{
	return route->plan != NULL && route->shareable &&
		route->source->is_valid &&
		route->source->generation == route->shareable_generation;
}

/*
 * Puts search_path in effect, as a function's SET clause does, unless it
 * already is (the common case, which then costs a string comparison).
 * Returns the GUC nest level for leave_search_path, or -1.  The plan cache
 * re-plans a statement whenever the search_path differs from the one it was
 * planned with, so the handler must both plan and run under it.
 */
static int
enter_search_path(const char *search_path)
{
	int			level;

	if (search_path == NULL || strcmp(search_path, namespace_search_path) == 0)
		return -1;
	level = NewGUCNestLevel();
	(void) set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/* Restores the search_path enter_search_path replaced. */
static void
leave_search_path(int level)
{
	if (level >= 0)
		AtEOXact_GUC(true, level);
}

static void
route_error_context(void *arg)
{
	Route	   *route = (Route *) arg;

	errcontext("webgres route %s", route->label);
}

bool
handler_run(Route *route, RequestData *rd, char **body, size_t *bodylen)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;
	ErrorContextCallback errcallback;
	bool		found;
	TupleDesc	desc = NULL;
	HeapTuple	tuple = NULL;
	int			path_level;

	errcallback.callback = route_error_context;
	errcallback.arg = route;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	path_level = enter_search_path(route->search_path);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(route->owner, save_sec_context | HANDLER_SEC_CONTEXT);

	if (route->plan == NULL)
		prepare_route(route);

	if (route->read_only && !rd->wrote &&
		simple_eval_run(route->plan, &route->simple, rd->params, &desc, &tuple))
		found = true;
	else
	{
		/* A SELECT needs only its first row; anything else must run to completion. */
		rc = SPI_execute_plan_with_paramlist(route->plan, rd->params,
											 route->read_only && !rd->wrote,
											 route->spliced.is_select ? 1 : 0);
		if (!route->read_only)
			rd->wrote = true;
		if (rc < 0)
			elog(ERROR, "could not run handler: %s", SPI_result_code_string(rc));

		found = (SPI_processed > 0 && SPI_tuptable != NULL);
		if (found)
		{
			desc = SPI_tuptable->tupdesc;
			tuple = SPI_tuptable->vals[0];
		}
	}
	SetUserIdAndSecContext(save_userid, save_sec_context);
	leave_search_path(path_level);
	note_shareable(route);

	if (found)
	{
		response_from_row(rd->req, desc, tuple, body, bodylen);
		if (route->constant && route->cached == NULL)
			route->cached = response_capture(rd->req, *body, *bodylen,
											 GetMemoryChunkContext(route->handler));
	}

	error_context_stack = errcallback.previous;
	return found;
}

void
handler_validate(const char *handler, Oid owner, const char *search_path)
{
	int			path_level = enter_search_path(search_path);
	Oid			save_userid;
	int			save_sec_context;
	SplicedHandler sh;
	SPIPlanPtr	plan;
	List	   *sources;
	CachedPlanSource *source;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | HANDLER_SEC_CONTEXT);

	plan = handler_prepare(handler, &sh);
	sources = SPI_plan_get_plan_sources(plan);
	source = (CachedPlanSource *) linitial(sources);
	if (source->resultDesc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("handler returns no rows"),
				 errhint("Add RETURNING to INSERT, UPDATE or DELETE so that it can shape a response.")));
	response_check_columns(source->resultDesc);
	SPI_freeplan(plan);

	SetUserIdAndSecContext(save_userid, save_sec_context);
	leave_search_path(path_level);
}
