/*
 * route_modules.c
 *		The pipeline modules' hooks into webgres.routes, as handed down
 *		at module load (route_modules.h).
 */
#include "postgres.h"

#include "routes/route_modules.h"

/* The table serve/phase.c handed over; static data of the library. */
static const RouteModuleHooks *const *modules = NULL;
static int	nmodules = 0;

/* Counters: each module's (-1: none), and each counter's module. */
static int	counter_of[ROUTE_MAX_MODULES];
static int	counter_module[ROUTE_MAX_COUNTERS];
static int	ncounters = 0;

/* Keeps the modules' hooks, in their registration order. */
void
route_modules_register(const RouteModuleHooks *const *hooks, int n)
{
	if (n > ROUTE_MAX_MODULES)
		elog(ERROR, "%d pipeline modules registered, at most %d fit a route",
			 n, ROUTE_MAX_MODULES);
	modules = hooks;
	nmodules = n;
	ncounters = 0;
	for (int i = 0; i < n; i++)
	{
		counter_of[i] = -1;
		if (hooks[i]->counter == NULL)
			continue;
		if (ncounters >= ROUTE_MAX_COUNTERS)
			elog(ERROR, "more than %d pipeline modules declare a route counter",
				 ROUTE_MAX_COUNTERS);
		counter_module[ncounters] = i;
		counter_of[i] = ncounters++;
	}
}

/* Counters declared. */
int
route_modules_ncounters(void)
{
	return ncounters;
}

/* Module's counter, or -1. */
int
route_modules_counter_of(int module)
{
	return module >= 0 && module < nmodules ? counter_of[module] : -1;
}

/* The hooks of the module that counts counter c. */
const RouteModuleHooks *
route_modules_counter(int c)
{
	Assert(c >= 0 && c < ncounters);
	return modules[counter_module[c]];
}

/* Modules registered. */
int
route_modules_count(void)
{
	return nmodules;
}

/* Module i's hooks. */
const RouteModuleHooks *
route_modules_get(int i)
{
	Assert(i >= 0 && i < nmodules);
	return modules[i];
}

/* Runs every module's check of a routes row; the first to object errors out. */
void
route_modules_check_route(HeapTuple tup, TupleDesc desc)
{
	for (int i = 0; i < nmodules; i++)
		if (modules[i]->check_route != NULL)
			modules[i]->check_route(tup, desc);
}
