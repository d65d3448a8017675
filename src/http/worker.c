/*
 * worker.c
 *		An HTTP worker: a database backend running libh2o's event loop.
 *
 * One thread does everything: h2o parses a request, the pipeline
 * (pipeline.c) routes it and runs its handlers through SPI, and h2o sends
 * the response.  Nothing is handed to another thread or process.  This file
 * holds the event loop, signals, listeners and the h2o wiring; on_req()
 * only adapts h2o's handler callback to the pipeline.  Signals wake the
 * loop through a self-pipe that h2o watches with the sockets.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

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
#include "utils/ps_status.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/capacity.h"
#include "events/events.h"
#include "http/h2_guard.h"
#include "http/health.h"
#include "exec/handoff.h"
#include "http/http_guard.h"
#include "http/listen.h"
#include "http/metrics.h"
#include "serve/access_log.h"
#include "serve/pipeline.h"
#include "routes/route_stats.h"
#include "common/stats.h"
#include "http/timeouts.h"
#include "common/settings.h"

/* Background worker entry point, looked up by name by the postmaster. */
extern PGDLLEXPORT void webgres_worker_main(Datum main_arg);

typedef struct Listener
{
	h2o_socket_t *sock;
	ListenAddress addr;
} Listener;

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;

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
 * Sends a finished response: the one send point, for requests answered on
 * the loop and for those an executor answered.  A HEAD answer keeps the
 * GET's status, headers and Content-Length but sends no content (RFC 9110
 * 9.3.2): libh2o 2.2.5 sends whatever it is given, for HEAD too.
 */
/* Whether req is a HEAD request, whose answer has no content. */
static inline bool
is_head_request(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

static void
send_response(h2o_req_t *req, char *body, size_t bodylen)
{
	static h2o_generator_t generator = {NULL, NULL};
	h2o_iovec_t buf = h2o_iovec_init(body, bodylen);
	bool		is_head = is_head_request(req);

	stats_count_response(req->res.status);
	h2_guard_answered(req, bodylen);
	req->res.content_length = bodylen;
	h2o_start_response(req, &generator);
	if (is_head || bodylen == 0)
		h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
	else
		h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
}

/* Notes for the access and slow-request logs where the pipeline left req. */
static void
note_request(h2o_req_t *req, const PipelineRun *run)
{
	AccessNote *note = access_log_note(req);

	if (note == NULL)
		return;
	note->started = run->started;
	if (run->hand_off)
	{
		note->route_id = run->route_id;
		note->place = ACCESS_PLACE_EXECUTOR;
		note->handed_off = GetCurrentTimestamp();
	}
	else
	{
		note->route_id = run->answered_by;
		note->place = run->answered_by != 0 ? ACCESS_PLACE_LOOP : ACCESS_PLACE_NONE;
		note->answered = GetCurrentTimestamp();
	}
}

static int
on_req(h2o_handler_t *self, h2o_req_t *req)
{
	char	   *body = NULL;
	size_t		bodylen = 0;

	if (http_guard_check(req, &body, &bodylen) &&
		!health_try_answer(req, &body, &bodylen))
	{
		PipelineRun run;

		/* Health and metrics come before any route, from worker state. */
		if (metrics_try_answer(req))
			return 0;

		run.place = handoff_enabled() ? PIPELINE_ON_LOOP : PIPELINE_RUN_HERE;
		run.head_at = handoff_head_complete_at(req);
		run.sink = NULL;		/* streams run on executors */
		pipeline_run(req, &run, &body, &bodylen);
		note_request(req, &run);
		if (run.hand_off)
		{
			/* Answered through send_response() when the executor is done. */
			handoff_start(req, run.route_id, run.max_concurrency, run.head_at,
						  run.started, run.rerun);
			return 0;
		}
		/* A timeout is counted as such, not as the handler's error. */
		if (run.failed && req->res.status != 504)
			route_stats_count_event(run.answered_by, ROUTE_EVENT_HANDLER_ERROR);
		if (events_stream_started())
		{
			/* An event stream: its response is already under way (sse.c). */
			stats_count_response(req->res.status);
			route_stats_count(run.answered_by, req->res.status, 0, run.started);
			return 0;
		}
		send_response(req, body, bodylen);
		route_stats_count(run.answered_by, req->res.status,
						  is_head_request(req) ? 0 : bodylen, run.started);
		return 0;
	}
	send_response(req, body, bodylen);
	return 0;
}

static void
on_accept(h2o_socket_t *listener, const char *err)
{
	if (err == NULL)
		capacity_accept(listener);
}

/* ---- set-up and main loop ---- */

static void
apply_settings(void)
{
	config.max_request_entity_size = (size_t) webgres_max_body_size;
	config.http1.req_timeout = timeouts_backstop_ms();
	capacity_configure();
	access_log_configure();
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
	access_log_register(pathconf);

	h2o_context_init(&ctx, h2o_evloop_create(), &config);
	timeouts_start(&ctx);
	h2_guard_init(&ctx);
	events_init(&ctx);
	handoff_init(ctx.loop, send_response);
	metrics_start(&ctx);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
	capacity_start(ctx.loop, &accept_ctx);
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

		capacity_add_listener(sock, on_accept);
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

	stats_attach(worker_index);
	capacity_raise_file_limit(worker_index);
	pipeline_init();
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
		/* A burst of new connections is not left to epoll's turn (capacity.c). */
		capacity_accept_queued();
		pipeline_before_wait();
		health_refresh();
		access_log_flush();
		/* Event streams: notifications in, idle channels UNLISTENed (events.c). */
		events_between_requests();

		if (ProcDiePending)
		{
			health_set_stopping();
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
