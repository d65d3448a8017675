/*
 * route_placement.c
 *		Per-route execution state shared by every worker and executor.
 *
 * The table is open-addressed on the route id with linear probing; an
 * entry is claimed with a compare-and-swap on its id and never given back,
 * so lookups need no lock and a worker may keep a pointer to its routes'
 * entries.  Counters are atomics.  A process that exits gives back what it
 * holds (see handoff.c); a crash resets shared memory with everything else.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "common/hashfn.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "core/shmem.h"
#include "routes/route_placement.h"
#include "core/settings.h"

/* webgres.inline_budget's default and most, in milliseconds. */
#define INLINE_BUDGET_DEFAULT_MS 10
#define INLINE_BUDGET_MAX_MS 60000

/* webgres.inline_budget (route_placement_define_settings); route_placement.h declares it. */
static int	webgres_inline_budget = INLINE_BUDGET_DEFAULT_MS;

/* Routes that can have shared state at once; a power of two. */
#define ROUTE_PLACEMENT_SLOTS 4096

/*
 * Mode auto returns a slow route to the event loop after this many
 * consecutive executor runs shorter than half of webgres.inline_budget: the
 * margin and the count keep a route near the budget from flapping.
 */
#define AUTO_FAST_RUNS_TO_RETURN 8

struct RoutePlacement
{
	pg_atomic_uint64 route_id;	/* 0: free */
	pg_atomic_uint32 slow;
	pg_atomic_uint32 fast_runs;
	pg_atomic_uint32 running;
	pg_atomic_uint32 queued;
};

static RoutePlacement *table = NULL;

PG_FUNCTION_INFO_V1(webgres_route_execution);

/* Bytes of shared memory the routes' limits take. */
static Size
table_size(void)
{
	return mul_size(ROUTE_PLACEMENT_SLOTS, sizeof(RoutePlacement));
}

/* Sets up the limits' table when its shared memory is created. */
static void
limits_init(void *mem)
{
	RoutePlacement *t = (RoutePlacement *) mem;

	for (int i = 0; i < ROUTE_PLACEMENT_SLOTS; i++)
	{
		pg_atomic_init_u64(&t[i].route_id, 0);
		pg_atomic_init_u32(&t[i].slow, 0);
		pg_atomic_init_u32(&t[i].fast_runs, 0);
		pg_atomic_init_u32(&t[i].running, 0);
		pg_atomic_init_u32(&t[i].queued, 0);
	}
}

/* Asks for the limits' shared memory; at module load. */
void
route_placement_shmem_request(void)
{
	shmem_piece("webgres route limits", table_size(), (void **) &table, limits_init);
}

/* The route's entry, created on first use. */
RoutePlacement *
route_placement_get(int64 route_id)
{
	uint32		h;

	if (table == NULL || route_id <= 0)
		return NULL;
	h = (uint32) hash_bytes_uint32((uint32) route_id ^ (uint32) (route_id >> 32));
	for (int probe = 0; probe < ROUTE_PLACEMENT_SLOTS; probe++)
	{
		RoutePlacement *rl = &table[(h + probe) & (ROUTE_PLACEMENT_SLOTS - 1)];
		uint64		id = pg_atomic_read_u64(&rl->route_id);

		if (id == (uint64) route_id)
			return rl;
		if (id == 0)
		{
			uint64		expected = 0;

			if (pg_atomic_compare_exchange_u64(&rl->route_id, &expected, (uint64) route_id) ||
				expected == (uint64) route_id)
				return rl;
		}
	}
	return NULL;
}

/* Whether mode auto currently runs the route on executors. */
bool
route_placement_is_slow(RoutePlacement *rl)
{
	return rl != NULL && pg_atomic_read_u32(&rl->slow) != 0;
}

/* A run on the event loop went past webgres.inline_budget. */
void
route_placement_mark_slow(RoutePlacement *rl)
{
	if (rl == NULL)
		return;
	pg_atomic_write_u32(&rl->fast_runs, 0);
	pg_atomic_write_u32(&rl->slow, 1);
}

