/*
 * supervisor.c
 *		Keeps webgres.workers HTTP workers and webgres.executors executors running.
 *
 * The supervisor is a static background worker; the HTTP workers and the
 * executors are dynamic ones it registers with itself as the notify
 * process, so its latch is set whenever one starts or stops.  It restarts a
 * process that exits (with a growing delay while it keeps failing early, so
 * a bad setting does not spin) and resizes each pool when its setting
 * changes on reload.  After a crash restart of the cluster the postmaster
 * starts the supervisor again and it starts fresh pools.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "core/settings.h"
#include "http/listen.h"
#include "serve/auth.h"

/* Background worker entry point, looked up by name by the postmaster. */
extern PGDLLEXPORT void webgres_supervisor_main(Datum main_arg);

#define RESTART_DELAY_MIN_MS 100
#define RESTART_DELAY_MAX_MS 30000
/* A worker that ran at least this long was healthy: restart it at once. */
#define HEALTHY_RUN_MS 10000
/* A worker that could not be registered is tried again after this long. */
#define START_RETRY_MS 1000
/* With nothing to restart, the supervisor looks round at least this often. */
#define IDLE_WAIT_MS 10000L
/*
 * How long a supervisor told to stop lets its processes end by themselves
 * before it stops them, and how often it looks meanwhile.
 */
#define STOP_GRACE_MS 10000L
#define STOP_POLL_MS 100L

typedef struct WorkerSlot
{
	BackgroundWorkerHandle *handle;
	TimestampTz started_at;
	TimestampTz restart_at;		/* earliest time for the next start */
	int			delay_ms;		/* current back-off */
	bool		warned_no_slot;
	bool		stopping;		/* told to stop (the pool shrank); the slot,
								 * and the worker's stats slot of the same
								 * index, is free once it has */
} WorkerSlot;

/* A pool of identical processes kept at the size of a setting. */
typedef struct Pool
{
	const char *kind;			/* "worker", "executor": names and messages */
	const char *function;		/* entry point in the library */
	int		   *size;			/* the setting */
	WorkerSlot	slots[WEBGRES_MAX_PROCESSES];
} Pool;

static Pool workers = {"worker", "webgres_worker_main", &webgres_workers, {{0}}};
static Pool executors = {"executor", "webgres_executor_main", &webgres_executors, {{0}}};

/* Registers the dynamic background worker of slot index of pool. */
static bool
start_worker(Pool *pool, int index)
{
	BackgroundWorker worker;
	WorkerSlot *slot = &pool->slots[index];

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	worker.bgw_notify_pid = MyProcPid;
	worker.bgw_main_arg = Int32GetDatum(index);
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "webgres");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", pool->function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "webgres %s %d", pool->kind, index);
	snprintf(worker.bgw_type, BGW_MAXLEN, "webgres %s", pool->kind);

	if (!RegisterDynamicBackgroundWorker(&worker, &slot->handle))
	{
		slot->handle = NULL;
		if (!slot->warned_no_slot)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start webgres %s %d: no background worker slot is free",
							pool->kind, index),
					 errhint("Raise max_worker_processes (currently %d) to at least webgres.workers + webgres.executors + 1 plus what other extensions and parallel queries use, then restart PostgreSQL.",
							 max_worker_processes)));
		slot->warned_no_slot = true;
		return false;
	}
	slot->warned_no_slot = false;
	slot->started_at = GetCurrentTimestamp();
	return true;
}

/*
 * Brings the pool to its setting: starts missing or exited processes whose
 * back-off has passed, stops surplus ones.  Returns the time in ms until the
 * next pending restart, or -1 if none is pending.
 */
