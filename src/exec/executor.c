/*
 * executor.c
 *		An executor: a database backend that runs requests handed to it.
 *
 * HTTP workers run fast handlers on their event loop and hand the others
 * to executors (see handoff.c).  An executor accepts one connection at a
 * time on the socket the postmaster created (exec_socket.c), reads the
 * request, runs it through the same pipeline a worker uses, writes the
 * response back and closes.  While a handler runs it looks at the socket
 * every WORKER_CHECK_MS: if the worker hung up (its client went away, or
 * it exited), the query is cancelled and rolled back.
 *
 * Several executors wait on the one listening socket; when a connection
 * arrives all of them wake and one wins the accept.  The rest see EAGAIN
 * and wait again.
 */
#include "postgres.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exec/exec_socket.h"
#include "exec/handoff_frame.h"
#include "exec/ws_dispatch.h"
#include "message/request.h"
#include "serve/pipeline.h"
#include "routes/route_placement.h"
#include "routes/route_stats.h"
#include "handler/plan_clock.h"
#include "handler/stream.h"
#include "core/pg_compat.h"
#include "core/settings.h"
#include "core/stats.h"

/* Background worker entry point, looked up by name by the postmaster. */
extern PGDLLEXPORT void webgres_executor_main(Datum main_arg);

/* How often a running handler looks whether its worker is still there. */
#define WORKER_CHECK_MS 100
/* Longest wait for a worker to send its request or take its response. */
#define SOCKET_IO_TIMEOUT_MS 10000
/* A wait on a socket is cut in slices this long, to serve interrupts between them. */
#define SOCKET_WAIT_SLICE_MS 1000
/* An idle executor looks round (settings, the postmaster) at least this often. */
#define IDLE_WAIT_MS 1000

static int	executor_index;
static TimeoutId worker_check_timeout;

/* The connection being served, and whether its worker has hung up. */
static volatile int current_fd = -1;
static volatile sig_atomic_t worker_gone = false;

/*
 * Timeout handler: runs in signal context, so it only polls the socket and
 * raises a query cancel, as Postgres' own client connection check does.
 */
static void
check_worker(void)
{
	struct pollfd pfd;

	if (current_fd < 0 || worker_gone)
		return;
	pfd.fd = current_fd;
	pfd.events = POLLRDHUP;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
	{
		worker_gone = true;
		QueryCancelPending = true;
		InterruptPending = true;
		SetLatch(MyLatch);
	}
}

/*
 * Waits until fd is ready for events or timeout_ms pass (< 0: no limit),
 * serving interrupts meanwhile.  False on timeout or hang-up.
 */
static bool
wait_socket(int fd, short events, long timeout_ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), Max(timeout_ms, 0));

	for (;;)
	{
		struct pollfd pfd = {fd, events, 0};
		long		left = timeout_ms < 0 ? SOCKET_WAIT_SLICE_MS :
			TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until);
		int			rc;

		CHECK_FOR_INTERRUPTS();
		if (left <= 0)
			return false;
		rc = poll(&pfd, 1, (int) Min(left, SOCKET_WAIT_SLICE_MS));
		if (rc > 0)
			return (pfd.revents & events) != 0;
		if (rc < 0 && errno != EINTR)
			return false;
	}
}

/* Reads exactly len bytes; false if the worker hung up or took too long. */
static bool
read_fully(int fd, char *buf, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = recv(fd, buf, len, MSG_DONTWAIT);

		if (n > 0)
		{
			buf += n;
			len -= n;
		}
		else if (n == 0)
			return false;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN || !wait_socket(fd, POLLIN, SOCKET_IO_TIMEOUT_MS))
			return false;
	}
	return true;
}

/*
 * Writes all of buf; false if the worker hung up or did not take it within
 * timeout_ms (< 0: no limit).
 */
static bool
write_fully(int fd, const char *buf, size_t len, long timeout_ms)
{
	while (len > 0)
	{
		ssize_t		n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n >= 0)
		{
			buf += n;
			len -= n;
		}
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN || !wait_socket(fd, POLLOUT, timeout_ms))
			return false;
	}
	return true;
}

