/*
 * pipeline_phases.h
 *		The lists of the pipeline's phases (serve/phase.h), as the process
 *		last built them.
 */
#ifndef WEBGRES_PIPELINE_PHASES_H
#define WEBGRES_PIPELINE_PHASES_H

#include "serve/phase.h"

/* One list per phase; the pipeline runs them with phase_run(). */
extern PhaseList pipeline_phases[PHASE_COUNT];

/*
 * Builds the lists from serve/phase_list.h's modules that are on for
 * routes (NULL: no table yet): at start, after a reload and whenever the
 * route table loads.
 */
extern void pipeline_phases_build(RouteTable *routes);

/*
 * Hands the routes floor serve/phase_list.h's modules' columns, trigger
 * checks and counters (routes/route_modules.h); from _PG_init, always.
 */
extern void pipeline_modules_register(void);

/* Calls every pipeline module's shmem_request; from _PG_init when preloaded. */
extern void pipeline_modules_shmem_request(void);

/*
 * Runs PHASE_FILTER's list on the worker's own answer to a request it
 * handed off (a full queue, an executor that failed), for the route with
 * this id in the table as last loaded: so that a page can read the error.
 * Nothing if the list is empty, the table stale or the route gone.
 */
extern void phase_filter_route_id(struct st_h2o_req_t *req, int64 route_id);

#endif
