/*
 * settings.c
 *		Every webgres setting (GUC): its variable, default, limits and
 *		description, defined in one place.
 */
#include "postgres.h"

#include <limits.h>
#include <unistd.h>

#include "utils/guc.h"

#include "common/settings.h"
#include "exec/handoff_frame.h"
#include "module/settings_define.h"

/* The modules that define their own settings, declared from settings_list.h. */
#define SETTINGS_MODULE(name) extern void name##_define_settings(void);
#include "module/settings_list.h"
#undef SETTINGS_MODULE

/*
 * The settings' variables.  Each default is written once, as the boot value
 * in define_settings(), which _PG_init() calls before anything reads them.
 */
int			webgres_workers;
char	   *webgres_database;
int			webgres_handler_timeout;
int			webgres_max_body_size;
bool		webgres_expose_errors;
bool		webgres_share_read_transactions;
int			webgres_executors;
int			webgres_inline_budget;
int			webgres_max_queue;
int			webgres_stream_timeout;
int			webgres_sse_heartbeat;
int			webgres_sse_buffer_limit;
int			webgres_events_read_limit;
char	   *webgres_primary_url;
bool		webgres_track_route_stats;
bool		webgres_compress;
int			webgres_compress_min_size;

/* webgres.workers' default is one per CPU, up to this many. */
#define DEFAULT_WORKERS_MAX 64

/* The number of CPUs online, between 1 and DEFAULT_WORKERS_MAX. */
static int
online_cpus(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1) ? 1 : (n > DEFAULT_WORKERS_MAX ? DEFAULT_WORKERS_MAX : (int) n);
}

/* The primary's URL is empty or an http(s) origin with an optional path prefix. */
static bool
check_primary_url(char **newval, void **extra, GucSource source)
{
	const char *u = *newval;
	const char *rest;

	if (u == NULL || u[0] == '\0')
		return true;
	if (strncmp(u, "https://", 8) == 0)
		rest = u + 8;
	else if (strncmp(u, "http://", 7) == 0)
		rest = u + 7;
	else
		rest = NULL;
	if (rest == NULL || rest[0] == '\0' || rest[0] == '/' ||
		strpbrk(u, "?# \t\r\n") != NULL || u[strlen(u) - 1] == '/')
	{
		GUC_check_errdetail("webgres.primary_url must be an http:// or https:// URL with a host, no query and no trailing slash.");
		GUC_check_errhint("For example 'https://db1.example:8443'.");
		return false;
	}
	return true;
}