/*
 * A streamed response goes straight to the worker as it is produced.  Its
 * writes wait as long as the worker does not read (its client does not):
 * that is the backpressure that holds the query.  webgres.stream_timeout
 * (a statement timeout, served while waiting) and the worker's hang-up end
 * the wait.
 */
typedef struct ExecutorStream
{
	int			fd;
	const PipelineRun *run;		/* the request's run: the role chosen */
	uint64		plan_at;		/* plan_clock_us() when the request began */
} ExecutorStream;

/* What the worker's logs learn with the head: the role, the planning time so far. */
static HandoffAnswerMeta
answer_meta(const PipelineRun *run, uint64 plan_at)
{
	HandoffAnswerMeta meta;

	meta.role = run->role;
	meta.plan_us = (int64) (plan_clock_us() - plan_at);
	return meta;
}

/* StreamSink: sends the head, length unknown. */
static bool
stream_begin(void *arg, h2o_req_t *req)
{
	ExecutorStream *s = arg;
	StringInfoData buf;
	HandoffAnswerMeta meta = answer_meta(s->run, s->plan_at);

	initStringInfo(&buf);
	frame_put_head(&buf, req, FRAME_LENGTH_UNKNOWN, &meta);
	return write_fully(s->fd, buf.data, buf.len, -1);
}

/* StreamSink: sends one BODY frame. */
static bool
stream_write(void *arg, const char *data, size_t len)
{
	ExecutorStream *s = arg;
	char		header[FRAME_HEADER_SIZE];

	frame_put_body_header(header, len);
	return write_fully(s->fd, header, sizeof(header), -1) &&
		write_fully(s->fd, data, len, -1);
}

/*
 * Reads one REQUEST frame (or a WebSocket's call, ws_dispatch.h) into a
 * palloc'd buffer; NULL if there is none.
 */
static char *
read_request(int fd, uint32 *len, char *type)
{
	char		header[FRAME_HEADER_SIZE];
	char	   *payload;

	if (!read_fully(fd, header, sizeof(header)))
		return NULL;
	frame_get_header(header, len, type);
	if ((*type != FRAME_REQUEST && *type != WS_FRAME_CALL) || *len > FRAME_MAX_PAYLOAD)
	{
		ereport(WARNING,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("webgres executor %d got a malformed request frame", executor_index)));
		return NULL;
	}
	payload = palloc(Max(*len, 1));
	if (!read_fully(fd, payload, *len))
		return NULL;
	return payload;
}

