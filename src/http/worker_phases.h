/*
 * worker_phases.h
 *		The phases a request goes through on the worker before the route
 *		match: connection checks, endpoints without SQL, the TLS redirect
 *		(serve/phase.h says what each may read and write).
 */
#ifndef WEBGRES_WORKER_PHASES_H
#define WEBGRES_WORKER_PHASES_H

#include "serve/phase.h"

/* The lists, as last built; read by worker_phases_run(). */
extern PhaseList worker_phases[PHASE_COUNT];

/* Builds the lists from the modules whose settings are on; at start and on reload. */
extern void worker_phases_build(void);

/*
 * Runs PHASE_CONNECTION to PHASE_REDIRECT: true to route the request;
 * false once a module answered it (req->res and *pr->body hold the
 * answer, for the exit to send).
 */
static inline bool
worker_phases_run(PhaseRequest *pr)
{
	return phase_run(&worker_phases[PHASE_CONNECTION], pr, NULL) &&
		phase_run(&worker_phases[PHASE_ENDPOINT], pr, NULL) &&
		phase_run(&worker_phases[PHASE_REDIRECT], pr, NULL);
}

#endif
