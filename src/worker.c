/*
 * worker.c
 *		An HTTP worker: a database backend running libh2o's event loop.
 *
 * One thread does everything: h2o parses a request, webgres routes it and
 * runs its handlers through SPI in one transaction, and h2o sends the
 * response.  Nothing is handed to another thread or process.  Signals wake
 * the loop through a self-pipe that h2o watches with the sockets.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/procsignal.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/ps_status.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "errors.h"
#include "events.h"
#include "handler.h"
#include "http_guard.h"
#include "listen.h"
#include "request.h"
#include "response.h"
#include "routes.h"
#include "stats.h"
#include "timeouts.h"
#include "webgres.h"

typedef struct Listener
{
	h2o_socket_t *sock;
	ListenAddress addr;
} Listener;

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;
static MemoryContext request_cxt;

/*
 * Requests answered from a constant route's cached response run no
 * transaction, so they do not see invalidations: one goes the slow way at
 * least this often, which bounds how stale such a route can be.
 */
#define CONSTANT_ROUTE_RECHECK_MS 100
static TimestampTz last_transaction_at = 0;

/*
 * The transaction shared by the read-only requests of one pass of the event
 * loop (webgres.share_read_transactions).  It is committed before the loop
 * waits again, before a request that may write, and after this many
 * requests, so that nothing is held for long.
 */
#define SHARED_XACT_MAX_REQUESTS 64
static bool shared_xact_open = false;
static int	shared_xact_requests = 0;

/* A route was reported to pg_stat_activity since the worker last waited. */
static bool activity_reported = false;

static int	wakeup_pipe[2] = {-1, -1};
static int	worker_index;

/* ---- signals ---- */

static void
wake_loop(void)
{
	if (wakeup_pipe[1] >= 0)
	{
		char		c = 0;

		/* A full pipe already holds a wake-up: nothing is lost. */
		if (write(wakeup_pipe[1], &c, 1) < 0)
			return;
	}
}

