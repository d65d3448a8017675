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
 * On an executor, before its pipeline runs a request whose states st came
 * in its frame: each slot decoded resumes at now (a module the worker
 * handed no state over for begins its slot when it asks).
 */
extern void pipeline_states_resume(PhaseStates *st, TimestampTz now);

/*
 * Before pr crosses to an executor: begins the slots of the modules with
 * state on the lists that no hook asked for yet (the executor may run
 * their hooks), then drops from each begun slot what stays on the worker.
 */
extern void pipeline_states_hand_off(PhaseRequest *pr);

/* Appends module id's begun slot of st to buf, by its state_encode. */
extern void pipeline_state_encode(struct StringInfoData *buf, const PhaseStates *st,
								  PhaseModuleId id);

/*
 * Fills module id's slot of st from its bytes in a REQUEST frame and marks
 * it begun; false if id names no module with state or its state_decode
 * refuses the bytes.
 */
extern bool pipeline_state_decode(PhaseStates *st, int id, const char *data, size_t len);

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
