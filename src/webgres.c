/*
 * webgres.c
 *		Module load: settings, and the supervisor that runs the HTTP workers.
 *
 * Everything that serves HTTP runs in background workers started by the
 * supervisor registered here, so the library must be in
 * shared_preload_libraries.  Loaded any other way (CREATE EXTENSION alone),
 * the settings and SQL functions work but nothing listens.
 */
#include "postgres.h"

#include <limits.h>
#include <unistd.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"

#include "listen.h"
#include "stats.h"
#include "webgres.h"

PG_MODULE_MAGIC;

char	   *webgres_listen = NULL;
int			webgres_workers = 1;
char	   *webgres_database = NULL;
int			webgres_handler_timeout = 30000;
int			webgres_max_body_size = 1024 * 1024;
bool		webgres_expose_errors = false;
int			webgres_request_timeout = 10000;
int			webgres_header_timeout = 10000;
int			webgres_body_timeout = 30000;
bool		webgres_share_read_transactions = false;

void		_PG_init(void);

static bool
check_listen(char **newval, void **extra, GucSource source)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;

	if (!listen_parse(*newval, &addrs, &naddrs, &error))
	{
		GUC_check_errdetail("%s", error);
		GUC_check_errhint("Use a comma-separated list of host:port entries, for example '127.0.0.1:8080' or '0.0.0.0:8080,[::]:8080'.");
		return false;
	}
	return true;
}

static int
online_cpus(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1) ? 1 : (n > 64 ? 64 : (int) n);
}

static void
define_settings(void)
{
	DefineCustomStringVariable("webgres.listen",
							   "Addresses the HTTP workers listen on.",
							   "A comma-separated list of host:port entries; "
							   "IPv6 hosts are written in brackets, as in [::1]:8080.",
							   &webgres_listen,
							   "127.0.0.1:8080",
							   PGC_POSTMASTER,
							   0,
							   check_listen, NULL, NULL);

	DefineCustomIntVariable("webgres.workers",
							"Number of HTTP worker processes.",
							"Each worker is a database backend with its own event loop "
							"and its own SO_REUSEPORT listening sockets. 0 stops serving. "
							"Changes take effect on reload. The default is the number of "
							"online CPUs.",
							&webgres_workers,
							online_cpus(),
							0, 256,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.database",
							   "Database whose routes the HTTP workers serve.",
							   "The webgres extension must be created in this database.",
							   &webgres_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.handler_timeout",
							"Longest time a request's handlers may run.",
							"A request whose handlers run longer is cancelled and "
							"answered 504. 0 turns the limit off.",
							&webgres_handler_timeout,
							30000,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.max_body_size",
							"Largest request body accepted.",
							"A request with a larger body is answered 413 without "
							"running any handler.",
							&webgres_max_body_size,
							1024 * 1024,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("webgres.expose_errors",
							 "Puts the SQL error message into 5xx response bodies.",
							 "Off by default, so that clients learn nothing about the "
							 "schema; errors are always logged in full.",
							 &webgres_expose_errors,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.request_timeout",
							"Longest time an idle connection is kept open.",
							"A connection on which no byte of a request has arrived "
							"for this long, after it was opened or after its last "
							"response, is closed without a response.",
							&webgres_request_timeout,
							10000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.header_timeout",
							"Longest time a client may take to send a request's line and headers.",
							"Counted from the first byte of the request. A client that "
							"takes longer is answered 408 and its connection closed, "
							"so slow clients cannot hold connections open.",
							&webgres_header_timeout,
							10000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.body_timeout",
							"Longest time a client may take to send a request's body.",
							"Counted from the end of the headers. A client that takes "
							"longer is answered 408 and its connection closed.",
							&webgres_body_timeout,
							30000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("webgres.share_read_transactions",
							 "Lets requests that only read share a transaction (off by default).",
							 "Requests a worker takes in one pass of its event loop whose "
							 "handlers cannot write (a SELECT with no volatile function, "
							 "locking clause or data-modifying WITH) run in one read-only "
							 "transaction, committed before the worker waits again or after "
							 "64 requests. Each still has its own snapshot, settings and "
							 "timeout, but now() is the shared transaction's start, and its "
							 "locks and xmin horizon are held across the requests. Applies "
							 "only when default_transaction_isolation is read committed.",
							 &webgres_share_read_transactions,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("webgres");
}

static void
register_supervisor(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	/* Serve on hot standbys too: handlers there run read-only. */
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "webgres");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "webgres_supervisor_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "webgres supervisor");
	snprintf(worker.bgw_type, BGW_MAXLEN, "webgres supervisor");
	RegisterBackgroundWorker(&worker);
}

void
_PG_init(void)
{
	define_settings();

	if (process_shared_preload_libraries_in_progress)
	{
		stats_shmem_request();
		register_supervisor();
	}
}
