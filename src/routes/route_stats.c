/*
 * route_stats.c
 *		Per-route request counters and latency histograms in shared memory.
 *
 * The table is open-addressed on the route id with linear probing, like
 * route_placement.c: an entry is claimed with a compare-and-swap on its id, so
 * counting takes no lock.  Each entry holds ROUTE_STATS_STRIPES copies of
 * its counters, each on cache lines of its own; a process adds to the copy
 * its PGPROC number picks, so two workers counting the same route do not
 * fight over one cache line, and a reader sums the copies.  Counters are
 * atomics: a stripe may be shared by a worker and an executor.
 *
 * Entries are never given back one by one (a process finds a route's entry
 * by probing from its hash, and a hole would hide the entries after it);
 * webgres.route_stats_reset() with no route empties the whole table.  A
 * process that found an entry before such a reset may still add to it, so
 * a free entry is not known to be zero: whoever claims one marks it
 * ENTRY_CLAIMING, zeroes it, then writes its route id; others that meet
 * the mark wait the few microseconds that takes.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "core/pg_compat.h"
#include "core/shmem.h"
#include "routes/route_modules.h"
#include "routes/route_stats.h"

/* webgres.track_route_stats (route_stats_define_settings). */
static bool webgres_track_route_stats = true;

/* Entries this process found lately, by route id: a direct-mapped cache. */
#define ENTRY_CACHE_SIZE 64

/* Routes counted at once, until a reset; a power of two. */
#define ROUTE_STATS_SLOTS 1024
/* Copies of each route's counters; a power of two. */
#define ROUTE_STATS_STRIPES 8
/* A stripe takes whole cache lines: this many bytes. */
#define ROUTE_STATS_STRIPE_BYTES 256

/* An entry's id while the process claiming it zeroes its counters. */
#define ENTRY_CLAIMING PG_UINT64_MAX

/* Upper bounds of the latency buckets, in microseconds: 1-2.5-5 a decade. */
static const int64 bucket_bounds_us[ROUTE_STATS_BOUNDS] = {
	50, 100, 250, 500,
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000
};

/* A request is in exactly one bucket: requests are the buckets' sum. */
typedef struct StripeCounters
{
	pg_atomic_uint64 status_class[5];
	pg_atomic_uint64 handler_errors;
	pg_atomic_uint64 timeouts;
	pg_atomic_uint64 queue_full;
	pg_atomic_uint64 counters[ROUTE_MAX_COUNTERS];	/* the modules' (route_modules.h) */
	pg_atomic_uint64 bytes_out;
	pg_atomic_uint64 latency_sum_us;
	pg_atomic_uint64 buckets[ROUTE_STATS_BUCKETS];
} StripeCounters;

typedef union RouteStripe
{
	StripeCounters c;
	char		pad[ROUTE_STATS_STRIPE_BYTES];
} RouteStripe;

StaticAssertDecl(sizeof(StripeCounters) <= ROUTE_STATS_STRIPE_BYTES,
				 "route stats stripe too small");

typedef struct RouteStatsEntry
{
	union
	{
		pg_atomic_uint64 route_id;	/* 0: free */
		char		pad[PG_CACHE_LINE_SIZE];
	}			id;
	RouteStripe stripes[ROUTE_STATS_STRIPES];
} RouteStatsEntry;

static RouteStatsEntry *table = NULL;

typedef struct CachedEntry
{
	int64		route_id;
	RouteStatsEntry *entry;
} CachedEntry;

static CachedEntry entry_cache[ENTRY_CACHE_SIZE];

PG_FUNCTION_INFO_V1(webgres_route_stats);
PG_FUNCTION_INFO_V1(webgres_route_stats_reset);
PG_FUNCTION_INFO_V1(webgres_route_latency_quantile);
PG_FUNCTION_INFO_V1(webgres_route_latency_bounds);

/* The shared table's size in bytes. */
static Size
table_size(void)
{
	return mul_size(ROUTE_STATS_SLOTS, sizeof(RouteStatsEntry));
}

/* Sets every counter of an entry to zero. */
static void
zero_counters(RouteStatsEntry *e)
{
	for (int s = 0; s < ROUTE_STATS_STRIPES; s++)
	{
		StripeCounters *c = &e->stripes[s].c;
		pg_atomic_uint64 *first = &c->status_class[0];
		int			n = sizeof(StripeCounters) / sizeof(pg_atomic_uint64);

		for (int i = 0; i < n; i++)
			pg_atomic_write_u64(&first[i], 0);
	}
}

