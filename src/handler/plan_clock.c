/*
 * plan_clock.c
 *		Counts the time spent planning, with a planner hook.
 *
 * A handler's statement is planned once and kept, but Postgres still plans
 * at run time: a custom plan for each of the first executions of a kept
 * plan with parameters, a plan made again after an invalidation (ANALYZE,
 * a changed table), and the statements inside functions a handler calls.
 * None of that shows in a handler's total time; the slow-request log
 * reports it apart, so that a route slowed by planning is told from one
 * slowed by executing.  The hook is installed in webgres' own processes
 * only, and costs two clock readings a plan.
 */
#include "postgres.h"

#include "optimizer/planner.h"
#include "portability/instr_time.h"

#include "handler/plan_clock.h"

static planner_hook_type prev_planner_hook = NULL;
static uint64 planning_us = 0;
/* Planning can plan again inside itself (constant folding calls a function): count the outermost. */
static int	planning_depth = 0;

/* The planner hook: plans as the next hook would, and adds the time taken. */
static PlannedStmt *
timed_planner(Query *parse, const char *query_string, int cursorOptions,
			  ParamListInfo boundParams)
{
	instr_time	start;
	instr_time	elapsed;
	PlannedStmt *result;

	INSTR_TIME_SET_CURRENT(start);
	planning_depth++;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		planning_depth--;
	}
	PG_END_TRY();
	if (planning_depth == 0)
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		planning_us += INSTR_TIME_GET_MICROSEC(elapsed);
	}
	return result;
}

/* Starts counting planning time in this process; once. */
void
plan_clock_install(void)
{
	if (planner_hook == timed_planner)
		return;
	prev_planner_hook = planner_hook;
	planner_hook = timed_planner;
}

/* Microseconds this process has spent planning so far. */
uint64
plan_clock_us(void)
{
	return planning_us;
}
