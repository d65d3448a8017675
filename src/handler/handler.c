/*
 * handler.c
 *		Prepares a route's handler once per worker and runs it per request.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
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

#include "core/pg_compat.h"
#include "handler/handler.h"
#include "handler/plan_clock.h"
#include "message/response.h"
#include "handler/simple_eval.h"
#include "handler/splice.h"
#include "handler/stream.h"

/* A route's handler as this process prepared it. */
typedef struct HandlerState
{
	SPIPlanPtr	plan;			/* prepared on first use */
	bool		read_only;		/* plan only reads: SELECT without locks or writes */
	struct CachedPlanSource *source;	/* the plan's one statement */
	bool		shareable;		/* read_only and calls no volatile function ... */
	int			shareable_generation;	/* ... as of this generation of source */
	bool		constant;		/* plan folds to one constant row */
	bool		event_stream;	/* result has a channels column (events.c) */
	bool		described;		/* event_stream is known, plan or not (describe_route) */
	CachedResponse *cached;		/* that row's response, once built */
	SimpleEvalCache simple;		/* whether the plan is one row of expressions */
	SplicedHandler spliced;
	Oid			role;			/* the role its plan was prepared and runs as */
	struct HandlerState *next_role; /* the route's states for other roles */
	struct HandlerState *next;	/* in all_states */
	struct HandlerState *next_cached;	/* in cached_states */
} HandlerState;

/*
 * Every state of the current route table, and the memory they and the
 * constant responses live in; both go when the table is replaced.
 */
static MemoryContext handler_cxt = NULL;
static HandlerState *all_states = NULL;

/* The states that hold a constant response, so that checking them costs
 * nothing for the other routes. */
static HandlerState *cached_states = NULL;

/*
 * Handlers run as their route's owner, or as the role a token chose for a
 * route with auth (serve/auth.c: one the owner is a member of), as a
 * security-restricted operation: SET ROLE, SET SESSION AUTHORIZATION and
 * temporary tables are refused, so a handler cannot step outside that
 * role's privileges.
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

/*
 * True at the first query, at any depth, that locks rows or writes: FOR
 * UPDATE/SHARE in a subquery, a CTE or a sublink marks only that subquery,
 * not the statement's top query.
 */
static bool
locks_or_writes_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query	   *q = (Query *) node;

		if (q->commandType != CMD_SELECT || q->hasModifyingCTE || q->rowMarks != NIL)
			return true;
		return query_tree_walker(q, locks_or_writes_walker, context, 0);
	}
	return expression_tree_walker(node, locks_or_writes_walker, context);
}

/* True if the statement only reads: a SELECT without locks or writes. */
static bool
source_reads_only(CachedPlanSource *source)
{
	ListCell   *lc;

	foreach(lc, source->query_list)
		if (locks_or_writes_walker(lfirst(lc), NULL))
			return false;
	return true;
}

/*
 * True if a handler's result columns declare an event stream: one of them
 * is named channels (docs/events.md).
 */
static bool
declares_event_stream(TupleDesc desc)
{
	if (desc == NULL)
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), "channels") == 0)
			return true;
	}
	return false;
}

/* Checks an event-stream handler's result columns when the route is saved. */
static void
check_event_stream_columns(TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		Oid			t = att->atttypid;
		bool		ok = true;
		const char *want = NULL;

		if (strcmp(name, "channels") == 0)
			ok = (t == TEXTARRAYOID || t == VARCHARARRAYOID), want = "text[]";
		else if (strcmp(name, "event") == 0)
			ok = (t == TEXTOID || t == VARCHAROID), want = "text";
		else if (strcmp(name, "status") == 0)
			ok = (t == INT2OID || t == INT4OID || t == INT8OID), want = "an integer";
		else if (strcmp(name, "headers") == 0)
			ok = (t == JSONBOID || t == JSONOID), want = "jsonb or json";
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("event-stream handler's %s column is of type %s, but it must be %s",
							name, format_type_be(t), want)));
	}
}

/* An event stream's handler runs twice per request (events.c): it must not write. */
static void
check_event_stream_reads_only(CachedPlanSource *source)
{
	if (declares_event_stream(source->resultDesc) && !source_reads_only(source))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an event-stream handler must only read"),
				 errdetail("It runs twice for each request: once to choose the channels, once after LISTEN to read the events to catch up on."),
				 errhint("Use a SELECT without FOR UPDATE or data-modifying WITH.")));
}