/* Serves the one request of an accepted connection. */
static void
serve_connection(int fd, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	char	   *payload;
	uint32		len;
	char		type;
	h2o_req_t	req;
	HandoffMeta meta;
	PipelineRun run;
	PipelineOutcome outcome;
	char	   *body = NULL;
	size_t		bodylen = 0;
	bytea	   *body_datum;
	TimestampTz started;
	StringInfoData out;
	ExecutorStream stream = {fd, &run, plan_clock_us()};
	StreamSink	sink = {stream_begin, stream_write, &stream};

	if (!exec_socket_peer_is_ours(fd))
	{
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("webgres executor %d refused a connection from another user",
						executor_index)));
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	if ((payload = read_request(fd, &len, &type)) == NULL)
	{
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	if (type == WS_FRAME_CALL)
	{
		/* A WebSocket's message or close: its answer's frames go back. */
		initStringInfo(&out);
		if (ws_dispatch_serve(payload, len, &out))
			(void) write_fully(fd, out.data, out.len, SOCKET_IO_TIMEOUT_MS);
		else
			ereport(WARNING,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("webgres executor %d got a malformed WebSocket call", executor_index)));
		MemoryContextSwitchTo(oldcxt);
		return;
	}

	memset(&req, 0, sizeof(req));
	h2o_mem_init_pool(&req.pool);
	if (!frame_get_request(payload, len, &req, &meta, &body_datum))
	{
		ereport(WARNING,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("webgres executor %d got a malformed request", executor_index)));
		h2o_mem_clear_pool(&req.pool);
		MemoryContextSwitchTo(oldcxt);
		return;
	}

	memset(&run, 0, sizeof(run));
	run.place = PIPELINE_RUN_HERE;
	run.head_at = meta.head_at;
	run.cut_route_id = meta.rerun ? meta.route_id : 0;
	run.sink = &sink;
	run.client = NULL;
	/* The pipeline's modules go on from the states the worker handed over. */
	run.states = meta.states;

	current_fd = fd;
	worker_gone = false;
	started = GetCurrentTimestamp();
	enable_timeout_every(worker_check_timeout,
						 TimestampTzPlusMilliseconds(started, WORKER_CHECK_MS),
						 WORKER_CHECK_MS);
	/* The handlers read the body where the frame holds it: no copy. */
	request_use_body_datum(&req, body_datum);
	outcome = pipeline_run(&req, &run, &body, &bodylen);
	request_use_body_datum(NULL, NULL);
	disable_timeout(worker_check_timeout, false);
	current_fd = -1;
	/* A hang-up seen after the handler ended has nothing left to cancel. */
	QueryCancelPending = false;

	if (meta.route_id > 0)
		route_placement_observe_run(route_placement_get(meta.route_id),
								 TimestampDifferenceMilliseconds(started, GetCurrentTimestamp()));

	/*
	 * A handler cancelled because the client left did not fail by itself; a
	 * timeout is counted as such (by the worker, from its 504).
	 */
	if (run.failed && !worker_gone && req.res.status != 504)
		route_stats_count_event(run.answered_by != 0 ? run.answered_by : meta.route_id,
								ROUTE_EVENT_HANDLER_ERROR);

	if (worker_gone)
		ereport(DEBUG1,
				(errmsg("webgres executor %d: the worker hung up; the request was cancelled",
						executor_index)));
	else if (outcome != PIPELINE_STREAM_CUT)
	{
		/*
		 * A stream ends with END only once its transaction committed; one
		 * that failed after its head (logged by the pipeline) is cut by
		 * closing without it.
		 */
		initStringInfo(&out);
		if (outcome == PIPELINE_STREAMED)
			frame_put_end(&out);
		else
		{
			HandoffAnswerMeta answer = answer_meta(&run, stream.plan_at);

			frame_put_response(&out, &req, body, bodylen, &answer);
		}
		(void) write_fully(fd, out.data, out.len, SOCKET_IO_TIMEOUT_MS);
	}
	h2o_mem_clear_pool(&req.pool);
	MemoryContextSwitchTo(oldcxt);
}

/* Background worker entry point: an executor's loop, one request a connection. */
void
webgres_executor_main(Datum main_arg)
{
	int			listen_fd = exec_socket_listener();
	WaitEventSet *wes;
	MemoryContext cxt;

	executor_index = DatumGetInt32(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (listen_fd < 0)
		ereport(FATAL,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("webgres executors need the socket the postmaster creates when it preloads webgres")));

	BackgroundWorkerInitializeConnection(webgres_database, NULL, 0);
	pgstat_report_appname(psprintf("webgres executor %d", executor_index));
	pipeline_init();
	worker_check_timeout = RegisterTimeout(USER_TIMEOUT, check_worker);
	cxt = AllocSetContextCreate(TopMemoryContext, "webgres executor request",
								ALLOCSET_DEFAULT_SIZES);

	wes = CreateWaitEventSet(NULL, 3);
	AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	AddWaitEventToSet(wes, WL_SOCKET_READABLE, listen_fd, NULL, NULL);

	ereport(LOG,
			(errmsg("webgres executor %d serving database \"%s\"",
					executor_index, webgres_database)));
	/* Readiness (http/health.c) counts the executors that serve. */
	stats_executor_attach();
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		int			fd;
		WaitEvent	event;

		/* A cancel that arrives between requests has nothing to cancel. */
		QueryCancelPending = false;
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			pipeline_reload();
		}

		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
		{
			serve_connection(fd, cxt);
			close(fd);
			MemoryContextReset(cxt);
			pipeline_before_wait();
			pgstat_report_stat(false);
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			errno != ECONNABORTED)
			ereport(ERROR,
					(errcode_for_socket_access(),
					 errmsg("could not accept a connection on the webgres executor socket: %m")));

		(void) WaitEventSetWait(wes, IDLE_WAIT_MS, &event, 1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
