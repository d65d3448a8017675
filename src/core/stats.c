/*
 * stats.c
 *		Per-worker request counters in shared memory.
 *
 * Each worker writes only its own slot, so counters are plain atomic reads
 * and writes without locks; webgres.worker_stats() reads every slot.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "core/settings.h"
#include "core/shmem.h"
#include "core/stats.h"

#define STATS_SLOTS WEBGRES_MAX_PROCESSES	/* the most webgres.workers allows */

typedef struct WorkerStats
{
	pg_atomic_uint32 pid;		/* 0: slot not in use */
	TimestampTz started_at;
	pg_atomic_uint64 counters[STAT_NCOUNTERS];
	pg_atomic_uint32 connections;	/* open now: a gauge, not a counter */
} WorkerStats;

static WorkerStats *slots = NULL;
static WorkerStats *my_slot = NULL;
/* Executors running now: a gauge each executor raises at start and lowers at exit. */
static pg_atomic_uint32 *executors_running = NULL;

PG_FUNCTION_INFO_V1(webgres_worker_stats);

/* Bytes of shared memory the counters take. */
static Size
stats_size(void)
{
	return mul_size(STATS_SLOTS, sizeof(WorkerStats));
}

/* Sets up the counters when their shared memory is created. */
static void
stats_init(void *mem)
{
	WorkerStats *s = (WorkerStats *) mem;

	for (int i = 0; i < STATS_SLOTS; i++)
	{
		pg_atomic_init_u32(&s[i].pid, 0);
		pg_atomic_init_u32(&s[i].connections, 0);
		for (int c = 0; c < STAT_NCOUNTERS; c++)
			pg_atomic_init_u64(&s[i].counters[c], 0);
	}
}

/* Sets up the executors' gauge when its shared memory is created. */
static void
executors_init(void *mem)
{
	pg_atomic_init_u32((pg_atomic_uint32 *) mem, 0);
}

/* Asks for the counters' and the executors' gauge's shared memory; at module load. */
void
stats_shmem_request(void)
{
	shmem_piece("webgres worker stats", stats_size(), (void **) &slots, stats_init);
	shmem_piece("webgres executors running", sizeof(pg_atomic_uint32),
				(void **) &executors_running, executors_init);
}

/*
 * At process exit: gives back this worker's slot, unless another process
 * has claimed it meanwhile (the supervisor starts none in a slot whose
 * worker is still running; this is the second guard).
 */
static void
stats_detach(int code, Datum arg)
{
	uint32		mine = (uint32) MyProcPid;

	if (my_slot != NULL)
		(void) pg_atomic_compare_exchange_u32(&my_slot->pid, &mine, 0);
	my_slot = NULL;
}

/* A worker claims its slot of counters. */
void
stats_attach(int worker_index)
{
	if (slots == NULL || worker_index < 0 || worker_index >= STATS_SLOTS)
		return;
	my_slot = &slots[worker_index];
	for (int c = 0; c < STAT_NCOUNTERS; c++)
		pg_atomic_write_u64(&my_slot->counters[c], 0);
	pg_atomic_write_u32(&my_slot->connections, 0);
	my_slot->started_at = GetCurrentTimestamp();
	pg_write_barrier();
	pg_atomic_write_u32(&my_slot->pid, (uint32) MyProcPid);
	on_shmem_exit(stats_detach, (Datum) 0);
}

/* An executor leaves the gauge at exit. */
static void
stats_executor_detach(int code, Datum arg)
{
	if (executors_running != NULL)
		pg_atomic_fetch_sub_u32(executors_running, 1);
}

/* An executor counts itself as running until it exits. */
void
stats_executor_attach(void)
{
	if (executors_running == NULL)
		return;
	pg_atomic_fetch_add_u32(executors_running, 1);
	on_shmem_exit(stats_executor_detach, (Datum) 0);
}

/* How many executors are running now (0 where shared memory is absent). */
int
stats_executors_running(void)
{
	return executors_running ? (int) pg_atomic_read_u32(executors_running) : 0;
}

/* Counts one event in this worker's slot. */
void
stats_count(StatsCounter counter)
{
	/* Only this process writes the slot: no locked add needed. */
	if (my_slot != NULL)
		pg_atomic_write_u64(&my_slot->counters[counter],
							pg_atomic_read_u64(&my_slot->counters[counter]) + 1);
}

/* Counts a response by its status class. */
void
stats_count_response(int status)
{
	stats_count(STAT_REQUESTS);
	if (status >= 200 && status < 300)
		stats_count(STAT_2XX);
	else if (status >= 300 && status < 400)
		stats_count(STAT_3XX);
	else if (status >= 400 && status < 500)
		stats_count(STAT_4XX);
	else if (status >= 500)
		stats_count(STAT_5XX);
}

/* Publishes how many client connections this worker holds open. */
void
stats_set_connections(int connections)
{
	if (my_slot != NULL)
		pg_atomic_write_u32(&my_slot->connections, (uint32) connections);
}

/* Calls fn for each running worker; false without shared memory. */
bool
stats_walk(void (*fn) (const StatsWorkerSnapshot *snap, void *arg), void *arg)
{
	if (slots == NULL)
		return false;
	for (int i = 0; i < STATS_SLOTS; i++)
	{
		WorkerStats *s = &slots[i];
		StatsWorkerSnapshot snap;
		uint32		pid = pg_atomic_read_u32(&s->pid);

		if (pid == 0)
			continue;
		pg_read_barrier();
		snap.worker = i;
		snap.pid = (int) pid;
		for (int c = 0; c < STAT_NCOUNTERS; c++)
			snap.counters[c] = pg_atomic_read_u64(&s->counters[c]);
		snap.connections = (int) pg_atomic_read_u32(&s->connections);
		fn(&snap, arg);
	}
	return true;
}

/*
 * webgres.worker_stats(): one row per running worker.  Extension versions
 * before 1.2 declare no connections column: a tuple is formed from as many
 * values as the declared row has, so theirs end before it.
 */
Datum
webgres_worker_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (slots == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("webgres must be loaded via shared_preload_libraries to report worker statistics")));

	for (int i = 0; i < STATS_SLOTS; i++)
	{
		WorkerStats *s = &slots[i];
		Datum		values[3 + STAT_NCOUNTERS + 1];
		bool		nulls[3 + STAT_NCOUNTERS + 1] = {0};
		uint32		pid = pg_atomic_read_u32(&s->pid);

		if (pid == 0)
			continue;
		pg_read_barrier();
		values[0] = Int32GetDatum(i);
		values[1] = Int32GetDatum((int32) pid);
		values[2] = TimestampTzGetDatum(s->started_at);
		for (int c = 0; c < STAT_NCOUNTERS; c++)
			values[3 + c] = Int64GetDatum((int64) pg_atomic_read_u64(&s->counters[c]));
		values[3 + STAT_NCOUNTERS] = Int32GetDatum((int32) pg_atomic_read_u32(&s->connections));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
