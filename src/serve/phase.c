/*
 * phase.c
 *		The lists of the request's phases, built from the modules that
 *		registered into them (serve/phase.h).
 */
#include "postgres.h"

#include "serve/phase.h"
#include "serve/pipeline_phases.h"

/* Every pipeline module, declared from its line in serve/phase_list.h. */
#define PHASE_MODULE(name) extern const PhaseModule name##_module;
#include "serve/phase_list.h"
#undef PHASE_MODULE

/* The pipeline's modules, in the order of serve/phase_list.h. */
static const PhaseModule *const pipeline_modules[] = {
#define PHASE_MODULE(name) &name##_module,
#include "serve/phase_list.h"
#undef PHASE_MODULE
};

/*
 * The modules' hooks into webgres.routes and its statistics, in the same
 * order, as a table of pointers for the routes floor (which may not
 * include this floor's headers) to loop over.
 */
static const RouteModuleHooks *const pipeline_route_hooks[] = {
#define PHASE_MODULE(name) &name##_module.route,
#include "serve/phase_list.h"
#undef PHASE_MODULE
};

StaticAssertDecl(PHASE_MODULES <= ROUTE_MAX_MODULES,
				 "more pipeline modules than a route keeps configuration for");
StaticAssertDecl(lengthof(pipeline_modules) == PHASE_MODULES,
				 "serve/phase_list.h read differently by phase.h and phase.c");

/* The pipeline's lists, one per phase (most stay empty). */
PhaseList	pipeline_phases[PHASE_COUNT];

/* Builds lists[] from the modules that are on for routes (phase.h). */
void
phase_lists_build(PhaseList *lists, const PhaseModule *const *modules, int nmodules,
				  const RouteTable *routes)
{
	for (int p = 0; p < PHASE_COUNT; p++)
		lists[p].n = 0;
	for (int i = 0; i < nmodules; i++)
	{
		const PhaseModule *m = modules[i];

		if (m->enabled != NULL && !m->enabled(routes))
			continue;
		for (int p = 0; p < PHASE_COUNT; p++)
		{
			if (m->hooks[p] == NULL)
				continue;
			if (lists[p].n >= PHASE_MAX_MODULES)
				elog(ERROR, "too many modules in phase %d", p);
			lists[p].hooks[lists[p].n++] = m->hooks[p];
		}
	}
}

/*
 * PHASE_FILTER for an answer the worker gives a request it handed off, by
 * its route's id (pipeline_phases.h).  Only while a module is on the list,
 * so the look-up by id, a walk of the table, is paid by nobody else; and
 * only on the worker's own refusals, never on an executor's answers.
 */
void
phase_filter_route_id(struct st_h2o_req_t *req, int64 route_id)
{
	const PhaseList *list = &pipeline_phases[PHASE_FILTER];
	RouteTable *routes;
	PhaseRequest pr = {.req = req};

	if (list->n == 0 || route_id == 0 || (routes = routes_peek()) == NULL)
		return;
	pr.routes = routes;
	for (int i = 0; i < routes->nroutes; i++)
		if (routes->routes[i].id == route_id)
		{
			(void) phase_run(list, &pr, &routes->routes[i]);
			return;
		}
}

/* Builds the pipeline's lists for routes (pipeline_phases.h). */
void
pipeline_phases_build(RouteTable *routes)
{
	phase_lists_build(pipeline_phases, pipeline_modules, lengthof(pipeline_modules), routes);
}

/* Hands the modules' route hooks to the routes floor (pipeline_phases.h). */
void
pipeline_modules_register(void)
{
	route_modules_register(pipeline_route_hooks, lengthof(pipeline_route_hooks));
}

/* Calls each module's shmem_request, in list order (pipeline_phases.h). */
void
pipeline_modules_shmem_request(void)
{
	for (int i = 0; i < (int) lengthof(pipeline_modules); i++)
		if (pipeline_modules[i]->shmem_request != NULL)
			pipeline_modules[i]->shmem_request();
}
