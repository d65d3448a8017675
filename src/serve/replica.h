/*
 * replica.h
 *		What a standby answers to a request it cannot serve: a redirect to
 *		the primary, or 503.
 */
#ifndef WEBGRES_REPLICA_H
#define WEBGRES_REPLICA_H

#include <stddef.h>

struct st_h2o_req_t;

/*
 * Answers a request that needs the primary: 307 to webgres.primary_url
 * with the same path and query when it is set, else 503 with Retry-After.
 */
extern void replica_answer_needs_primary(struct st_h2o_req_t *req, char **body, size_t *bodylen);

/* Defines webgres.primary_url; from _PG_init. */
extern void replica_define_settings(void);

#endif							/* WEBGRES_REPLICA_H */
