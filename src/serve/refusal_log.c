/*
 * refusal_log.c
 *		At most REFUSAL_LOG_BURST refusal lines per period and process; the
 *		rest counted and summarised (refusal_log.h).
 *
 * Postgres has no rate limit for its own log; libh2o logs nothing of the
 * kind.  Counting in the process that refuses needs no shared memory and
 * no lock: the bound is per process, so the log's rate is bounded by the
 * number of workers and executors.
 */
#include "postgres.h"

#include <time.h>

#include "serve/refusal_log.h"

/* The longest reason kept for the summary. */
#define REFUSAL_REASON_MAX 200

static time_t period_start = 0;
static int	logged_in_period = 0;
static uint64 left_out = 0;
static char last_reason[REFUSAL_REASON_MAX + 1];

/* Writes the summary of the refusals the period that ended left out. */
static void
summarise(void)
{
	ereport(LOG,
			(errmsg("webgres: %llu more refused requests in the last %d s were not logged",
					(unsigned long long) left_out, REFUSAL_LOG_PERIOD_S),
			 errdetail("The last one: %s.", last_reason),
			 errhint("At most %d refusals are logged in full every %d s by each process.",
					 REFUSAL_LOG_BURST, REFUSAL_LOG_PERIOD_S),
			 errhidestmt(true)));
	left_out = 0;
}

/* True if a refusal may be logged now; else it is counted. */
bool
refusal_log_allowed(const char *reason)
{
	time_t		now = time(NULL);

	if (now - period_start >= REFUSAL_LOG_PERIOD_S)
	{
		if (left_out > 0)
			summarise();
		period_start = now;
		logged_in_period = 0;
	}
	if (logged_in_period < REFUSAL_LOG_BURST)
	{
		logged_in_period++;
		return true;
	}
	left_out++;
	strlcpy(last_reason, reason, sizeof(last_reason));
	return false;
}

/* Writes the summary once the period with refusals left out is over. */
void
refusal_log_flush(void)
{
	if (left_out > 0 && time(NULL) - period_start >= REFUSAL_LOG_PERIOD_S)
		summarise();
}
