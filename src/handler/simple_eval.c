/*
 * simple_eval.c
 *		Runs a handler that is a single row of expressions without the
 *		executor.
 *
 * A handler such as SELECT json_build_object('message', $1) AS body plans
 * to a Result node over no relation.  Starting and ending the executor for
 * it costs more than evaluating its expressions, so, like PL/pgSQL's simple
 * expressions, such a plan's target list is compiled and evaluated directly.
 * The result is the same row the executor would produce: the plan is still
 * taken from (and revalidated by) the plan cache on every request, and it
 * runs on the request's snapshot, inside its transaction.  What it skips is
 * the executor hooks, so pg_stat_statements does not count these handlers.
 *
 * The compiled target list is kept as long as the plan is, across
 * transactions, when it is made only of expressions whose compiling reads
 * nothing that can change while the plan stays valid (keepable_walker):
 * functions and operators (a function that is not built in and is
 * replaced invalidates the plans that call it; a built-in one is never
 * looked up in the catalog), types' I/O functions and storage (fixed for a
 * type's life), and rows of a named type, whose descriptor is baked in and
 * so is compared with the type's at the start of each transaction.  Any
 * other expression, such as a domain's checks, which are baked in and do
 * not invalidate a plan when they change, is compiled anew in each
 * transaction, as PL/pgSQL compiles its simple expressions.
 *
 * Compiling also checks the current user's EXECUTE privilege on each
 * function, which Postgres checks again on every execution: a REVOKE, or a
 * role's membership taken away, changes no plan.  So the functions
 * compiling checked are noted, through the hook Postgres calls after each
 * such check (OAT_FUNCTION_EXECUTE), and checked again, with that hook
 * called again, once in each transaction: as often as when the list was
 * compiled anew for each.  A run that ends in an error may leave a
 * function's or a step's cached state half made, so the list is compiled
 * anew after one.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"
#include "utils/typcache.h"

#include "core/pg_compat.h"
#include "handler/simple_eval.h"

/*
 * The most a compiled list's memory may grow to (functions' call-site
 * caches, a hashed IN list) before it is compiled anew: a function that
 * allocates in its call site on every call cannot grow the backend.
 */
#define SIMPLE_EVAL_KEPT_MAX	(1024 * 1024)

/* One result column: a constant's value, or its compiled expression. */
typedef struct SimpleColumn
{
	ExprState  *state;			/* NULL for a constant */
	Const	   *constant;
} SimpleColumn;

/* A named row type a kept list builds rows of, and its descriptor's identity then. */
typedef struct KeptRowType
{
	Oid			type;
	uint64		desc_id;		/* the type cache's tupDesc_identifier */
} KeptRowType;

/* What keepable_walker learns of a list: whether it may be kept, and its row types. */
typedef struct KeepableWalk
{
	bool		keep;
	KeptRowType *row_types;
	int			count;
	int			room;
} KeepableWalk;

/* The functions checked for EXECUTE while a list is compiled (object_access_hook). */
typedef struct CheckedFunctions
{
	Oid		   *oids;
	int			count;
	int			room;
} CheckedFunctions;

static CheckedFunctions *checking = NULL;
static object_access_hook_type checking_prev_hook = NULL;

/*
 * True if the plan is one row of expressions: a Result with no input,
 * filter, sub-plan or relation, which yields exactly one row.
 */
static bool
plan_is_simple(CachedPlan *cplan)
{
	PlannedStmt *stmt;
	Result	   *top;
	ListCell   *lc;

	if (list_length(cplan->stmt_list) != 1)
		return false;
	stmt = linitial_node(PlannedStmt, cplan->stmt_list);
	if (stmt->commandType != CMD_SELECT || stmt->utilityStmt != NULL ||
		stmt->hasModifyingCTE || stmt->hasReturning || stmt->rowMarks != NIL ||
		stmt->subplans != NIL || stmt->paramExecTypes != NIL ||
		!IsA(stmt->planTree, Result))
		return false;

	top = (Result *) stmt->planTree;
	if (top->plan.lefttree != NULL || top->plan.righttree != NULL ||
		top->plan.qual != NIL || top->plan.initPlan != NIL ||
		top->resconstantqual != NULL)
		return false;

	/*
	 * The range table keeps the entries of subqueries the planner pulled up
	 * (the request relation is one); they are not scanned.  A relation entry
	 * is left to the executor even then, since it checks its privileges (a
	 * view folded to constants is still one).
	 */
	foreach(lc, stmt->rtable)
	{
		RTEKind		kind = lfirst_node(RangeTblEntry, lc)->rtekind;

		if (kind != RTE_RESULT && kind != RTE_SUBQUERY)
			return false;
	}
	return true;
}

/*
 * object_access_hook: while a list is compiled, notes each function whose
 * EXECUTE privilege Postgres has just checked; passes every event on.
 */
