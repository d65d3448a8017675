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
 * for an executor; it is on the lists only while some limit is set.  Its
 * state per request (the routes counted, the client's address key) is
 * its own slot of the request's PhaseStates, which crosses to an executor
 * in the REQUEST frame as bytes only this file writes and reads, and the
 * executor counts the routes it runs beyond those.  Each limit counts a request once,
 * however often the pipeline looks at its routes.  A refusal is a complete answer: 429 with
 * Retry-After, RateLimit and RateLimit-Policy, counted under the route in
 * webgres.route_stats.  The check reads of the request only its
 * connection's peer address, and that only when a limit keyed by address
 * applies.
 */
#ifndef WEBGRES_RATE_LIMIT_H
#define WEBGRES_RATE_LIMIT_H

/* Defines webgres.rate_limit and its companions; from define_settings(). */
extern void rate_limit_define_settings(void);

#endif
