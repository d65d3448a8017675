/*
 * simple_eval.h
 *		Runs a handler that is a single row of expressions without the
 *		executor.
 */
#ifndef WEBGRES_SIMPLE_EVAL_H
#define WEBGRES_SIMPLE_EVAL_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "executor/spi.h"
#include "nodes/params.h"

/*
 * What was learnt of the plan last seen, so each plan is inspected once, and
 * its compiled target list, kept for the rest of the transaction that
 * compiled it (requests that share a transaction share it too).
 */
typedef struct SimpleEvalCache
{
	struct CachedPlan *plan;
	int			generation;
	bool		simple;
	LocalTransactionId compiled_lxid;
	struct ExprState **compiled;	/* one per result column */
} SimpleEvalCache;

/*
 * If plan's current generic plan is one row of expressions, evaluates it
 * with params and returns true with the row in *tuple (allocated in the
 * current memory context) and its descriptor in *desc, which belongs to
 * the plan.  Returns false, having run nothing, for any other plan.
 */
extern bool simple_eval_run(SPIPlanPtr plan, SimpleEvalCache *cache,
							ParamListInfo params, TupleDesc *desc,
							HeapTuple *tuple);

#endif