/* Prepares route's handler and notes what its plan is like. */
static void
prepare_route(const Route *route, HandlerState *st)
{
	SPIPlanPtr	plan = handler_prepare(route->handler, &st->spliced);

	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));

	/* A WebSocket's open handler runs once (events.c): it may write. */
	if (!route->websocket)
		check_event_stream_reads_only(source);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");

	/* Read-only handlers run on the request's snapshot, without taking another. */
	st->read_only = source_reads_only(source);
	st->plan = plan;
	st->source = source;
	st->shareable = false;
	st->shareable_generation = -1;
	simple_eval_init(&st->simple, handler_cxt);
	/* An event stream (events.c) is answered afresh every time, on its own. */
	st->event_stream = route->websocket || declares_event_stream(source->resultDesc);
	/* A route with auth answers per identity: never from memory. */
	st->constant = st->read_only && !st->event_stream && route->auth == ROUTE_AUTH_NONE &&
		plan_is_constant(plan);
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
		case F_RANDOM_:
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
note_shareable(HandlerState *st)
{
	CachedPlanSource *source = st->source;

	if (!source->is_valid || source->generation == st->shareable_generation)
		return;
	st->shareable = st->read_only && !st->event_stream &&
		!may_write_walker((Node *) source->query_list, NULL);
	st->shareable_generation = source->generation;
}

/* True if the request may share a read-only transaction for route's handler. */
bool
handler_can_share(const Route *route)
{
	const HandlerState *st = route->handler_state;

	return st != NULL && st->plan != NULL && st->shareable &&
		st->source->is_valid &&
		st->source->generation == st->shareable_generation;
}

/* The constant response of route's handler, or NULL. */
const CachedResponse *
handler_cached_response(const Route *route)
{
	return route->handler_state != NULL ? route->handler_state->cached : NULL;
}

/* Drops constant responses whose plan was invalidated. */
void
handler_forget_stale_responses(void)
{
	HandlerState **link = &cached_states;

	while (*link != NULL)
	{
		HandlerState *st = *link;

		if (!SPI_plan_is_valid(st->plan))
		{
			/* Its memory goes with the table's states; rebuilt on the next request. */
			*link = st->next_cached;
			st->cached = NULL;
			st->constant = false;
			simple_eval_forget(&st->simple);
			SPI_freeplan(st->plan);
			st->plan = NULL;
		}
		else
			link = &st->next_cached;
	}
}

/* Frees every route's state: the table they belong to is going. */
static void
forget_all_states(void)
{
	for (HandlerState *st = all_states; st != NULL; st = st->next)
		if (st->plan != NULL)
			SPI_freeplan(st->plan);
	all_states = NULL;
	cached_states = NULL;
	MemoryContextReset(handler_cxt);
}

/*
 * Sets up the handlers' memory, hears of table replacements and of the
 * EXECUTE checks compiling makes; once per process.
 */
void
handler_init(void)
{
	handler_cxt = AllocSetContextCreate(TopMemoryContext, "webgres handlers",
										ALLOCSET_DEFAULT_SIZES);
	routes_on_replace(forget_all_states);
	plan_clock_install();
	simple_eval_install();
}

/* route's state, allocated on first use. */
static HandlerState *
state_of(Route *route)
{
	if (route->handler_state == NULL)
	{
		HandlerState *st = MemoryContextAllocZero(handler_cxt, sizeof(HandlerState));

		st->role = route->owner;
		st->next = all_states;
		all_states = st;
		route->handler_state = st;
	}
	return route->handler_state;
}

/*
 * route's state for running as role, which has a plan of its own.  A plan
 * is checked for the privileges of the role it is made as: an SQL function
 * inlined, or a stable one folded, when it was planned for one role would
 * otherwise run unchecked for the next.  Postgres' plan cache re-plans for
 * another role only where row level security applies.  The roles a route
 * runs as are the few its owner is a member of.
 */
static HandlerState *
state_for_role(Route *route, Oid role)
{
	HandlerState *st = state_of(route);
	HandlerState *rs;

	if (role == route->owner)
		return st;
	for (rs = st->next_role; rs != NULL; rs = rs->next_role)
		if (rs->role == role)
			return rs;
	rs = MemoryContextAllocZero(handler_cxt, sizeof(HandlerState));
	rs->role = role;
	rs->next = all_states;
	all_states = rs;
	rs->next_role = st->next_role;
	st->next_role = rs;
	return rs;
}

/*
 * Makes ready the state to run route's handler as role, under sec_context
 * flags: the route's own state, which the pipeline asks what the handler
 * is like (read-only, an event stream, shareable), is prepared as the
 * owner; a state for another role is prepared as that role.  Leaves the
 * current user set to role.
 */
