/*
 * metrics.h
 *		The Prometheus endpoint: per-route, worker and executor figures in
 *		Prometheus' text exposition format, answered without SQL.
 */
#ifndef WEBGRES_METRICS_H
#define WEBGRES_METRICS_H

#include <stdbool.h>

#include "utils/guc.h"

struct st_h2o_req_t;
struct st_h2o_context_t;

/*
 * Once per worker, after its h2o context exists: opens the listeners of
 * webgres.metrics_listen, if it is set, which answer only metrics.
 */
extern void metrics_start(struct st_h2o_context_t *ctx);

/* The exposition text, in the current memory context (for tests and SQL). */
extern char *metrics_render(void);

/*
 * Defines webgres.metrics_allow (the networks whose clients may read the
 * metrics on the main listeners); from _PG_init.  The metrics path on the
 * main listeners is the module metrics_module of PHASE_ENDPOINT
 * (serve/phase.h).
 */
extern void metrics_define_settings(void);

#endif
