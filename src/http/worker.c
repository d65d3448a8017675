/*
 * worker.c
 *		An HTTP worker: a database backend running libh2o's event loop.
 *
 * One thread does everything for a request that runs on the loop: h2o
 * parses it, the worker's phases screen it (http/worker_phases.h), the
 * pipeline (serve/pipeline.c) routes it and runs its handlers through SPI,
 * and the one exit (http/respond.h) sends the answer.  A request whose
 * route runs elsewhere is handed to an executor process over a Unix socket
 * (exec/handoff.c), which answers through the same exit; no second thread
 * ever touches Postgres state.  This file holds the event loop, signals,
 * listeners and the h2o wiring; on_req() is the request's dispatcher.
 * Signals wake the loop through a self-pipe that h2o watches with the
 * sockets.
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
#include "exec/ws_dispatch.h"
#include "http/listen.h"
#include "http/metrics.h"
#include "http/respond.h"
#include "http/response_phases.h"
#include "serve/access_log.h"
#include "http/static_files.h"
#include "serve/pipeline.h"
#include "routes/route_stats.h"
#include "message/response_abort.h"
#include "core/h2o_mirror.h"
#include "core/stats.h"
#include "http/timeouts.h"
#include "http/tls.h"
#include "http/worker_phases.h"
#include "core/settings.h"

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

/* The longest the event loop waits before the worker looks round. */
#define LOOP_WAIT_MS 1000

static int	wakeup_pipe[2] = {-1, -1};
static int	worker_index;

/* ---- signals ---- */

/* Wakes the event loop through the self-pipe; safe in a signal handler. */
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

/* SIGTERM came: the loop ends its streams and exits once it is back. */
static volatile sig_atomic_t stop_requested = false;

/* A request is being served (on_req): SIGTERM cancels its handler. */
static volatile sig_atomic_t in_request = false;

/*
 * SIGTERM (a fast shutdown, pg_terminate_backend(), fewer workers): a
 * handler running on the loop is cancelled, so that its client is answered
 * 503 (pipeline.c: a cancel from outside) instead of the process dying
 * under it, and the loop, once back, ends its event streams with the end of
 * their responses.  A second SIGTERM, for a handler that swallows the
 * cancel, is Postgres' own: the process dies at once.
 */
static void
worker_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	if (stop_requested)
		die(postgres_signal_arg);
	else
	{
		stop_requested = true;
		/* Between requests there is nothing to cancel: the loop just stops. */
		if (in_request)
		{
			QueryCancelPending = true;
			InterruptPending = true;
		}
		SetLatch(MyLatch);
	}
	wake_loop();
	errno = save_errno;
}

