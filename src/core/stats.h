/*
 * stats.h
 *		Per-worker request counters in shared memory, behind webgres.workers.
 */
#ifndef WEBGRES_STATS_H
#define WEBGRES_STATS_H

typedef enum StatsCounter
{
	STAT_REQUESTS,
	STAT_2XX,
	STAT_3XX,
	STAT_4XX,
	STAT_5XX,
	STAT_FROM_MEMORY,			/* answered from a constant route's cached response */
	STAT_HANDLER_ERRORS,		/* requests whose transaction ended in an error */
	STAT_ROUTE_LOADS,
	STAT_NCOUNTERS
} StatsCounter;

/* One running worker's counters, as stats_walk() reads them. */
typedef struct StatsWorkerSnapshot
{
	int			worker;
	int			pid;
	uint64		counters[STAT_NCOUNTERS];
	int			connections;
} StatsWorkerSnapshot;

/* Module load: ask for shared memory (when preloaded). */
extern void stats_shmem_request(void);

/* A worker claims its slot; counters start from zero. */
extern void stats_attach(int worker_index);

/* Counts one event in this worker's slot; a no-op outside workers. */
extern void stats_count(StatsCounter counter);

/* Counts a response by its status class. */
extern void stats_count_response(int status);

/* Publishes how many client connections this worker holds open. */
extern void stats_set_connections(int connections);

/* Calls fn for each running worker; false without shared memory. */
extern bool stats_walk(void (*fn) (const StatsWorkerSnapshot *snap, void *arg), void *arg);
/* An executor counts itself as running until it exits. */
extern void stats_executor_attach(void);

/* How many executors are running now. */
extern int	stats_executors_running(void);

#endif