static void
note_checked_function(ObjectAccessType access, Oid classId, Oid objectId,
					  int subId, void *arg)
{
	if (access == OAT_FUNCTION_EXECUTE && classId == ProcedureRelationId &&
		checking != NULL)
	{
		for (int i = 0; i < checking->count; i++)
			if (checking->oids[i] == objectId)
				goto noted;
		if (checking->count == checking->room)
		{
			checking->room *= 2;
			checking->oids = repalloc(checking->oids, checking->room * sizeof(Oid));
		}
		checking->oids[checking->count++] = objectId;
	}
noted:
	if (checking_prev_hook != NULL)
		checking_prev_hook(access, classId, objectId, subId, arg);
}

/*
 * Notes whether an expression may be compiled once and run in later
 * transactions: every node is one whose compiling (ExecInitExprRec) reads
 * only what invalidates the plan when it changes, or what cannot change,
 * or (a row of a named type) what the start of each transaction compares.
 * Stops at the first node of any other kind.
 */
static bool
keepable_walker(Node *node, KeepableWalk *walk)
{
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_List:
		case T_Const:
		case T_Param:
		case T_FuncExpr:
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
		case T_ScalarArrayOpExpr:
		case T_BoolExpr:
		case T_CaseExpr:
		case T_CaseWhen:
		case T_CaseTestExpr:
		case T_CoalesceExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ArrayExpr:
		case T_FieldSelect:
		case T_SQLValueFunction:
			break;
		case T_RowExpr:
			{
				Oid			type = ((RowExpr *) node)->row_typeid;
				TypeCacheEntry *entry;

				if (type == RECORDOID)
					break;		/* its descriptor is made from its arguments' types */
				entry = lookup_type_cache(type, TYPECACHE_TUPDESC);
				if (entry->tupDesc == NULL)
				{
					walk->keep = false;
					return true;
				}
				if (walk->count == walk->room)
				{
					walk->room *= 2;
					walk->row_types = repalloc(walk->row_types,
											   walk->room * sizeof(KeptRowType));
				}
				walk->row_types[walk->count].type = type;
				walk->row_types[walk->count].desc_id = entry->tupDesc_identifier;
				walk->count++;
				break;
			}
		default:
			walk->keep = false;
			return true;
	}
	return expression_tree_walker(node, keepable_walker, (void *) walk);
}

/* Whether each row type the kept list builds rows of has the descriptor it had. */
static bool
row_types_current(SimpleEvalCache *cache)
{
	for (int i = 0; i < cache->nrow_types; i++)
	{
		KeptRowType *kept = &cache->row_types[i];
		TypeCacheEntry *entry = lookup_type_cache(kept->type, TYPECACHE_TUPDESC);

		if (entry->tupDesc == NULL || entry->tupDesc_identifier != kept->desc_id)
			return false;
	}
	return true;
}

/*
 * Puts note_checked_function in the object access hook's chain, once per
 * process.  It stays there, passing events on, rather than coming and
 * going with each compile: a library that compiling loads (a handler's C
 * function) may put its own hook above it, which must keep calling it.
 */
void
simple_eval_install(void)
{
	checking_prev_hook = object_access_hook;
	object_access_hook = note_checked_function;
}

/* Readies cache for a newly prepared plan; see simple_eval.h. */
void
simple_eval_init(SimpleEvalCache *cache, MemoryContext parent)
{
	simple_eval_forget(cache);
	memset(cache, 0, sizeof(*cache));
	cache->parent = parent;
}

/* Drops what cache compiled. */
void
simple_eval_forget(SimpleEvalCache *cache)
{
	if (cache->compiled_cxt != NULL)
		MemoryContextDelete(cache->compiled_cxt);
	cache->compiled_cxt = NULL;
	cache->columns = NULL;
	cache->keep = false;
	cache->row_types = NULL;
	cache->nrow_types = 0;
	cache->checked = NULL;
	cache->nchecked = 0;
	cache->running = false;
}

/*
 * Fills columns with tlist's natts result columns, compiled in the current
 * context, and walk with whether they may be kept.
 */
static void
compile_tlist(SimpleColumn *columns, List *tlist, int natts, KeepableWalk *walk)
{
	int			i = 0;
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->resjunk)
			continue;
		if (i >= natts)
			elog(ERROR, "handler plan has more columns than its result");
		if (IsA(tle->expr, Const))
			columns[i].constant = (Const *) tle->expr;
		else
		{
			/* Walked first: the row types' descriptors as compiling reads them */
			if (walk->keep)
				(void) keepable_walker((Node *) tle->expr, walk);
			columns[i].state = ExecInitExprWithParams(tle->expr, NULL);
		}
		i++;
	}
	if (i != natts)
		elog(ERROR, "handler plan has fewer columns than its result");
}

/*
 * Compiles tlist's natts result columns into a new context, noting the
 * functions whose EXECUTE privilege compiling checks.  Parameters are
 * compiled as generic steps (the request's list has no paramCompile) and
 * read through the expression context when evaluated, so the list serves
 * every request.
 */
