/*
 * phase.c
 *		The lists of the request's phases, built from the modules that
 *		registered into them (serve/phase.h).
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "port/pg_bitutils.h"
#include "utils/timestamp.h"

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

StaticAssertDecl(PHASE_MODULE_COUNT <= ROUTE_MAX_MODULES,
				 "more pipeline modules than a route keeps configuration for");
StaticAssertDecl(lengthof(pipeline_modules) == PHASE_MODULE_COUNT,
				 "PhaseModuleId numbers serve/phase_list.h's modules");

/* The pipeline's lists, one per phase (most stay empty). */
PhaseList	pipeline_phases[PHASE_COUNT];

/* Where each pipeline module's slot starts in PhaseStates.area. */
uint16		phase_state_offsets[PHASE_MODULE_COUNT];

/* The modules with state on the lists, as pipeline_phases_build() left them. */
static int	nstate_modules = 0;
static PhaseModuleId state_modules[PHASE_MODULE_COUNT];

/*
 * Lays the modules' slots out in PhaseStates.area, each MAXALIGNed; a
 * FATAL error when the process starts if they do not fit
 * PHASE_STATE_SIZE, so that a module that grows its state finds out at
 * once.
 */
static void
layout_states(void)
{
	static bool laid_out = false;
	size_t		at = 0;

	if (laid_out)
		return;
	for (int i = 0; i < PHASE_MODULE_COUNT; i++)
	{
		const PhaseModule *m = pipeline_modules[i];

		phase_state_offsets[i] = (uint16) at;
		if (m->state_size == 0)
			continue;
		if (m->state_begin == NULL || m->state_hand_off == NULL || m->state_encode == NULL ||
			m->state_decode == NULL || m->state_resume == NULL)
			elog(FATAL, "pipeline module \"%s\" has a state but not all its state hooks", m->name);
		at += MAXALIGN(m->state_size);
		if (at > PHASE_STATE_SIZE)
			elog(FATAL, "the pipeline modules' states need more than PHASE_STATE_SIZE (%d) bytes at \"%s\"",
				 PHASE_STATE_SIZE, m->name);
	}
	laid_out = true;
}

/* Begins module id's slot of st, and marks it begun (phase.h). */
void
phase_state_begin(PhaseStates *st, PhaseModuleId id, struct st_h2o_conn_t *client,
				  TimestampTz now)
{
	pipeline_modules[id]->state_begin(st->area.bytes + phase_state_offsets[id], client, now);
	st->begun |= UINT32_C(1) << id;
}

/* Resumes each slot decoded from a REQUEST frame at now (pipeline_phases.h). */
void
pipeline_states_resume(PhaseStates *st, TimestampTz now)
{
	for (uint32 left = st->begun; left != 0; left &= left - 1)
	{
		int			id = pg_rightmost_one_pos32(left);

		pipeline_modules[id]->state_resume(st->area.bytes + phase_state_offsets[id], now);
	}
}

/* Readies pr's states to cross to an executor (pipeline_phases.h). */
void
pipeline_states_hand_off(PhaseRequest *pr)
{
	PhaseStates *st = pr->states;

	for (int i = 0; i < nstate_modules; i++)
		(void) phase_module_state(pr, state_modules[i]);
	for (uint32 left = st->begun; left != 0; left &= left - 1)
	{
		int			id = pg_rightmost_one_pos32(left);

		pipeline_modules[id]->state_hand_off(st->area.bytes + phase_state_offsets[id]);
	}
}

/* Appends module id's slot of st to buf (pipeline_phases.h). */
void
pipeline_state_encode(StringInfo buf, const PhaseStates *st, PhaseModuleId id)
{
	int			at PG_USED_FOR_ASSERTS_ONLY = buf->len;

	Assert((st->begun & (UINT32_C(1) << id)) != 0);
	pipeline_modules[id]->state_encode(buf, st->area.bytes + phase_state_offsets[id]);
	Assert(buf->len - at <= PHASE_STATE_WIRE_MAX);
}

/* Fills module id's slot of st from a REQUEST frame's bytes (pipeline_phases.h). */
bool
pipeline_state_decode(PhaseStates *st, int id, const char *data, size_t len)
{
	if (id < 0 || id >= PHASE_MODULE_COUNT || pipeline_modules[id]->state_size == 0 ||
		!pipeline_modules[id]->state_decode(data, len, st->area.bytes + phase_state_offsets[id]))
		return false;
	st->begun |= UINT32_C(1) << id;
	return true;
}

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
	PhaseStates states;
	PhaseRequest pr = {.req = req};

	if (list->n == 0 || route_id == 0 || (routes = routes_peek()) == NULL)
		return;
	pr.routes = routes;
	/* A module that asks for its state gets one begun without a client. */
	states.begun = 0;
	pr.states = &states;
	pr.now = GetCurrentTimestamp();
	for (int i = 0; i < routes->nroutes; i++)
		if (routes->routes[i].id == route_id)
		{
			(void) phase_run(list, &pr, &routes->routes[i]);
			return;
		}
}

/*
 * Builds the pipeline's lists for routes, and the list of its modules with
 * state that are on (pipeline_phases.h).
 */
void
pipeline_phases_build(RouteTable *routes)
{
	layout_states();
	phase_lists_build(pipeline_phases, pipeline_modules, lengthof(pipeline_modules), routes);
	nstate_modules = 0;
	for (int i = 0; i < PHASE_MODULE_COUNT; i++)
	{
		const PhaseModule *m = pipeline_modules[i];

		if (m->state_size > 0 && (m->enabled == NULL || m->enabled(routes)))
			state_modules[nstate_modules++] = (PhaseModuleId) i;
	}
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