/* Defines every webgres setting; from _PG_init. */
void
define_settings(void)
{
	DefineCustomIntVariable("webgres.workers",
							"Number of HTTP worker processes.",
							"Each worker is a database backend with its own event loop "
							"and its own SO_REUSEPORT listening sockets. 0 stops serving. "
							"Changes take effect on reload. The default is the number of "
							"online CPUs.",
							&webgres_workers,
							online_cpus(),
							0, WEBGRES_MAX_PROCESSES,
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

	DefineCustomStringVariable("webgres.primary_url",
							   "Where a standby sends requests that must write.",
							   "On a standby, a request whose route writes (or is an event "
							   "stream) is answered 307 to this URL plus its path and query. "
							   "Empty: such requests are answered 503 with Retry-After.",
							   &webgres_primary_url,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_primary_url, NULL, NULL);

	DefineCustomIntVariable("webgres.handler_timeout",
							"Longest time from a request's complete head to its response.",
							"Counted from when the request head was complete, so time "
							"spent waiting for an executor counts too; a request still "
							"without a response then is cancelled and answered 504. For a "
							"streamed response it bounds the time to the response head "
							"(webgres.stream_timeout bounds the rest). 0 turns the limit off.",
							&webgres_handler_timeout,
							30000,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.max_body_size",
							"Largest request body accepted.",
							"A request with a larger body is answered 413 without "
							"running any handler.  At most what one hand-off frame "
							"carries (1 GB less 16 MB), the largest body a handler "
							"could be given.",
							&webgres_max_body_size,
							1024 * 1024,
							0, FRAME_MAX_REQUEST_BODY,
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

	DefineCustomIntVariable("webgres.executors",
							"Number of executor processes that run handlers off the event loop.",
							"Executors are database backends that run the requests the HTTP "
							"workers hand to them: requests of routes in mode executor or "
							"stream, and "
							"of routes in mode auto once a run took longer than "
							"webgres.inline_budget. 0 runs every handler on the event loop. "
							"Changes take effect on reload.",
							&webgres_executors,
							2,
							0, WEBGRES_MAX_PROCESSES,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.inline_budget",
							"Longest time a handler of a route in mode auto runs on the event loop.",
							"A run that takes longer is cancelled and rolled back, the route "
							"is marked slow for every worker, and the request is handed to an "
							"executor, where it runs again. 0 hands every request of an auto "
							"route to an executor. Has no effect when webgres.executors is 0.",
							&webgres_inline_budget,
							10,
							0, 60000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.max_queue",
							"Most requests of one route that may wait for an executor.",
							"A request of a route that already runs max_concurrency requests "
							"waits in a queue; when that queue holds this many requests, it "
							"is answered 503 with Retry-After at once.",
							&webgres_max_queue,
							64,
							0, 100000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.stream_timeout",
							"Longest time a streamed response may take, from the request head to its last byte.",
							"webgres.handler_timeout bounds a streamed response only until its "
							"first batch of rows is fetched and its head sent; from then on this "
							"bounds the rest, however slowly the client reads. A stream that "
							"runs out is cut and its transaction rolled back. A stream holds "
							"its snapshot, and so the xmin horizon, while it lasts. 0 means no "
							"limit.",
							&webgres_stream_timeout,
							600000,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.sse_heartbeat",
							"Longest silence on an event stream before a heartbeat is sent.",
							"An event stream on which nothing was sent for this long gets "
							"an SSE comment line, which keeps proxies from closing it and "
							"shows a client that has gone. 0 sends none.",
							&webgres_sse_heartbeat,
							15000,
							0, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.sse_buffer_limit",
							"Most bytes an event stream may hold that its client has not taken.",
							"Events wait in the worker's memory until the client takes "
							"them; a client that leaves more than this waiting for a "
							"second while the worker offers it is disconnected, so that "
							"it costs the others nothing.",
							&webgres_sse_buffer_limit,
							1024 * 1024,
							1024, INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.events_read_limit",
							"Most notification bytes a worker keeps from one read of the notification queue.",
							"Postgres hands a listening worker everything queued for it in one "
							"read; what is over this limit is not kept, and the event streams "
							"that follow a channel that lost notifications are ended once the "
							"rest is delivered, so that their clients reconnect and catch up "
							"through the handler's rows.",
							&webgres_events_read_limit,
							64 * 1024 * 1024,
							16 * 1024, INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

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

	DefineCustomBoolVariable("webgres.compress",
							 "Compresses responses with gzip for clients that accept it.",
							 "Applies to responses of a compressible content type (text, JSON, "
							 "XML, JavaScript, CSV) of at least webgres.compress_min_size bytes, "
							 "streamed ones included, from routes whose compress column is not "
							 "false and from static files; to requests with credentials only "
							 "where the column is true. Never to HEAD, 206 or event streams.",
							 &webgres_compress,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.compress_min_size",
							"Smallest response body that is compressed.",
							"Smaller responses go out as they are: compressing them saves "
							"too little to pay for itself. A streamed response, whose size "
							"is not known in advance, is always compressed.",
							&webgres_compress_min_size,
							1024,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	/* The modules that define their own settings, one line each. */
#define SETTINGS_MODULE(name) name##_define_settings();
#include "module/settings_list.h"
#undef SETTINGS_MODULE

	MarkGUCPrefixReserved("webgres");
}
