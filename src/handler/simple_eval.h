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
#include "utils/palloc.h"

/*
 * What was learnt of the plan last seen, so each plan is inspected once, and
 * its compiled target list, kept as long as that plan is when nothing it
 * read while compiling can change without the plan: requests in later
 * transactions run the same compiled expressions, with the privileges
 * compiling checked again once in each transaction (simple_eval.c).
 */
typedef struct SimpleEvalCache
{
	struct CachedPlan *plan;
	int			generation;
	bool		simple;
	MemoryContext parent;		/* where compiled_cxt is made */
	MemoryContext compiled_cxt; /* the compiled list and all it keeps */
	struct SimpleColumn *columns;	/* one per result column */
	bool		keep;			/* may serve later transactions */
	struct KeptRowType *row_types;	/* named row types it builds rows of */
	int			nrow_types;
	Oid		   *checked;		/* functions compiling checked for EXECUTE */
	int			nchecked;
	LocalTransactionId checked_lxid;	/* the transaction last checked in */
	bool		running;		/* an evaluation began and has not ended */
} SimpleEvalCache;

/* Hears of the EXECUTE checks compiling makes (object_access_hook); once per process. */
extern void simple_eval_install(void);

/*
 * Readies cache for a newly prepared plan, dropping what it kept for any
 * plan before; what it compiles is kept in a child of parent.
 */
extern void simple_eval_init(SimpleEvalCache *cache, MemoryContext parent);

/* Drops what cache compiled: its plan is being freed. */
extern void simple_eval_forget(SimpleEvalCache *cache);

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
