/*
 * worker_phases.c
 *		The worker's phase lists, built from http/worker_phase_list.h.
 */
#include "postgres.h"

#include "http/worker_phases.h"

/* Every worker module, declared from its line in http/worker_phase_list.h. */
#define WORKER_MODULE(name) extern const PhaseModule name##_module;
#include "http/worker_phase_list.h"
#undef WORKER_MODULE

/* The worker's modules, in the order of http/worker_phase_list.h. */
static const PhaseModule *const worker_modules[] = {
#define WORKER_MODULE(name) &name##_module,
#include "http/worker_phase_list.h"
#undef WORKER_MODULE
};

/* The worker's lists, one per phase (those after PHASE_REDIRECT stay empty). */
PhaseList	worker_phases[PHASE_COUNT];

/* Builds the lists from the modules whose settings are on (worker_phases.h). */
void
worker_phases_build(void)
{
	phase_lists_build(worker_phases, worker_modules, lengthof(worker_modules), NULL);
}
