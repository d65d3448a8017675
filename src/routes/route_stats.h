/*
 * route_stats.h
 *		Per-route request counters and latency histograms in shared memory.
 *
 * Every worker and executor counts into one table, keyed by route id, that
 * webgres.route_stats and the Prometheus endpoint read.  Latency is counted
 * in fixed buckets whose upper bounds are route_stats_bucket_bound_us().
 */
#ifndef WEBGRES_ROUTE_STATS_H
#define WEBGRES_ROUTE_STATS_H

#include "datatype/timestamp.h"
#include "routes/route_modules.h"

/* Latency buckets: ROUTE_STATS_BOUNDS finite upper bounds, then +Inf. */
#define ROUTE_STATS_BOUNDS 17
#define ROUTE_STATS_BUCKETS (ROUTE_STATS_BOUNDS + 1)

/* What route_stats_count_event() counts besides responses. */
typedef enum RouteStatsEvent
{
	ROUTE_EVENT_HANDLER_ERROR,	/* the handler's transaction ended in an error */
	ROUTE_EVENT_QUEUE_FULL		/* refused: the route's executor queue was full */
} RouteStatsEvent;

/* A route's figures, summed over the table's stripes. */
typedef struct RouteStatsSnapshot
{
	int64		route_id;
	uint64		requests;
	uint64		status_class[5];	/* 1xx .. 5xx */
	uint64		handler_errors;
	uint64		timeouts;		/* answered 504 */
	uint64		queue_full;
	uint64		counters[ROUTE_MAX_COUNTERS];	/* the modules' counters
												 * (route_modules.h) */
	uint64		bytes_out;
	uint64		latency_sum_us;
	uint64		buckets[ROUTE_STATS_BUCKETS];	/* not cumulative */
} RouteStatsSnapshot;

/* Module load: ask for shared memory (when preloaded). */
extern void route_stats_shmem_request(void);

/*
 * Counts one response of route_id with its status, body bytes sent and the
 * time since started (when the pipeline began routing it).  A route id of
 * 0 (no route answered) counts nothing.
 */
extern void route_stats_count(int64 route_id, int status, uint64 bytes,
							  TimestampTz started);

/* Counts an event of route_id that is not a response. */
extern void route_stats_count_event(int64 route_id, RouteStatsEvent event);

/*
 * Counts one refusal of route_id by the pipeline module of index module
 * (serve/phase_list.h), in the counter it declared (route_modules.h).
 */
extern void route_stats_count_module(int64 route_id, int module);

/* Upper bound of latency bucket i, in microseconds (i < ROUTE_STATS_BOUNDS). */
extern int64 route_stats_bucket_bound_us(int i);

/*
 * Calls fn for every route with counts, in table order; false if the
 * shared table does not exist (webgres not preloaded).
 */
extern bool route_stats_walk(void (*fn) (const RouteStatsSnapshot *snap, void *arg),
							 void *arg);

/* The q-quantile of a histogram, in microseconds, as Prometheus estimates it. */
extern double route_stats_quantile_us(const RouteStatsSnapshot *snap, double q);

/* Defines webgres.track_route_stats; from _PG_init. */
extern void route_stats_define_settings(void);

#endif
