/*
 * health.h
 *		Liveness, readiness and role endpoints for load balancers, answered
 *		on the event loop from state the worker keeps fresh.
 */
#ifndef WEBGRES_HEALTH_H
#define WEBGRES_HEALTH_H

#include <stddef.h>

struct st_h2o_req_t;

/* Brings the node's state up to date if it is older than the refresh period. */
extern void health_refresh(void);

/* The worker is stopping: readiness answers 503 from now on. */
extern void health_set_stopping(void);

/*
 * Answers the request if its path is one of the configured health paths;
 * returns false (and touches nothing) otherwise.
 */
extern bool health_try_answer(struct st_h2o_req_t *req, char **body, size_t *bodylen);

/* True when this node is a standby (in recovery), as last refreshed. */
extern bool health_is_standby(void);

#endif							/* WEBGRES_HEALTH_H */