static HandlerState *
ready_state(Route *route, Oid role, int sec_context)
{
	HandlerState *st = state_of(route);

	if (role != route->owner && (st->plan == NULL || !st->source->is_valid))
	{
		SetUserIdAndSecContext(route->owner, sec_context);
		if (st->plan == NULL)
			prepare_route(route, st);
		else
		{
			/* Revalidated, since only the other roles' plans run. */
			CachedPlan *cplan = SPI_plan_get_cached_plan(st->plan);

			if (cplan != NULL)
				ReleaseCachedPlan(cplan, CurrentResourceOwner);
		}
		note_shareable(st);
	}
	SetUserIdAndSecContext(role, sec_context);
	st = state_for_role(route, role);
	if (st->plan == NULL)
		prepare_route(route, st);
	return st;
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

/* Error context callback: names the route whose handler failed. */
static void
route_error_context(void *arg)
{
	Route	   *route = (Route *) arg;

	errcontext("webgres route %s", route->label);
}

/*
 * Executes st's plan for rd, up to count rows (0: all); returns whether it
 * gave any, in SPI_tuptable.  A plan that may write marks the request.
 */
static bool
execute_plan(HandlerState *st, RequestData *rd, long count)
{
	int			rc = SPI_execute_plan_with_paramlist(st->plan, rd->params,
													 st->read_only && !rd->wrote, count);

	if (!st->read_only)
		rd->wrote = true;
	if (rc < 0)
		elog(ERROR, "could not run handler: %s", SPI_result_code_string(rc));
	return SPI_processed > 0 && SPI_tuptable != NULL;
}

/* What running a route's handler changed, to be put back by leave_route(). */
typedef struct RouteCall
{
	ErrorContextCallback errcallback;
	Oid			save_userid;
	int			save_sec_context;
	int			path_level;
} RouteCall;

/* The role route's handler runs as for rd (if any): the token's, else the owner. */
static Oid
role_for(const Route *route, const RequestData *rd)
{
	return rd != NULL && OidIsValid(rd->run_as) ? rd->run_as : route->owner;
}

/*
 * Takes on the request's role (role_for) and route's search_path, with the
 * route named in error context, and prepares its handler if it has not been.
 */
static HandlerState *
enter_route(Route *route, const RequestData *rd, RouteCall *call)
{
	call->errcallback.callback = route_error_context;
	call->errcallback.arg = route;
	call->errcallback.previous = error_context_stack;
	error_context_stack = &call->errcallback;

	GetUserIdAndSecContext(&call->save_userid, &call->save_sec_context);
	call->path_level = enter_search_path(route->search_path);
	return ready_state(route, role_for(route, rd), call->save_sec_context | HANDLER_SEC_CONTEXT);
}

/* Gives back the caller's user and search_path; the error context stays. */
static void
leave_route(RouteCall *call)
{
	SetUserIdAndSecContext(call->save_userid, call->save_sec_context);
	leave_search_path(call->path_level);
}

/* Runs route's handler: shapes its first row, or returns an event stream's rows. */
HandlerResult
handler_run(Route *route, RequestData *rd, SPITupleTable **rows, char **body, size_t *bodylen)
{
	RouteCall	call;
	bool		found;
	TupleDesc	desc = NULL;
	HeapTuple	tuple = NULL;
	HandlerState *st = enter_route(route, rd, &call);
	HandlerResult result = HANDLER_NO_ROWS;

	if (st->event_stream)
	{
		/* Every row: the first shapes the stream, all may be catch-up events. */
		found = execute_plan(st, rd, 0);
	}
	else if (st->read_only && !rd->wrote &&
			 simple_eval_run(st->plan, &st->simple, rd->params, &desc, &tuple))
		found = true;
	else
	{
		/* A SELECT needs only its first row; anything else must run to completion. */
		found = execute_plan(st, rd, st->spliced.is_select ? 1 : 0);
		if (found)
		{
			desc = SPI_tuptable->tupdesc;
			tuple = SPI_tuptable->vals[0];
		}
	}
	leave_route(&call);
	note_shareable(st);

	if (found && st->event_stream)
	{
		*rows = SPI_tuptable;
		result = HANDLER_EVENT_ROWS;
	}
	else if (found)
	{
		response_from_row(rd->req, desc, tuple, body, bodylen);
		if (st->constant && st->cached == NULL)
		{
			st->cached = response_capture(rd->req, *body, *bodylen, handler_cxt);
			st->next_cached = cached_states;
			cached_states = st;
		}
		result = HANDLER_ANSWERED;
	}

	error_context_stack = call.errcallback.previous;
	return result;
}

/* True if route's handler writes or answers an event stream: what a standby cannot serve. */
bool
handler_needs_primary(Route *route)
{
	RouteCall	call;
	HandlerState *st = enter_route(route, NULL, &call);
	bool		needs = !st->read_only || st->event_stream;

	leave_route(&call);
	error_context_stack = call.errcallback.previous;
	return needs;
}

/* Runs route's handler and returns all its rows, unshaped. */
SPITupleTable *
handler_run_rows(Route *route, RequestData *rd)
{
	RouteCall	call;
	HandlerState *st = enter_route(route, rd, &call);
	bool		found = execute_plan(st, rd, 0);

	leave_route(&call);
	error_context_stack = call.errcallback.previous;
	return found ? SPI_tuptable : NULL;
}

/* Walker: notes in *used the request parameters ($n) a query refers to. */
static bool
params_used_walker(Node *node, uint32 *used)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
	{
		Param	   *p = (Param *) node;

		if (p->paramkind == PARAM_EXTERN && p->paramid >= 1 && p->paramid <= REQ_NPARAMS)
			*used |= 1u << p->paramid;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, params_used_walker, used, 0);
	return expression_tree_walker(node, params_used_walker, used);
}