static long
reconcile(Pool *pool)
{
	TimestampTz now = GetCurrentTimestamp();
	long		next_ms = -1;
	int			i;

	for (i = 0; i < WEBGRES_MAX_PROCESSES; i++)
	{
		WorkerSlot *slot = &pool->slots[i];
		pid_t		pid;

		if (slot->handle != NULL &&
			GetBackgroundWorkerPid(slot->handle, &pid) == BGWH_STOPPED)
		{
			long		ran_ms = TimestampDifferenceMilliseconds(slot->started_at, now);

			pfree(slot->handle);
			slot->handle = NULL;
			if (slot->stopping)
			{
				/* Stopped as told: the slot may be started again at once. */
				slot->stopping = false;
				slot->delay_ms = 0;
				slot->restart_at = 0;
			}
			else if (i < *pool->size)
			{
				if (ran_ms >= HEALTHY_RUN_MS)
					slot->delay_ms = RESTART_DELAY_MIN_MS;
				else
					slot->delay_ms = Min(Max(slot->delay_ms * 2, RESTART_DELAY_MIN_MS),
										 RESTART_DELAY_MAX_MS);
				slot->restart_at = TimestampTzPlusMilliseconds(now, slot->delay_ms);
				ereport(LOG,
						(errmsg("webgres %s %d exited after %ld ms; restarting it in %d ms",
								pool->kind, i, ran_ms, slot->delay_ms)));
			}
		}

		if (i >= *pool->size)
		{
			/*
			 * The handle is kept until the process has gone: should the pool
			 * grow again meanwhile, a new process of this index (which would
			 * share its shared-memory slots, core/stats.c) waits for it.
			 * The postmaster tells this process (bgw_notify_pid) when it has.
			 */
			if (slot->handle != NULL && !slot->stopping)
			{
				TerminateBackgroundWorker(slot->handle);
				slot->stopping = true;
			}
			slot->delay_ms = 0;
			slot->restart_at = 0;
			continue;
		}

		if (slot->handle == NULL)
		{
			if (slot->restart_at <= now)
			{
				if (!start_worker(pool, i))
				{
					slot->restart_at = TimestampTzPlusMilliseconds(now, START_RETRY_MS);
					next_ms = (next_ms < 0) ? START_RETRY_MS : Min(next_ms, START_RETRY_MS);
				}
			}
			else
			{
				long		wait_ms = TimestampDifferenceMilliseconds(now, slot->restart_at) + 1;

				next_ms = (next_ms < 0) ? wait_ms : Min(next_ms, wait_ms);
			}
		}
	}
	return next_ms;
}

/* The sooner of two delays as reconcile returns them (-1: none). */
static long
sooner(long a, long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return Min(a, b);
}

/* Stops every process of the pool. */
static void
stop_pool(Pool *pool)
{
	for (int i = 0; i < WEBGRES_MAX_PROCESSES; i++)
		if (pool->slots[i].handle != NULL)
			TerminateBackgroundWorker(pool->slots[i].handle);
}

/* Whether any process of the pool is still running. */
static bool
pool_running(Pool *pool)
{
	for (int i = 0; i < WEBGRES_MAX_PROCESSES; i++)
	{
		pid_t		pid;

		if (pool->slots[i].handle != NULL &&
			GetBackgroundWorkerPid(pool->slots[i].handle, &pid) != BGWH_STOPPED)
			return true;
	}
	return false;
}

/*
 * Waits, up to STOP_GRACE_MS, for both pools to end by themselves.  In a
 * shutdown of the whole server the postmaster has sent each of them
 * SIGTERM already; a second one from here would make a worker that is
 * still ending its event streams die at once (worker.c), and its clients
 * would miss the end of their responses.
 */
static void
wait_for_pools_to_end(void)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), STOP_GRACE_MS);

	while ((pool_running(&workers) || pool_running(&executors)) &&
		   GetCurrentTimestamp() < until)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 STOP_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * The postmaster tells the notify process that a worker started or stopped
 * with SIGUSR1; the default handler of a worker without a database
 * connection does not set the latch, so the wait would sleep through it.
 */
static void
supervisor_sigusr1(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SetLatch(MyLatch);
	errno = save_errno;
}

/* Background worker entry point: starts the workers and executors and restarts them. */
void
webgres_supervisor_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGUSR1, supervisor_sigusr1);
	BackgroundWorkerUnblockSignals();

	ereport(LOG,
			(errmsg("webgres supervisor started: %d worker(s) and %d executor(s) serving database \"%s\" on %s",
					webgres_workers, webgres_executors, webgres_database, listen_setting())));
	auth_check_settings();

	while (!ShutdownRequestPending)
	{
		long		timeout_ms;
		long		worker_ms;

		if (ConfigReloadPending)
		{
			int			before = webgres_workers;
			int			before_executors = webgres_executors;

			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			auth_check_settings();
			if (webgres_workers != before)
				ereport(LOG,
						(errmsg("webgres.workers changed from %d to %d", before, webgres_workers)));
			if (webgres_executors != before_executors)
				ereport(LOG,
						(errmsg("webgres.executors changed from %d to %d",
								before_executors, webgres_executors)));
		}

		/*
		 * Workers first, in two statements (C leaves the order of a call's
		 * arguments open): when background-worker slots are short, the
		 * processes that listen get them before the executors.
		 */
		worker_ms = reconcile(&workers);
		timeout_ms = sooner(worker_ms, reconcile(&executors));
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms < 0 ? IDLE_WAIT_MS : timeout_ms,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/*
	 * On a clean shutdown request the postmaster stops the workers itself;
	 * stopping them here too, once they had time to end by themselves,
	 * keeps a supervisor stopped alone (SIGTERM to it) from leaving
	 * orphans beside the one the postmaster starts again.
	 */
	wait_for_pools_to_end();
	stop_pool(&workers);
	stop_pool(&executors);
	/*
	 * Exit code 1: the postmaster starts a supervisor stopped alone again
	 * (bgw_restart_time), with fresh pools; code 0 would unregister it, and
	 * webgres would serve nothing until the server restarts.  In a shutdown
	 * of the server nothing is started again either way.
	 */
	proc_exit(1);
}
