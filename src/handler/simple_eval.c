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
 * taken from (and revalidated by) the plan cache on every request, its
 * functions are still checked for EXECUTE privilege when compiled (once a
 * transaction, as PL/pgSQL does), and it runs on the request's snapshot,
 * inside its transaction.  What it skips is
 * the executor hooks, so pg_stat_statements does not count these handlers.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/executor.h"
#include "nodes/plannodes.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/resowner.h"

#include "core/pg_compat.h"
#include "handler/simple_eval.h"

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

/* Evaluates a plan that is one row of expressions without the executor. */
bool
simple_eval_run(SPIPlanPtr plan, SimpleEvalCache *cache, ParamListInfo params,
				TupleDesc *desc, HeapTuple *tuple)
{
	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));
	CachedPlan *cplan;
	List	   *tlist;
	ExprContext *econtext;
	Datum	   *values;
	bool	   *nulls;
	int			natts;
	int			i = 0;
	ListCell   *lc;

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

	/* The shape is fixed for the life of a plan: look at each new one once. */
	if (cplan != cache->plan || cplan->generation != cache->generation)
	{
		cache->plan = cplan;
		cache->generation = cplan->generation;
		cache->simple = plan_is_simple(cplan);
		cache->compiled = NULL;
	}
	if (!cache->simple || source->resultDesc == NULL)
	{
		ReleaseCachedPlan(cplan, CurrentResourceOwner);
		return false;
	}

	*desc = source->resultDesc;
	natts = (*desc)->natts;
	tlist = linitial_node(PlannedStmt, cplan->stmt_list)->planTree->targetlist;
	values = palloc(sizeof(Datum) * natts);
	nulls = palloc(sizeof(bool) * natts);

	/*
	 * Compiled in transaction memory, once per plan and transaction.  Params
	 * are read through the expression context when evaluated, so the states
	 * serve every request of the transaction.
	 */
	if (cache->compiled == NULL || cache->compiled_lxid != MyLocalTransactionId)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopTransactionContext);
		ExprState **compiled = palloc(sizeof(ExprState *) * natts);

		foreach(lc, tlist)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);

			if (tle->resjunk)
				continue;
			if (i >= natts)
				elog(ERROR, "handler plan has more columns than its result");
			compiled[i++] = ExecInitExprWithParams(tle->expr, params);
		}
		if (i != natts)
			elog(ERROR, "handler plan has fewer columns than its result");
		MemoryContextSwitchTo(oldcxt);
		cache->compiled = compiled;
		cache->compiled_lxid = MyLocalTransactionId;
	}

	econtext = CreateStandaloneExprContext();
	econtext->ecxt_param_list_info = params;
	for (i = 0; i < natts; i++)
		values[i] = ExecEvalExprSwitchContext(cache->compiled[i], econtext, &nulls[i]);

	*tuple = heap_form_tuple(*desc, values, nulls);
	FreeExprContext(econtext, true);
	ReleaseCachedPlan(cplan, CurrentResourceOwner);
	return true;
}