/*
 * The request's parameters for a cursor.  A portal copies its parameters,
 * which would build every one of them; this builds only those the handler
 * uses, so that the request fields it ignores cost nothing and cannot fail
 * it.  When the plan is to be rebuilt, all of them.
 */
static ParamListInfo
cursor_params(HandlerState *st, RequestData *rd)
{
	ParamListInfo params;
	uint32		used = 0;

	if (!st->source->is_valid)
		return rd->params;
	(void) params_used_walker((Node *) st->source->query_list, &used);
	params = makeParamList(REQ_NPARAMS);
	for (int i = 1; i <= REQ_NPARAMS; i++)
	{
		ParamExternData *prm = &params->params[i - 1];

		if (used & (1u << i))
		{
			ParamExternData workspace;

			*prm = *rd->params->paramFetch(rd->params, i, false, &workspace);
		}
		else
		{
			prm->value = (Datum) 0;
			prm->isnull = true;
			prm->pflags = PARAM_FLAG_CONST;
			prm->ptype = request_param_types[i - 1];
		}
	}
	return params;
}

/* Runs route's handler as a cursor and streams its rows to sink. */
void
handler_stream(Route *route, RequestData *rd, const StreamSink *sink, bool head_only,
			   TimestampTz stream_deadline, char **body, size_t *bodylen)
{
	StreamFormat format = stream_negotiate(rd->req);
	RouteCall	call;
	HandlerState *st;
	Portal		portal;

	if (format == STREAM_NOT_ACCEPTABLE)
	{
		response_simple(rd->req, 406, "Not Acceptable", body, bodylen);
		return;
	}
	if (sink == NULL)
	{
		ereport(LOG,
				(errmsg("webgres route %s streams, but there is no executor to run it",
						route->label),
				 errhint("Routes in mode stream run on executors: set webgres.executors above 0.")));
		response_simple(rd->req, 503, "Service Unavailable", body, bodylen);
		return;
	}

	st = enter_route(route, rd, &call);
	portal = SPI_cursor_open_with_paramlist(NULL, st->plan, cursor_params(st, rd),
											st->read_only && !rd->wrote);
	if (!st->read_only)
		rd->wrote = true;
	stream_run(rd->req, portal, format, head_only, route->stream_headers, sink,
			   stream_deadline);
	SPI_cursor_close(portal);

	leave_route(&call);
	error_context_stack = call.errcallback.previous;
}

/*
 * Longest wait, in milliseconds, for a lock on a table a handler reads
 * while it is described (describe_route): the worker's loop waits with it.
 */
#define DESCRIBE_LOCK_WAIT_MS "10"

/*
 * Notes whether route's handler answers with an event stream, without a
 * plan: parse analysis only (a statement is planned when it is first
 * used), as its owner under its search_path, and the statement dropped.
 * A route sent to executors must not be planned on the loop: planning may
 * be what makes it slow.  Parsing locks the tables the handler reads, and
 * the loop must not wait behind an ALTER TABLE: in a subtransaction, with
 * lock_timeout at DESCRIBE_LOCK_WAIT_MS, a lock not granted by then leaves
 * the handler undescribed (false); any other error is raised.
 */