static void
compile_columns(SimpleEvalCache *cache, List *tlist, int natts)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	SimpleColumn *columns;
	CheckedFunctions checked;
	KeepableWalk walk;

	simple_eval_forget(cache);
	/* Made under the transaction's context: a failed compile goes with it. */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "webgres compiled handler",
								ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	columns = palloc0(sizeof(SimpleColumn) * Max(natts, 1));
	checked.room = 8;
	checked.count = 0;
	checked.oids = palloc(checked.room * sizeof(Oid));
	walk.keep = true;
	walk.room = 4;
	walk.count = 0;
	walk.row_types = palloc(walk.room * sizeof(KeptRowType));

	if (checking != NULL)
		elog(ERROR, "a handler was compiled while another was");

	checking = &checked;
	PG_TRY();
	{
		compile_tlist(columns, tlist, natts, &walk);
	}
	PG_FINALLY();
	{
		checking = NULL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);

	MemoryContextSetParent(cxt, cache->parent);
	cache->compiled_cxt = cxt;
	cache->columns = columns;
	cache->keep = walk.keep;
	cache->row_types = walk.row_types;
	cache->nrow_types = walk.count;
	cache->checked = checked.oids;
	cache->nchecked = checked.count;
	cache->checked_lxid = MyLocalTransactionId;
}

/*
 * Checks again, for the current user, the EXECUTE privilege compiling
 * checked on each function, as ExecInitExpr does: an error names the
 * function, and the hook hears of each check that passed.
 */
static void
recheck_functions(SimpleEvalCache *cache)
{
	Oid			user = GetUserId();

	for (int i = 0; i < cache->nchecked; i++)
	{
		Oid			funcid = cache->checked[i];
		AclResult	result = object_aclcheck(ProcedureRelationId, funcid, user,
											 ACL_EXECUTE);

		if (result != ACLCHECK_OK)
			aclcheck_error(result, OBJECT_FUNCTION, get_func_name(funcid));
		InvokeFunctionExecuteHook(funcid);
	}
	cache->checked_lxid = MyLocalTransactionId;
}

/* Evaluates a plan that is one row of expressions without the executor. */
bool
simple_eval_run(SPIPlanPtr plan, SimpleEvalCache *cache, ParamListInfo params,
				TupleDesc *desc, HeapTuple *tuple)
{
	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));
	CachedPlan *cplan;
	ExprContext *econtext;
	MemoryContext oldcxt;
	Datum	   *values;
	bool	   *nulls;
	int			natts;

	/*
	 * A valid generic plan already found to be of another shape goes
	 * straight to the executor, which revalidates it: no second plan-cache
	 * lookup per request.  An invalidated or new plan is looked at again.
	 */
	if (cache->plan != NULL && !cache->simple && source->is_valid &&
		source->gplan == cache->plan && source->gplan->is_valid &&
		source->gplan->generation == cache->generation)
		return false;

	/* Revalidates, and replans if anything it depends on changed. */
	cplan = SPI_plan_get_cached_plan(plan);
	if (cplan == NULL)
		return false;

	/*
	 * The shape is fixed for the life of a plan: look at each new one once.
	 * The compiled list points into its plan, so it goes with it.
	 */
	if (cplan != cache->plan || cplan->generation != cache->generation)
	{
		simple_eval_forget(cache);
		cache->plan = cplan;
		cache->generation = cplan->generation;
		cache->simple = plan_is_simple(cplan);
	}
	if (!cache->simple || source->resultDesc == NULL)
	{
		ReleaseCachedPlan(cplan, CurrentResourceOwner);
		return false;
	}

	*desc = source->resultDesc;
	natts = (*desc)->natts;
	values = palloc(sizeof(Datum) * natts);
	nulls = palloc(sizeof(bool) * natts);

	/*
	 * Compiled anew after an error, and in a new transaction unless it may
	 * be kept, its row types are as they were and its caches have not grown
	 * too far; else its functions' privileges are checked again.
	 */
	if (cache->columns == NULL || cache->running ||
		(cache->checked_lxid != MyLocalTransactionId &&
		 (!cache->keep || !row_types_current(cache) ||
		  MemoryContextMemAllocated(cache->compiled_cxt, true) > SIMPLE_EVAL_KEPT_MAX)))
		compile_columns(cache,
						linitial_node(PlannedStmt, cplan->stmt_list)->planTree->targetlist,
						natts);
	else if (cache->checked_lxid != MyLocalTransactionId)
		recheck_functions(cache);

	/*
	 * The context's per-query memory, where steps keep what they build on
	 * their first evaluation (a hashed IN list's table), is the compiled
	 * list's: it lasts as long as the steps that point to it.
	 */
	oldcxt = MemoryContextSwitchTo(cache->compiled_cxt);
	econtext = CreateStandaloneExprContext();
	MemoryContextSwitchTo(oldcxt);
	econtext->ecxt_param_list_info = params;

	cache->running = true;
	for (int i = 0; i < natts; i++)
	{
		SimpleColumn *column = &cache->columns[i];

		if (column->state == NULL)
		{
			values[i] = column->constant->constvalue;
			nulls[i] = column->constant->constisnull;
		}
		else
			values[i] = ExecEvalExprSwitchContext(column->state, econtext, &nulls[i]);
	}
	*tuple = heap_form_tuple(*desc, values, nulls);
	FreeExprContext(econtext, true);
	cache->running = false;

	ReleaseCachedPlan(cplan, CurrentResourceOwner);
	return true;
}
