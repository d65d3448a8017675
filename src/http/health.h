/*
 * health.h
 *		Liveness, readiness and role endpoints for load balancers, answered
 *		on the event loop from state the worker keeps fresh.
 */
#ifndef WEBGRES_HEALTH_H
#define WEBGRES_HEALTH_H

#include <stddef.h>

#include "utils/guc.h"

struct st_h2o_req_t;

/* Brings the node's state up to date if it is older than the refresh period. */
extern void health_refresh(void);

/* The worker is stopping: readiness answers 503 from now on. */
extern void health_set_stopping(void);

/* True when this node is a standby (in recovery), as last refreshed. */
extern bool health_is_standby(void);

/*
 * GUC check hook of the endpoints' paths (these and webgres.metrics_path):
 * empty (off), or an absolute path without a query.
 */
extern bool health_check_path_setting(char **newval, void **extra, GucSource source);

/* Defines the health endpoints' settings; from _PG_init. */
extern void health_define_settings(void);

#endif							/* WEBGRES_HEALTH_H */
