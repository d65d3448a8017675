/*
 * rate_limit.h
 *		Rate limits: the access check that answers 429 before a request
 *		costs more (docs/rate-limits.md).
 *
 * Two kinds of limit, both nginx limit_req's leaky bucket (a rate and a
 * burst, always "nodelay"): the route's own (the rate_limit, rate_burst
 * and rate_key columns of webgres.routes, set by its owner) and the
 * server's (webgres.rate_limit and webgres.rate_limit_burst, set by a
 * superuser), which counts every routed request by its client's address.
 * The buckets are in shared memory (core/rate_buckets.h), so one budget
 * holds across workers.
 *
 * The module (rate_limit_module, registered in serve/phase_list.h) asks
 * for the buckets' shared memory, reads and checks its columns of
 * webgres.routes and counts its refusals through its PhaseModule's hooks
 * beside the request (serve/phase.h), so nothing else names it.  It checks
 * a matched route in PHASE_ACCESS, before authentication (limits by
 * address or by route, and the server's), and in PHASE_ACCESS_IDENTITY,
 * after it (limits by role or by claim), both before the request may wait
 * for an executor; it is on the lists only while some limit is set.  A request handed to an executor carries its state there
 * (the routes counted, the client's address key), and the executor counts
 * the routes it runs beyond those.  Each limit counts a request once,
 * however often the pipeline looks at its routes.  A refusal is a complete answer: 429 with
 * Retry-After, RateLimit and RateLimit-Policy, counted under the route in
 * webgres.route_stats.  The check reads of the request only its
 * connection's peer address, and that only when a limit keyed by address
 * applies.
 */
#ifndef WEBGRES_RATE_LIMIT_H
#define WEBGRES_RATE_LIMIT_H

#include "datatype/timestamp.h"
#include "routes/routes.h"
#include "serve/auth.h"

struct st_h2o_req_t;
struct st_h2o_conn_t;

/*
 * Routes whose own limits one request's state remembers having counted; a
 * request that matches more limited routes than this counts again (never
 * less) in the ones beyond.
 */
#define RATE_LIMIT_MAX_COUNTED 8

/* What the limits have counted of one request. */
typedef struct RateLimitState
{
	struct st_h2o_conn_t *client;	/* whose address; NULL: see has_key */
	bool		has_key;		/* no client: key is its address key */
	uint64		key[2];			/* the client's address key, if has_key */
	TimestampTz now;			/* the request's clock */
	bool		server_done;	/* the server's limit counted it */
	int			ndone;			/* entries in route_done */
	int64		route_done[RATE_LIMIT_MAX_COUNTED];	/* routes whose own limit counted it */
} RateLimitState;

/* Defines webgres.rate_limit and its companions; from define_settings(). */
extern void rate_limit_define_settings(void);

/*
 * Starts a request that came on client at now.  An executor instead
 * starts from the state the worker handed over (client NULL, has_key).
 */
extern void rate_limit_begin(RateLimitState *st, struct st_h2o_conn_t *client,
							 TimestampTz now);

/* Fills in st's address key from its connection, to hand the request on. */
extern void rate_limit_take_key(RateLimitState *st);

#endif