/* SIGHUP: reload the settings, once the loop comes round. */
static void
worker_sighup(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SignalHandlerForConfigReload(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

/* SIGUSR1: process signals (barriers, notifications), handled by the loop. */
static void
worker_sigusr1(SIGNAL_ARGS)
{
	int			save_errno = errno;

	/* Barriers and other process signals need the loop to come round. */
	procsignal_sigusr1_handler(postgres_signal_arg);
	wake_loop();
	errno = save_errno;
}

/* Drains the self-pipe; the loop then looks at what the signals flagged. */
static void
on_wakeup(h2o_socket_t *sock, const char *err)
{
	char		buf[64];

	while (read(wakeup_pipe[0], buf, sizeof(buf)) > 0)
		;
	/* The main loop looks at the pending flags after each run. */
}

/* ---- serving ---- */

/* Notes for the access and slow-request logs where the pipeline left req. */
static void
note_request(h2o_req_t *req, const PipelineRun *run, PipelineOutcome outcome)
{
	AccessNote *note = access_log_note(req);

	if (note == NULL)
		return;
	note->started = run->started;
	if (outcome == PIPELINE_HAND_OFF)
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
		note->plan_us = run->plan_us;
		note->role = run->role;
	}
}

/*
 * The pipeline's part of a request that got past the worker's phases:
 * routes it, and acts on the outcome (send, hand off, serve a static
 * mount's file, leave an event stream be).
 */
static void
route_request(h2o_req_t *req, char *body, size_t bodylen)
{
	PipelineRun run;
	PipelineOutcome outcome;

	run.place = handoff_enabled() ? PIPELINE_ON_LOOP : PIPELINE_RUN_HERE;
	run.head_at = handoff_head_complete_at(req);
	run.sink = NULL;			/* streams run on executors */
	in_request = true;
	run.static_ok = true;
	run.cut_route_id = 0;
	run.client = req->conn;
	outcome = pipeline_run(req, &run, &body, &bodylen);
	in_request = false;
	note_request(req, &run, outcome);
	switch (outcome)
	{
		case PIPELINE_STATIC:
			/* No route has the path; a static mount's files answer it. */
			if (static_files_serve(req, run.static_mount, &body, &bodylen))
				respond_file_started(req);
			else
				respond_send(req, body, bodylen, 0, 0);
			return;
		case PIPELINE_HAND_OFF:
			/* Answered through the exit (respond.h) when the executor is done. */
			handoff_start(req, run.route_id, run.max_concurrency, run.head_at,
						  run.started, run.rerun, &run.states);
			return;
		case PIPELINE_EVENT_STREAM:
		case PIPELINE_ANSWERED:
		case PIPELINE_STREAMED:
		case PIPELINE_STREAM_CUT:
			break;
	}
	/* A timeout is counted as such, not as the handler's error. */
	if (run.failed && req->res.status != 504)
		route_stats_count_event(run.answered_by, ROUTE_EVENT_HANDLER_ERROR);
	if (outcome == PIPELINE_EVENT_STREAM)
	{
		/* Its response is already under way (sse.c). */
		respond_stream_head(req);
		respond_stream_end(req->res.status, run.answered_by, 0, run.started);
	}
	else
	{
		/* Answered (without a sink, a route in mode stream answers 503). */
		respond_send(req, body, bodylen, run.answered_by, run.started);
	}
}

/*
 * h2o's handler, the request's dispatcher: the worker's phases
 * (connection checks, endpoints without SQL, the TLS redirect), then the
 * pipeline's (serve/phase.h).
 */
static int
on_req(h2o_handler_t *self, h2o_req_t *req)
{
	char	   *body = NULL;
	size_t		bodylen = 0;
	PhaseRequest pr = {.req = req,.body = &body,.bodylen = &bodylen};

	if (worker_phases_run(&pr))
		route_request(req, body, bodylen);
	else
		respond_send(req, body, bodylen, 0, 0);
	return 0;
}

/* A listener is readable: accepts what capacity allows. */
static void
on_accept(h2o_socket_t *listener, const char *err)
{
	if (err == NULL)
		capacity_accept(listener);
}

/* ---- set-up and main loop ---- */

/* Puts the settings h2o reads in its configuration; at start and on reload. */
static void
apply_settings(void)
{
	config.max_request_entity_size = (size_t) webgres_max_body_size;
	config.http1.req_timeout = timeouts_backstop_ms();
	capacity_configure();
	access_log_configure();
	/* Modules whose settings are off leave their phase's list. */
	worker_phases_build();
	response_phases_build();
}

/* Sets up h2o's configuration, context and the worker's modules on its loop. */
static void
setup_h2o(void)
{
	h2o_hostconf_t *hostconf;
	h2o_pathconf_t *pathconf;
	h2o_handler_t *handler;

	h2o_config_init(&config);
	/* Server comes from the response filter, without sprintf() (security_headers.c). */
	config.server_name = h2o_iovec_init(H2O_STRLIT(""));
	apply_settings();

	hostconf = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	/*
	 * One path, "/", for everything: routes and static mounts change at run
	 * time, while libh2o's paths are fixed once the context exists.  The
	 * pipeline decides between a route and a static mount (routes win) and
	 * static_files.c calls the mount's own file handler; the filters
	 * attached here (compression, security headers) apply to both.
	 */
	pathconf = h2o_config_register_path(hostconf, "/", 0);
	handler = h2o_create_handler(pathconf, sizeof(*handler));
	handler->on_req = on_req;
	/* PHASE_FILTER and PHASE_LOG: the modules of http/response_phase_list.h. */
	response_phases_attach(pathconf, RESPONSE_PATH_ROUTES);
	response_phases_attach(&hostconf->fallback_path, RESPONSE_PATH_OTHER);

	h2o_context_init(&ctx, h2o_evloop_create(), &config);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
	/* Before anything relies on what webgres mirrors of h2o's private structs. */
	h2o_mirror_check(&ctx, &accept_ctx);
	static_files_init(&config, &ctx);
	timeouts_start(&ctx);
	h2_guard_init(&ctx);
	response_abort_init(ctx.loop);
	events_init(&ctx);
	handoff_init(ctx.loop, &respond_exit);
	ws_dispatch_init(ctx.loop);
	metrics_start(&ctx);
	capacity_start(ctx.loop, &accept_ctx);
}

/* Opens a listening socket for each address in webgres.listen. */
static void
open_listeners(void)
{
	const ListenList *list = listen_addresses();

	for (int i = 0; i < list->n; i++)
	{
		int			fd = listen_open(&list->addrs[i], "webgres.listen");
		h2o_socket_t *sock = h2o_evloop_socket_create(ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);

		capacity_add_listener(sock, on_accept, NULL);
	}
	tls_start(&accept_ctx, on_accept);
}

/* Opens the self-pipe through which signals wake the loop. */
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

/* Background worker entry point: the event loop of an HTTP worker. */
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
			(errmsg("webgres worker %d serving database \"%s\" on %s%s%s",
					worker_index, webgres_database, listen_setting(),
					tls_listen_setting()[0] ? " and with TLS on " : "", tls_listen_setting())));
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		/* The wait is bounded so that a lost postmaster is noticed. */
		h2o_evloop_run(ctx.loop, LOOP_WAIT_MS);
		/* A cancel SIGTERM sent to a handler that had just ended cancels nothing else. */
		if (stop_requested)
			QueryCancelPending = false;
		/* A burst of new connections is not left to epoll's turn (capacity.c). */
		capacity_accept_queued();
		pipeline_before_wait();
		health_refresh();
		access_log_flush();
		/* Event streams: notifications in, idle channels UNLISTENed (events.c). */
		events_between_requests();

		if (ProcDiePending || stop_requested)
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
			pipeline_reload();
			apply_settings();
			tls_reload();
		}
		if (!PostmasterIsAlive())
			proc_exit(1);
		pgstat_report_stat(false);
	}

	proc_exit(0);
}