/* Sets up the table when its shared memory is created (zeroed: every counter 0). */
static void
stats_init(void *mem)
{
	RouteStatsEntry *t = (RouteStatsEntry *) mem;

	for (int i = 0; i < ROUTE_STATS_SLOTS; i++)
		pg_atomic_init_u64(&t[i].id.route_id, 0);
}

/* Asks for the table's shared memory; at module load. */
void
route_stats_shmem_request(void)
{
	shmem_piece("webgres route stats", table_size(), (void **) &table, stats_init);
}

/* An entry's id, once no process is in the middle of claiming it. */
static uint64
settled_id(RouteStatsEntry *e)
{
	uint64		id;

	while ((id = pg_atomic_read_u64(&e->id.route_id)) == ENTRY_CLAIMING)
		pg_spin_delay();
	return id;
}

/* The route's entry, claimed (and zeroed) on first use; NULL if the table is full. */
static RouteStatsEntry *
find_entry(int64 route_id)
{
	uint32		h;

	if (table == NULL || route_id <= 0)
		return NULL;
	h = (uint32) hash_bytes_uint32((uint32) route_id ^ (uint32) (route_id >> 32));
	for (int probe = 0; probe < ROUTE_STATS_SLOTS; probe++)
	{
		RouteStatsEntry *e = &table[(h + probe) & (ROUTE_STATS_SLOTS - 1)];
		uint64		id = settled_id(e);

		if (id == (uint64) route_id)
			return e;
		if (id == 0)
		{
			uint64		expected = 0;

			if (pg_atomic_compare_exchange_u64(&e->id.route_id, &expected, ENTRY_CLAIMING))
			{
				/* What a process counted after a reset freed it is not ours. */
				zero_counters(e);
				pg_atomic_write_u64(&e->id.route_id, (uint64) route_id);
				return e;
			}
			/* Another process claimed it meanwhile: look again at whose it is. */
			if (settled_id(e) == (uint64) route_id)
				return e;
		}
	}
	return NULL;
}

/*
 * find_entry() through this process' cache.  A cached entry is used only
 * while it still holds the route: a reset that empties the table frees
 * entries, and another route may claim one.
 */
static inline RouteStatsEntry *
entry_for(int64 route_id)
{
	CachedEntry *c = &entry_cache[route_id & (ENTRY_CACHE_SIZE - 1)];

	if (c->route_id == route_id && route_id > 0 &&
		pg_atomic_read_u64(&c->entry->id.route_id) == (uint64) route_id)
		return c->entry;
	c->entry = find_entry(route_id);
	c->route_id = c->entry != NULL ? route_id : 0;
	return c->entry;
}

/* This process' copy of the entry's counters. */
static inline StripeCounters *
my_stripe(RouteStatsEntry *e)
{
	int			n = MyProc != NULL ? MyProcNumber : MyProcPid;

	return &e->stripes[n & (ROUTE_STATS_STRIPES - 1)].c;
}

/* Counts one response of route_id: status, body bytes and latency. */
void
route_stats_count(int64 route_id, int status, uint64 bytes, TimestampTz started)
{
	RouteStatsEntry *e = webgres_track_route_stats ? entry_for(route_id) : NULL;
	StripeCounters *c;
	int64		us;
	int			b = 0;

	if (e == NULL)
		return;
	c = my_stripe(e);
	us = started != 0 ? GetCurrentTimestamp() - started : 0;
	if (us < 0)
		us = 0;
	while (b < ROUTE_STATS_BOUNDS && us > bucket_bounds_us[b])
		b++;
	if (status >= 100 && status < 600)
		pg_atomic_fetch_add_u64(&c->status_class[status / 100 - 1], 1);
	if (status == 504)
		pg_atomic_fetch_add_u64(&c->timeouts, 1);
	if (bytes > 0)
		pg_atomic_fetch_add_u64(&c->bytes_out, bytes);
	pg_atomic_fetch_add_u64(&c->latency_sum_us, (uint64) us);
	pg_atomic_fetch_add_u64(&c->buckets[b], 1);
}

/* Counts an event of route_id that is not a response. */
void
route_stats_count_event(int64 route_id, RouteStatsEvent event)
{
	RouteStatsEntry *e = webgres_track_route_stats ? entry_for(route_id) : NULL;

	if (e == NULL)
		return;
	if (event == ROUTE_EVENT_HANDLER_ERROR)
		pg_atomic_fetch_add_u64(&my_stripe(e)->handler_errors, 1);
	else
		pg_atomic_fetch_add_u64(&my_stripe(e)->queue_full, 1);
}

/* Counts a refusal by a pipeline module in its counter. */
void
route_stats_count_module(int64 route_id, int module)
{
	int			c = route_modules_counter_of(module);
	RouteStatsEntry *e = webgres_track_route_stats && c >= 0 ? entry_for(route_id) : NULL;

	if (e != NULL)
		pg_atomic_fetch_add_u64(&my_stripe(e)->counters[c], 1);
}