static void
worker_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	die(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

static void
worker_sighup(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SignalHandlerForConfigReload(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

static void
worker_sigusr1(SIGNAL_ARGS)
{
	int			save_errno = errno;

	/* Barriers and other process signals need the loop to come round. */
	procsignal_sigusr1_handler(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

static void
on_wakeup(h2o_socket_t *sock, const char *err)
{
	char		buf[64];

	while (read(wakeup_pipe[0], buf, sizeof(buf)) > 0)
		;
	/* The main loop looks at the pending flags after each run. */
}

/* ---- serving ---- */

/*
 * Logs the error in full, rolls back, and turns it into a response.  Runs in
 * the error-recovery path, so it must not raise.
 */
static void
answer_error(h2o_req_t *req, const char *route_label, TimestampTz started,
			 char **body, size_t *bodylen)
{
	ErrorData  *edata;
	bool		chosen;
	int			status;
	const char *message;

	MemoryContextSwitchTo(request_cxt);
	EmitErrorReport();
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	shared_xact_open = false;
	stats_count(STAT_HANDLER_ERRORS);
	disable_timeout(STATEMENT_TIMEOUT, false);
	QueryCancelPending = false;

	status = http_status_for_sqlstate(edata->sqlerrcode, &chosen);
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		(webgres_handler_timeout == 0 ||
		 TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()) + 5 < webgres_handler_timeout))
		status = 503;			/* cancelled from outside, not by the timeout */

	if (chosen || (status < 500 && status != 403) || webgres_expose_errors)
		message = edata->message ? edata->message : http_reason(status);
	else
		message = http_reason(status);
	if (status == 504 && !webgres_expose_errors)
		message = "handler timed out";

	/* h2o may have got partial headers from a failed row: start clean. */
	req->res.headers = (h2o_headers_t) {NULL};
	response_simple(req, status, message, body, bodylen);
	(void) route_label;
}

static const char *
allowed_methods(RouteTable *routes, PathSegments *segs, PathCapture *caps)
{
	StringInfoData allow;
	bool		any = false;

	initStringInfo(&allow);
	for (int i = 0; i < routes->nroutes; i++)
	{
		Route	   *r = &routes->routes[i];

		if (pattern_match(&r->pattern, segs, caps) < 0)
			continue;
		if (r->method == NULL)
			any = true;
		else if (strstr(allow.data, r->method) == NULL)
			appendStringInfo(&allow, "%s%s", allow.len ? ", " : "", r->method);
	}
	if (any)
		return NULL;
	if (strstr(allow.data, "GET") && !strstr(allow.data, "HEAD"))
		appendStringInfoString(&allow, ", HEAD");
	return allow.data;
}

static bool
method_matches(const Route *r, h2o_req_t *req, bool is_head)
{
	size_t		len;

	if (r->method == NULL)
		return true;
	len = strlen(r->method);
	if (is_head)
		return len == 3 && memcmp(r->method, "GET", 3) == 0;
	return len == req->method.len && memcmp(r->method, req->method.base, len) == 0;
}

/*
 * Looks at the routes the request matches in the table as last loaded,
 * without a transaction.  Answers from the cached response of a constant
 * route, if the first match is one and the table was checked recently, and
 * returns true.  Otherwise sets *share to whether every match has a handler
 * that can share a read-only transaction; serve() checks again with the
 * current table.
 */
static bool
look_up_without_transaction(h2o_req_t *req, const PathSegments *segs, bool is_head,
							TimestampTz now, bool *share, char **body, size_t *bodylen)
{
	RouteTable *routes = routes_peek();
	PathCapture caps[MAX_PATH_SEGMENTS + 1];
	bool		first = true;
	bool		may_share = webgres_share_read_transactions &&
		DefaultXactIsoLevel == XACT_READ_COMMITTED;

	*share = false;
	if (routes == NULL)
		return false;

	for (int i = 0; i < routes->nroutes; i++)
	{
		Route	   *r = &routes->routes[i];

		if (pattern_match(&r->pattern, segs, caps) < 0 || !method_matches(r, req, is_head))
			continue;
		if (first && r->cached != NULL &&
			now - last_transaction_at <= CONSTANT_ROUTE_RECHECK_MS * 1000)
		{
			response_replay(req, r->cached, body, bodylen);
			stats_count(STAT_FROM_MEMORY);
			return true;
		}
		first = false;
		if (!may_share || !handler_can_share(r))
			return false;
		*share = true;
	}
	return false;
}

/*
 * Commits the shared transaction, if one is open.  A read-only transaction
 * has nothing to lose, but should its commit fail the worker goes on.
 */
static void
end_shared_transaction(void)
{
	if (!shared_xact_open)
		return;
	shared_xact_open = false;
	PG_TRY();
	{
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
}

/*
 * Routes and answers one request.  Returns with the response ready to send
 * in req->res and *body.
 */
static void
serve(h2o_req_t *req, char **body, size_t *bodylen)
{
	RequestData rd;
	const char *volatile label = NULL;
	TimestampTz started;
	bool		is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
	size_t		pathlen = (req->query_at == SIZE_MAX) ? req->path.len : req->query_at;
	PathSegments segs;
	bool		split = path_split(req->path.base, pathlen, &segs);
	bool		share = false;
	volatile bool restart;

	/* One clock reading serves both the cache check and the statement. */
	SetCurrentStatementStartTimestamp();
	started = GetCurrentStatementStartTimestamp();
	if (split && look_up_without_transaction(req, &segs, is_head, started, &share,
											 body, bodylen))
		return;

	last_transaction_at = started;
	activity_reported = true;
	request_init(&rd, req, request_cxt);

again:
	restart = false;
	if (!share || shared_xact_requests >= SHARED_XACT_MAX_REQUESTS)
		end_shared_transaction();

	PG_TRY();
	{
		RouteTable *routes;
		PathCapture *caps;
		bool		path_matched = false;
		bool		method_matched = false;
		bool		answered = false;

		if (!shared_xact_open)
		{
			StartTransactionCommand();
			if (share)
			{
				/* A handler that writes after all fails rather than share. */
				XactReadOnly = true;
				shared_xact_open = true;
				shared_xact_requests = 0;
			}
		}
		shared_xact_requests++;
		PushActiveSnapshot(GetTransactionSnapshot());
		routes = routes_current();
		routes_forget_stale_responses(routes);

		if (!routes->installed)
			response_simple(req, 503, "Service Unavailable", body, bodylen);
		else if (!split)
			response_simple(req, rd.pathlen > 0 && rd.path[0] == '/' ? 414 : 400,
							rd.pathlen > 0 && rd.path[0] == '/' ? "URI Too Long" : "Bad Request",
							body, bodylen);
		else
		{
			int			nguc = NewGUCNestLevel();

			caps = palloc(sizeof(PathCapture) * (routes->max_captures + 1));
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			if (webgres_handler_timeout > 0)
				enable_timeout_after(STATEMENT_TIMEOUT, webgres_handler_timeout);

			for (int i = 0; i < routes->nroutes && !answered; i++)
			{
				Route	   *r = &routes->routes[i];
				int			ncaps = pattern_match(&r->pattern, &segs, caps);

				if (ncaps < 0)
					continue;
				path_matched = true;
				if (!method_matches(r, req, is_head))
					continue;
				method_matched = true;
				if (shared_xact_open && !handler_can_share(r))
				{
					/* The route or its plan changed since the request was looked at. */
					restart = true;
					break;
				}
				label = r->label;
				pgstat_report_activity(STATE_RUNNING, r->label);
				request_set_captures(&rd, caps, ncaps);
				answered = handler_run(r, &rd, body, bodylen);
			}

			if (webgres_handler_timeout > 0)
				disable_timeout(STATEMENT_TIMEOUT, false);
			SPI_finish();
			/* Settings a handler changed with set_config() end with the request. */
			AtEOXact_GUC(false, nguc);

			if (!answered && !restart)
			{
				const char *allow = (path_matched && !method_matched) ?
					allowed_methods(routes, &segs, caps) : NULL;

				if (allow != NULL && allow[0] != '\0')
				{
					response_simple(req, 405, "Method Not Allowed", body, bodylen);
					h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
								   allow, strlen(allow));
				}
				else
					response_simple(req, 404, "Not Found", body, bodylen);
			}
		}
		PopActiveSnapshot();
		if (!shared_xact_open)
			CommitTransactionCommand();
	}
	PG_CATCH();
	{
		answer_error(req, label, started, body, bodylen);
	}
	PG_END_TRY();

	/* Event streams: a route that LISTENed catches up and streams (events.c). */
	if (events_pending())
		events_second_phase(&rd, body, bodylen);

	if (restart)
	{
		share = false;
		goto again;
	}
}

static int
on_req(h2o_handler_t *self, h2o_req_t *req)
{
	static h2o_generator_t generator = {NULL, NULL};
	char	   *body = NULL;
	size_t		bodylen = 0;
	h2o_iovec_t buf;

	bool		streaming;

	if (http_guard_check(req, &body, &bodylen))
		serve(req, &body, &bodylen);
	/* Event streams: the response is already under way (sse.c). */
	streaming = events_stream_started();
	MemoryContextReset(request_cxt);
	stats_count_response(req->res.status);
	if (streaming)
		return 0;

	buf = h2o_iovec_init(body, bodylen);
	h2o_start_response(req, &generator);
	h2o_send(req, &buf, bodylen > 0 ? 1 : 0, H2O_SEND_STATE_FINAL);
	return 0;
}

static void
on_accept(h2o_socket_t *listener, const char *err)
{
	/* Take what is queued, a bounded batch at a time, to stay fair. */
	for (int i = 0; i < 16; i++)
	{
		h2o_socket_t *sock;

		if (err != NULL || (sock = h2o_evloop_socket_accept(listener)) == NULL)
			return;
		h2o_accept(&accept_ctx, sock);
	}
}

/* ---- set-up and main loop ---- */

static void
apply_settings(void)
{
	config.max_request_entity_size = (size_t) webgres_max_body_size;
	config.http1.req_timeout = timeouts_backstop_ms();
}

static void
setup_h2o(void)
{
	h2o_hostconf_t *hostconf;
	h2o_pathconf_t *pathconf;
	h2o_handler_t *handler;

	h2o_config_init(&config);
	config.server_name = h2o_iovec_init(H2O_STRLIT(WEBGRES_SERVER_NAME));
	apply_settings();

	hostconf = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	pathconf = h2o_config_register_path(hostconf, "/", 0);
	handler = h2o_create_handler(pathconf, sizeof(*handler));
	handler->on_req = on_req;

	h2o_context_init(&ctx, h2o_evloop_create(), &config);
	timeouts_start(&ctx);
	events_init(&ctx);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
}

static void
open_listeners(void)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;

	if (!listen_parse(webgres_listen, &addrs, &naddrs, &error))
		ereport(FATAL,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for webgres.listen: %s", error)));
	for (int i = 0; i < naddrs; i++)
	{
		int			fd = listen_open(&addrs[i]);
		h2o_socket_t *sock = h2o_evloop_socket_create(ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);

		h2o_socket_read_start(sock, on_accept);
	}
}

static void
open_wakeup_pipe(void)
{
	h2o_socket_t *sock;

	if (pipe2(wakeup_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not create wake-up pipe: %m")));
	sock = h2o_evloop_socket_create(ctx.loop, wakeup_pipe[0], H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(sock, on_wakeup);
}

void
webgres_worker_main(Datum main_arg)
{
	worker_index = DatumGetInt32(main_arg);

	pqsignal(SIGHUP, worker_sighup);
	pqsignal(SIGTERM, worker_sigterm);
	pqsignal(SIGUSR1, worker_sigusr1);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(webgres_database, NULL, 0);
	pgstat_report_appname(psprintf("webgres worker %d", worker_index));

	request_cxt = AllocSetContextCreate(TopMemoryContext, "webgres request",
										ALLOCSET_DEFAULT_SIZES);
	stats_attach(worker_index);
	routes_init();
	setup_h2o();
	open_wakeup_pipe();
	open_listeners();

	ereport(LOG,
			(errmsg("webgres worker %d serving database \"%s\" on %s",
					worker_index, webgres_database, webgres_listen)));
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		/* The wait is bounded so that a lost postmaster is noticed. */
		h2o_evloop_run(ctx.loop, 1000);
		end_shared_transaction();
		/* Event streams: notifications in, idle channels UNLISTENed (events.c). */
		events_between_requests();
		if (activity_reported)
		{
			/* Reported once a pass: a worker that is not waiting is not idle. */
			pgstat_report_activity(STATE_IDLE, NULL);
			activity_reported = false;
		}

		if (ProcDiePending)
		{
			/* Event streams end with a clean end of response (events.c). */
			events_shutdown();
			break;
		}

		/*
		 * Absorb ProcSignalBarriers (DROP DATABASE and others wait for every
		 * backend to) and other interrupts.  A cancel request that arrives
		 * between requests has nothing to cancel.
		 */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_settings();
		}
		if (!PostmasterIsAlive())
			proc_exit(1);
		pgstat_report_stat(false);
	}

	proc_exit(0);
}