/* An executor ran the route in elapsed_ms. */
void
route_placement_observe_run(RoutePlacement *rl, long elapsed_ms)
{
	if (rl == NULL)
		return;
	if (elapsed_ms > webgres_inline_budget)
		route_placement_mark_slow(rl);
	else if (elapsed_ms * 2 <= webgres_inline_budget &&
			 pg_atomic_read_u32(&rl->slow) != 0 &&
			 pg_atomic_add_fetch_u32(&rl->fast_runs, 1) >= AUTO_FAST_RUNS_TO_RETURN)
	{
		pg_atomic_write_u32(&rl->slow, 0);
		pg_atomic_write_u32(&rl->fast_runs, 0);
	}
}

/* Increments counter if it is below limit; true if it did. */
static bool
increment_below(pg_atomic_uint32 *counter, uint32 limit)
{
	uint32		cur = pg_atomic_read_u32(counter);

	while (cur < limit)
	{
		if (pg_atomic_compare_exchange_u32(counter, &cur, cur + 1))
			return true;
	}
	return false;
}

/* Admits one more running request if fewer than cap run. */
bool
route_placement_try_run(RoutePlacement *rl, int cap)
{
	return rl == NULL || increment_below(&rl->running, (uint32) cap);
}

/* A request admitted by route_placement_try_run has finished. */
void
route_placement_end_run(RoutePlacement *rl)
{
	if (rl != NULL)
		pg_atomic_sub_fetch_u32(&rl->running, 1);
}

/* Takes a place in the route's queue if fewer than max wait. */
bool
route_placement_try_queue(RoutePlacement *rl, int max)
{
	return rl != NULL && increment_below(&rl->queued, (uint32) max);
}

/* Gives back a place taken with route_placement_try_queue. */
void
route_placement_leave_queue(RoutePlacement *rl)
{
	if (rl != NULL)
		pg_atomic_sub_fetch_u32(&rl->queued, 1);
}

/* The cap of a route whose max_concurrency is NULL. */
int
route_placement_default_cap(void)
{
	/* Half the executors, so that one route's flood leaves room for others. */
	return Max(1, webgres_executors / 2);
}

/* webgres.inline_budget in milliseconds. */
int
route_placement_inline_budget_ms(void)
{
	return webgres_inline_budget;
}

/* Calls fn for each route with shared state; false without shared memory. */
bool
route_placement_walk(void (*fn) (int64 route_id, bool slow, int running, int queued, void *arg),
				  void *arg)
{
	if (table == NULL)
		return false;
	for (int i = 0; i < ROUTE_PLACEMENT_SLOTS; i++)
	{
		RoutePlacement *rl = &table[i];
		uint64		id = pg_atomic_read_u64(&rl->route_id);

		if (id == 0)
			continue;
		fn((int64) id, pg_atomic_read_u32(&rl->slow) != 0,
		   (int) pg_atomic_read_u32(&rl->running), (int) pg_atomic_read_u32(&rl->queued), arg);
	}
	return true;
}

/* webgres.route_execution(): one row per route with shared state. */
Datum
webgres_route_execution(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("webgres must be loaded via shared_preload_libraries to report route execution")));

	for (int i = 0; i < ROUTE_PLACEMENT_SLOTS; i++)
	{
		RoutePlacement *rl = &table[i];
		Datum		values[4];
		bool		nulls[4] = {0};
		uint64		id = pg_atomic_read_u64(&rl->route_id);

		if (id == 0)
			continue;
		values[0] = Int64GetDatum((int64) id);
		values[1] = BoolGetDatum(pg_atomic_read_u32(&rl->slow) != 0);
		values[2] = Int32GetDatum((int32) pg_atomic_read_u32(&rl->running));
		values[3] = Int32GetDatum((int32) pg_atomic_read_u32(&rl->queued));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Defines webgres.inline_budget; from _PG_init. */
void
route_placement_define_settings(void)
{
	DefineCustomIntVariable("webgres.inline_budget",
							"Longest time a handler of a route in mode auto runs on the event loop.",
							"A run that takes longer is cancelled and rolled back, the route "
							"is marked slow for every worker, and the request (or WebSocket "
							"message) is handed to an executor, where it runs again. 0 hands "
							"every request of an auto route to an executor, but for event "
							"streams and WebSocket upgrades, which stay on the worker's event "
							"loop. Has no effect when webgres.executors is 0.",
							&webgres_inline_budget,
							INLINE_BUDGET_DEFAULT_MS,
							0, INLINE_BUDGET_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}