/* Upper bound of latency bucket i, in microseconds. */
int64
route_stats_bucket_bound_us(int i)
{
	Assert(i >= 0 && i < ROUTE_STATS_BOUNDS);
	return bucket_bounds_us[i];
}

/* Sums an entry's stripes into snap. */
static void
snapshot(RouteStatsEntry *e, uint64 id, RouteStatsSnapshot *snap)
{
	memset(snap, 0, sizeof(*snap));
	snap->route_id = (int64) id;
	for (int s = 0; s < ROUTE_STATS_STRIPES; s++)
	{
		StripeCounters *c = &e->stripes[s].c;

		for (int k = 0; k < 5; k++)
			snap->status_class[k] += pg_atomic_read_u64(&c->status_class[k]);
		snap->handler_errors += pg_atomic_read_u64(&c->handler_errors);
		snap->timeouts += pg_atomic_read_u64(&c->timeouts);
		snap->queue_full += pg_atomic_read_u64(&c->queue_full);
		for (int k = 0; k < ROUTE_MAX_COUNTERS; k++)
			snap->counters[k] += pg_atomic_read_u64(&c->counters[k]);
		snap->bytes_out += pg_atomic_read_u64(&c->bytes_out);
		snap->latency_sum_us += pg_atomic_read_u64(&c->latency_sum_us);
		for (int b = 0; b < ROUTE_STATS_BUCKETS; b++)
			snap->buckets[b] += pg_atomic_read_u64(&c->buckets[b]);
	}
	for (int b = 0; b < ROUTE_STATS_BUCKETS; b++)
		snap->requests += snap->buckets[b];
}

/* Calls fn for every route with counts, in table order. */
bool
route_stats_walk(void (*fn) (const RouteStatsSnapshot *snap, void *arg), void *arg)
{
	if (table == NULL)
		return false;
	for (int i = 0; i < ROUTE_STATS_SLOTS; i++)
	{
		uint64		id = pg_atomic_read_u64(&table[i].id.route_id);
		RouteStatsSnapshot snap;

		if (id == 0 || id == ENTRY_CLAIMING)
			continue;
		snapshot(&table[i], id, &snap);
		fn(&snap, arg);
	}
	return true;
}

/* The q-quantile of a histogram, in microseconds, as Prometheus estimates it. */
double
route_stats_quantile_us(const RouteStatsSnapshot *snap, double q)
{
	uint64		total = 0;
	uint64		below = 0;
	double		rank;

	for (int b = 0; b < ROUTE_STATS_BUCKETS; b++)
		total += snap->buckets[b];
	if (total == 0 || q < 0 || q > 1)
		return NAN;
	rank = q * (double) total;
	for (int b = 0; b < ROUTE_STATS_BOUNDS; b++)
	{
		uint64		in = snap->buckets[b];

		if (in > 0 && (double) (below + in) >= rank)
		{
			double		lower = b == 0 ? 0 : (double) bucket_bounds_us[b - 1];
			double		upper = (double) bucket_bounds_us[b];

			/* Linear within the bucket, as Prometheus' histogram_quantile. */
			return lower + (upper - lower) * ((rank - (double) below) / (double) in);
		}
		below += in;
	}
	/* In the +Inf bucket: the highest finite bound is all that is known. */
	return (double) bucket_bounds_us[ROUTE_STATS_BOUNDS - 1];
}

/* Errors out when the table is missing. */
static void
require_table(void)
{
	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("webgres must be loaded via shared_preload_libraries to report route statistics")));
}

#define ROUTE_STATS_COLUMNS 17

/*
 * The counter webgres.route_stats' rate_limited column shows.  The column
 * predates module counters and is kept as it was: it is the counter a
 * module declared by that name (the rate limits'), found by name so that
 * this file names no module; 0 without such a module.
 */
#define RATE_LIMITED_COUNTER "rate_limited"

/* The index of the counter called name, or -1. */
static int
counter_named(const char *name)
{
	for (int c = 0; c < route_modules_ncounters(); c++)
		if (strcmp(route_modules_counter(c)->counter, name) == 0)
			return c;
	return -1;
}