static bool
describe_route(Route *route, HandlerState *st)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorContextCallback *oldcontext = error_context_stack;
	volatile bool described = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		RouteCall	call;
		SplicedHandler sh;
		SPIPlanPtr	plan;

		/* Restored with the subtransaction's settings when it ends. */
		(void) set_config_option("lock_timeout", DESCRIBE_LOCK_WAIT_MS, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		call.errcallback.callback = route_error_context;
		call.errcallback.arg = route;
		call.errcallback.previous = error_context_stack;
		error_context_stack = &call.errcallback;
		GetUserIdAndSecContext(&call.save_userid, &call.save_sec_context);
		call.path_level = enter_search_path(route->search_path);
		SetUserIdAndSecContext(route->owner, call.save_sec_context | HANDLER_SEC_CONTEXT);

		plan = handler_prepare(route->handler, &sh);
		st->event_stream = declares_event_stream(
			((CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan)))->resultDesc);
		SPI_freeplan(plan);
		st->described = described = true;

		leave_route(&call);
		error_context_stack = call.errcallback.previous;
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* The subtransaction's end gives back the user and the settings. */
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		error_context_stack = oldcontext;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		ereport(DEBUG1,
				(errmsg_internal("webgres route %s was not described: %s",
								 route->label, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return described;
}

/* True if this process knows whether route's handler answers with an event stream. */
bool
handler_knows_event_stream(const Route *route)
{
	const HandlerState *st = route->handler_state;

	return route->websocket || (st != NULL && (st->plan != NULL || st->described));
}

/*
 * True if route's handler answers with an event stream; finds out if it
 * must.  False if it does not, or could not be told (describe_route).
 */
bool
handler_answers_event_stream(Route *route)
{
	HandlerState *st = route->handler_state;

	/* A WebSocket is held open by the worker, like an event stream. */
	if (route->websocket)
		return true;
	if (st == NULL || (st->plan == NULL && !st->described))
	{
		st = state_of(route);
		if (!describe_route(route, st))
			return false;
	}
	return st->event_stream;
}

/* Prepares a handler as its owner would run it, to check it when a route is saved. */
void
handler_validate(const char *handler, Oid owner, bool streams, const char *search_path)
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
	/* A streamed handler's columns are the document's: any names will do. */
	if (declares_event_stream(source->resultDesc))
	{
		check_event_stream_columns(source->resultDesc);
		check_event_stream_reads_only(source);
	}
	else if (!streams)
		response_check_columns(source->resultDesc);
	SPI_freeplan(plan);

	SetUserIdAndSecContext(save_userid, save_sec_context);
	leave_search_path(path_level);
}

/*
 * Checks a WebSocket route's statements as its owner would run them, when
 * the route is saved: the open handler must return rows (any columns; a
 * channels column is checked as an event stream's), on_message is prepared
 * with its parameters ($1 bigint, $2 text, $3 bytea), on_close with its
 * own ($1 bigint, $2 integer).  NULL statements are not checked.
 */
void
handler_validate_websocket(const char *handler, const char *on_message, const char *on_close,
						   Oid owner, const char *search_path)
{
	int			path_level = enter_search_path(search_path);
	Oid			save_userid;
	int			save_sec_context;
	SplicedHandler sh;
	SPIPlanPtr	plan;
	CachedPlanSource *source;
	Oid			message_types[3] = {INT8OID, TEXTOID, BYTEAOID};
	Oid			close_types[2] = {INT8OID, INT4OID};

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | HANDLER_SEC_CONTEXT);

	plan = handler_prepare(handler, &sh);
	source = (CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan));
	if (source->resultDesc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a WebSocket route's handler returns no rows"),
				 errhint("It runs when the socket opens; add RETURNING to INSERT, UPDATE or DELETE.")));
	if (declares_event_stream(source->resultDesc))
		check_event_stream_columns(source->resultDesc);
	SPI_freeplan(plan);
	if (on_message != NULL && (plan = SPI_prepare(on_message, 3, message_types)) == NULL)
		elog(ERROR, "could not prepare on_message: %s", SPI_result_code_string(SPI_result));
	if (on_message != NULL)
		SPI_freeplan(plan);
	if (on_close != NULL && (plan = SPI_prepare(on_close, 2, close_types)) == NULL)
		elog(ERROR, "could not prepare on_close: %s", SPI_result_code_string(SPI_result));
	if (on_close != NULL)
		SPI_freeplan(plan);

	SetUserIdAndSecContext(save_userid, save_sec_context);
	leave_search_path(path_level);
}