/* Adds one route's row to webgres.route_stats_raw()'s result. */
static void
put_row(const RouteStatsSnapshot *snap, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[ROUTE_STATS_COLUMNS];
	bool		nulls[ROUTE_STATS_COLUMNS] = {0};
	Datum		buckets[ROUTE_STATS_BUCKETS];
	double		qs[3] = {0.5, 0.9, 0.99};
	int			n = 0;
	int			rate_limited = counter_named(RATE_LIMITED_COUNTER);

	values[n++] = Int64GetDatum(snap->route_id);
	values[n++] = Int64GetDatum((int64) snap->requests);
	for (int k = 0; k < 5; k++)
		values[n++] = Int64GetDatum((int64) snap->status_class[k]);
	values[n++] = Int64GetDatum((int64) snap->handler_errors);
	values[n++] = Int64GetDatum((int64) snap->timeouts);
	values[n++] = Int64GetDatum((int64) snap->queue_full);
	values[n++] = Int64GetDatum((int64) snap->bytes_out);
	values[n++] = Float8GetDatum((double) snap->latency_sum_us / 1000.0);
	for (int i = 0; i < 3; i++)
	{
		double		us = route_stats_quantile_us(snap, qs[i]);

		nulls[n] = isnan(us);
		values[n++] = Float8GetDatum(isnan(us) ? 0 : us / 1000.0);
	}
	for (int b = 0; b < ROUTE_STATS_BUCKETS; b++)
		buckets[b] = Int64GetDatum((int64) snap->buckets[b]);
	values[n++] = PointerGetDatum(construct_array(buckets, ROUTE_STATS_BUCKETS, INT8OID,
												  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[n++] = Int64GetDatum(rate_limited >= 0 ? (int64) snap->counters[rate_limited] : 0);
	Assert(n == ROUTE_STATS_COLUMNS);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* webgres.route_stats_raw(): one row per counted route (the view joins routes). */
Datum
webgres_route_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	require_table();
	(void) route_stats_walk(put_row, rsinfo);
	return (Datum) 0;
}

/* webgres.route_latency_bounds(): the buckets' upper bounds in milliseconds. */
Datum
webgres_route_latency_bounds(PG_FUNCTION_ARGS)
{
	Datum		bounds[ROUTE_STATS_BOUNDS];

	for (int i = 0; i < ROUTE_STATS_BOUNDS; i++)
		bounds[i] = Float8GetDatum((double) bucket_bounds_us[i] / 1000.0);
	PG_RETURN_ARRAYTYPE_P(construct_array(bounds, ROUTE_STATS_BOUNDS, FLOAT8OID,
										  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/* webgres.route_latency_quantile(route, q): milliseconds, NULL with no requests. */
Datum
webgres_route_latency_quantile(PG_FUNCTION_ARGS)
{
	int64		route_id = PG_GETARG_INT64(0);
	double		q = PG_GETARG_FLOAT8(1);
	RouteStatsSnapshot snap;
	bool		found = false;

	require_table();
	if (isnan(q) || q < 0 || q > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quantile must be between 0 and 1, not %g", q)));
	for (int i = 0; i < ROUTE_STATS_SLOTS && !found; i++)
	{
		uint64		id = pg_atomic_read_u64(&table[i].id.route_id);

		if (id != 0 && id != ENTRY_CLAIMING && (int64) id == route_id)
		{
			snapshot(&table[i], id, &snap);
			found = true;
		}
	}
	if (found)
	{
		double		us = route_stats_quantile_us(&snap, q);

		if (!isnan(us))
			PG_RETURN_FLOAT8(us / 1000.0);
	}
	PG_RETURN_NULL();
}

/*
 * webgres.route_stats_reset([route]): zeroes one route's counters, or
 * empties the table.  A response being counted meanwhile may survive; an
 * entry freed keeps its counts until a route claims it (find_entry()).
 */
Datum
webgres_route_stats_reset(PG_FUNCTION_ARGS)
{
	require_table();
	for (int i = 0; i < ROUTE_STATS_SLOTS; i++)
	{
		uint64		id = pg_atomic_read_u64(&table[i].id.route_id);

		if (id == 0 || id == ENTRY_CLAIMING)
			continue;
		if (!PG_ARGISNULL(0) && (int64) id != PG_GETARG_INT64(0))
			continue;
		/* A freed entry is zeroed by whoever claims it next. */
		if (PG_ARGISNULL(0))
			pg_atomic_write_u64(&table[i].id.route_id, 0);
		else
			zero_counters(&table[i]);
	}
	PG_RETURN_VOID();
}

/* Defines webgres.track_route_stats; from _PG_init. */
void
route_stats_define_settings(void)
{
	DefineCustomBoolVariable("webgres.track_route_stats",
							 "Counts each route's requests, statuses and latency in shared memory.",
							 "What webgres.route_stats and the Prometheus endpoint report per "
							 "route. On by default: it costs a few atomic additions per request. "
							 "Turning it off stops the counting; what was counted stays.",
							 &webgres_track_route_stats,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}
