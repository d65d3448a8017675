/*
 * pipeline.c
 *		Routes and answers one request, on a worker's loop or on an executor.
 *
 * The one conductor of a request: every request, on a worker's loop or on
 * an executor, goes through serve(), the request's phases from the route
 * match on (serve/phase.h), and comes back as one PipelineOutcome.  A request is first looked up in the route
 * table as last loaded, without a transaction: a constant route answers
 * from memory.  Otherwise its handlers run in a transaction of its own, or
 * in a read-only one shared with the other read-only requests of the same
 * pass of the event loop; an event stream's second phase runs in one more.
 * Every step that runs SQL goes through one wrapper (run_in_transaction:
 * transaction, settings, timeout) and one error-to-response rule
 * (answer_error).  The contract is in pipeline.h.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/errors.h"
#include "events/events.h"
#include "events/sse.h"
#include "events/ws_socket.h"
#include "handler/handler.h"
#include "handler/plan_clock.h"
#include "handler/stream.h"
#include "serve/compress.h"
#include "serve/cors.h"
#include "serve/auth.h"
#include "serve/jwt_keys.h"
#include "serve/jwt_secret.h"
#include "serve/phase.h"
#include "serve/pipeline.h"
#include "serve/pipeline_phases.h"
#include "serve/ws_admit.h"
#include "serve/refusal_log.h"
#include "serve/replica.h"
#include "message/request.h"
#include "message/response.h"
#include "routes/mounts.h"
#include "routes/route_placement.h"
#include "routes/routes.h"
#include "core/stats.h"

/* The handler's and a stream's time limits' defaults, in milliseconds. */
#define HANDLER_TIMEOUT_DEFAULT_MS 30000
#define STREAM_TIMEOUT_DEFAULT_MS 600000

/*
 * The pipeline's settings (pipeline_define_settings); the hand-off and the
 * WebSocket calls read the first two through pipeline.h's accessors.
 */
static int	webgres_handler_timeout = HANDLER_TIMEOUT_DEFAULT_MS;
static bool webgres_expose_errors = false;
static bool webgres_share_read_transactions = false;
static int	webgres_stream_timeout = STREAM_TIMEOUT_DEFAULT_MS;

/* Holds what one request needs beyond its h2o pool; reset after each. */
static MemoryContext request_cxt;

/* One request on its way through the pipeline: what its steps share. */
typedef struct Request
{
	h2o_req_t  *req;
	PipelineRun *run;
	char	  **body;			/* the answer's body, in req->pool */
	size_t	   *bodylen;
	PipelineOutcome outcome;	/* what became of it so far */
	bool		on_loop;		/* run->place is the event loop */
	bool		is_head;		/* HEAD: routed to GET routes */
	TimestampTz started;		/* the statement's start: one clock reading */
	TimestampTz deadline;		/* webgres.handler_timeout; 0: none */
	PathSegments segs;			/* the path, split */
	bool		split;			/* false: the path did not fit in segs */
	RouteMatch	m;				/* the walk over the routes the path matches */
	RequestData rd;				/* the request as handlers see it */
	AuthState	auth;			/* its token, once a route with auth looked */
	PhaseRequest pr;			/* what the phases' modules see of it */
	bool		share;			/* may run in the shared read-only transaction */
	bool		deferred;		/* placement waits for the transaction (wants_executor) */
	bool		restart;		/* it may not after all: run again in its own */
	Route	   *running;		/* whose handler runs under the inline budget */
	bool		listening;		/* an event stream's phase 1 LISTENed ... */
	int64		event_route_id; /* ... for this route ... */
	EventsListen listen;		/* ... on these channels */
	Route	   *route;			/* the route that answered or failed, or whose
								 * settings cover a 405: for the respond steps */
	StreamSink	sink;			/* run->sink, noting when the head goes */
	bool		stream_begun;	/* a stream's head went to the sink */
} Request;

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

/*
 * How often event streams opened as a role are checked against role
 * changes (check_stream_roles); with the loop waiting at most a second, a
 * stream ends within about two seconds of the change.
 */
#define STREAM_ROLE_CHECK_MS 1000

/* A route was reported to pg_stat_activity since the worker last waited. */
static bool activity_reported = false;

/*
 * webgres.inline_budget.  Arming a timeout per request would cost a timer
 * system call or two each; instead a periodic watchdog runs while the loop
 * is busy (started by the first handler of a pass that is under the budget,
 * stopped before the loop waits) and cancels a handler whose run began
 * longer ago than the budget.  So a run is cancelled between one and one
 * and a half budgets after it began.  The flag tells that cancel from
 * handler_timeout and from pg_cancel_backend().
 */
static TimeoutId budget_timeout;
static bool budget_watchdog_on = false;
static volatile TimestampTz budget_run_started = 0;	/* 0: none under budget */
static volatile sig_atomic_t budget_fired = false;

/* Timeout handler: cancel the handler that ran past the inline budget. */
static void
budget_check(void)
{
	TimestampTz began = budget_run_started;

	if (began == 0 || budget_fired ||
		GetCurrentTimestamp() < TimestampTzPlusMilliseconds(began, route_placement_inline_budget_ms()))
		return;
	budget_fired = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/* Puts a handler that starts now under the budget. */
static void
budget_start(TimestampTz began)
{
	budget_fired = false;
	budget_run_started = began;
	if (!budget_watchdog_on)
	{
		int			period = Max(1, route_placement_inline_budget_ms() / 2);

		enable_timeout_every(budget_timeout, TimestampTzPlusMilliseconds(began, period), period);
		budget_watchdog_on = true;
	}
}

/* The handler under the budget ended; returns whether the budget fired. */
static bool
budget_end(void)
{
	budget_run_started = 0;
	return budget_fired;
}

/* Stops the watchdog; before the loop waits, and on errors. */
static void
budget_stop(void)
{
	budget_run_started = 0;
	if (budget_watchdog_on)
	{
		disable_timeout(budget_timeout, false);
		budget_watchdog_on = false;
	}
}

/* The route's shared execution state, looked up once per table load. */
static RoutePlacement *
limits_of(Route *r)
{
	if (!r->limits_looked_up)
	{
		r->limits = route_placement_get(r->id);
		r->limits_looked_up = true;
	}
	return r->limits;
}

/*
 * True if, on the event loop, route r's requests go to an executor.  An
 * event stream never does: the worker that listens for it holds it open.
 * Whether r answers one is known once this worker has prepared or
 * described its handler (once per route table); until then a request
 * outside a transaction (in_xact false) is placed in its transaction
 * (rq->deferred, place_deferred), where the handler is described (parsed,
 * not planned) and the answer kept.
 */
static bool
wants_executor(Request *rq, Route *r, bool in_xact)
{
	if (r->mode == ROUTE_MODE_STREAM)
		return true;
	if (r->mode == ROUTE_MODE_INLINE)
		return false;
	if (r->mode == ROUTE_MODE_AUTO && route_placement_inline_budget_ms() > 0 &&
		!route_placement_is_slow(limits_of(r)))
		return false;
	if (!in_xact && !handler_knows_event_stream(r))
	{
		rq->deferred = true;
		return false;
	}
	return !handler_answers_event_stream(r);
}

/*
 * Where a request to route r runs (PHASE_ADMISSION), decided by
 * placement_of() alone: the one place that asks the route, its handler
 * and the settings.
 */
typedef enum Placement
{
	PLACE_EXECUTOR,				/* handed to an executor (only on the loop) */
	PLACE_MEMORY,				/* a constant route's cached response */
	PLACE_SHARED,				/* the read-only transaction of the loop's pass */
	PLACE_OWN					/* a transaction of its own, here */
} Placement;

/*
 * Where route r, matched by rq, runs.  Only the first route a request
 * matches may answer from memory (first), and only a route without auth
 * (it answers per identity) whose table was checked lately; *cached is
 * then its response.  With may_share false the answer is never
 * PLACE_SHARED, and the handler is not asked.  in_xact: inside the
 * request's transaction, with SPI connected (wants_executor).
 */
static Placement
placement_of(Request *rq, Route *r, bool first, bool may_share, bool in_xact,
			 const CachedResponse **cached)
{
	if (rq->on_loop && wants_executor(rq, r, in_xact))
		return PLACE_EXECUTOR;
	if (first && r->auth == ROUTE_AUTH_NONE &&
		(*cached = handler_cached_response(r)) != NULL &&
		rq->started - last_transaction_at <= CONSTANT_ROUTE_RECHECK_MS * 1000)
		return PLACE_MEMORY;
	if (may_share && handler_can_share(r))
		return PLACE_SHARED;
	return PLACE_OWN;
}

/*
 * The error-recovery path of admit_to_executor: logs the error, forgets it
 * and answers 503.  No transaction is open there, so none is rolled back.
 */
static void
answer_admission_error(Request *rq)
{
	MemoryContextSwitchTo(request_cxt);
	EmitErrorReport();
	FlushErrorState();
	stats_count(STAT_HANDLER_ERRORS);
	/* A refusal may have begun its headers: start clean. */
	rq->req->res.headers = (h2o_headers_t) {NULL};
	response_simple(rq->req, 503, http_reason(503), rq->body, rq->bodylen);
}

/*
 * Whether a request that route r, the first to match it, would send to an
 * executor may wait for one: a route with auth checks its token here first
 * (auth_admit), so that requests without a valid one are answered on the
 * loop and never take a place in the route's queue.  False after answering.
 */
static bool
admit_to_executor(Request *rq, Route *r)
{
	MemoryContext oldcxt;
	volatile bool admitted;

	if (r->auth == ROUTE_AUTH_NONE)
		return true;
	/* Outside a transaction: what verifying allocates goes with the request. */
	oldcxt = MemoryContextSwitchTo(request_cxt);

	/*
	 * No transaction wraps this step, and a worker has no outer handler: an
	 * error here (out of memory while verifying or caching the token) would
	 * end the worker.  It answers this request 503 instead.
	 */
	PG_TRY();
	{
		/* Without rd: authentication only verifies (auth_admit). */
		rq->pr.rd = NULL;
		admitted = phase_run(&pipeline_phases[PHASE_AUTHENTICATE], &rq->pr, r) &&
			phase_run(&pipeline_phases[PHASE_ACCESS_IDENTITY], &rq->pr, r);
	}
	PG_CATCH();
	{
		answer_admission_error(rq);
		admitted = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	if (admitted)
		return true;
	rq->run->answered_by = r->id;
	rq->route = r;
	return false;
}

/* Notes that route r refused the request (a rate limit answered it); true. */
static bool
refused_by(Request *rq, Route *r)
{
	rq->run->answered_by = r->id;
	rq->route = r;
	return true;
}

/* Notes that route r sends the request to an executor. */
static void
set_hand_off(Request *rq, const Route *r, bool rerun)
{
	rq->outcome = PIPELINE_HAND_OFF;
	/* What the modules' states hold crosses with it, the connection not. */
	pipeline_states_hand_off(&rq->pr);
	rq->run->rerun = rerun;
	rq->run->route_id = r->id;
	rq->run->max_concurrency = r->max_concurrency;
}

/*
 * In the error-recovery path: forgets the error, rolls the transaction back
 * (the shared one too) and disarms the statement timeout and the budget.
 */
static void
roll_back_after_error(void)
{
	FlushErrorState();
	AbortCurrentTransaction();
	shared_xact_open = false;
	disable_timeout(STATEMENT_TIMEOUT, false);
	budget_stop();
	QueryCancelPending = false;
}

/*
 * The error-to-response rule, for every step that runs SQL: logs the error
 * in full, rolls back, and turns it into a response.  Runs in the
 * error-recovery path, so it must not raise.
 */
static void
answer_error(Request *rq)
{
	h2o_req_t  *req = rq->req;
	ErrorData  *edata;
	bool		chosen;
	int			status;
	const char *message;

	MemoryContextSwitchTo(request_cxt);
	EmitErrorReport();
	edata = CopyErrorData();
	roll_back_after_error();
	stats_count(STAT_HANDLER_ERRORS);

	/* A write that got past the plan check on a standby (replica.c). */
	if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION && RecoveryInProgress())
	{
		replica_answer_needs_primary(req, rq->body, rq->bodylen);
		return;
	}

	status = http_status_for_sqlstate(edata->sqlerrcode, &chosen);
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		(rq->deadline == 0 ||
		 TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 5) < rq->deadline))
		status = 503;			/* cancelled from outside, not by the timeout */

	if (chosen || (status < 500 && status != 403) || webgres_expose_errors)
		message = edata->message ? edata->message : http_reason(status);
	else
		message = http_reason(status);
	if (status == 504 && !webgres_expose_errors)
		message = "handler timed out";

	/* h2o may have got partial headers from a failed row: start clean. */
	req->res.headers = (h2o_headers_t) {NULL};
	response_simple(req, status, message, rq->body, rq->bodylen);
}

/*
 * The error-recovery path of route r's handler cancelled after webgres.inline_budget:
 * rolls back (nothing was committed), marks the route slow for every
 * worker, and asks for the request to be run again on an executor.  False
 * for any other error, which answer_error answers as usual.
 */
static bool
give_up_on_loop(Request *rq, Route *r)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(request_cxt);
	edata = CopyErrorData();
	if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED)
		return false;
	roll_back_after_error();
	budget_fired = false;

	route_placement_mark_slow(limits_of(r));
	rq->req->res.headers = (h2o_headers_t) {NULL};
	set_hand_off(rq, r, true);
	ereport(LOG,
			(errmsg("webgres route %s ran longer than webgres.inline_budget (%d ms) on the event loop",
					r->label, route_placement_inline_budget_ms()),
			 errdetail("It was rolled back; it runs on executors until its runs there are fast again.")));
	return true;
}

/*
 * The Allow header for a path that some route matches but not with the
 * request's method; NULL if a route for any method matches.
 */
static const char *
allowed_methods(const RouteTable *routes, const PathSegments *segs, PathCapture *caps)
{
	StringInfoData allow;
	bool		any = false;
	RouteMatch	m;
	Route	   *r;
	int			ncaps;

	initStringInfo(&allow);
	routes_match_init(&m, routes, segs);
	while ((r = routes_match_next(&m, &ncaps, caps)) != NULL)
	{
		if (r->method == NULL)
			any = true;
		else if (strstr(allow.data, r->method) == NULL)
			appendStringInfo(&allow, "%s%s", allow.len ? ", " : "", r->method);
	}
	routes_match_end(&m);
	if (any)
		return NULL;
	if (strstr(allow.data, "GET") && !strstr(allow.data, "HEAD"))
		appendStringInfoString(&allow, ", HEAD");
	return allow.data;
}

/* Whether route r takes the request's method (HEAD takes GET routes). */
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
 * Starts m's walk over the routes of table that match segs: again from the
 * start if m already walked them in this table (a later look of the same
 * request), else anew.  m's memory is the request's, reset after every
 * request (pipeline_run), so a walk is never ended one by one: not after an
 * error either, which leaves m as it was when the error was thrown.
 */
static void
match_begin(RouteMatch *m, const RouteTable *table, const PathSegments *segs)
{
	MemoryContext oldcxt;

	if (m->table != NULL && routes_match_rewind(m, table))
		return;
	oldcxt = MemoryContextSwitchTo(request_cxt);
	routes_match_init(m, table, segs);
	MemoryContextSwitchTo(oldcxt);
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

/* ---- the transaction wrapper, for every step that runs SQL ---- */

/*
 * Enters the request's transaction: the shared read-only one when the
 * request may share it, else one of its own; with a snapshot.
 */
static void
transaction_begin(Request *rq)
{
	if (!shared_xact_open)
	{
		StartTransactionCommand();
		if (rq->share)
		{
			/* A handler that writes after all fails rather than share. */
			XactReadOnly = true;
			shared_xact_open = true;
			shared_xact_requests = 0;
		}
	}
	shared_xact_requests++;
	PushActiveSnapshot(GetTransactionSnapshot());
}

/*
 * Leaves the request's transaction: commits it, or rolls it back if the
 * request goes to an executor (which runs it from the start); the shared
 * one stays open.  True if a transaction of the request's own committed.
 */
static bool
transaction_end(Request *rq)
{
	PopActiveSnapshot();
	if (shared_xact_open)
		return false;
	/* A request that goes elsewhere leaves nothing done here. */
	if (rq->outcome == PIPELINE_HAND_OFF)
	{
		AbortCurrentTransaction();
		return false;
	}
	CommitTransactionCommand();
	return true;
}

/*
 * Opens what handlers run in, inside the transaction: a settings nest level
 * (what a handler changes with set_config() ends with the request), SPI, and
 * the statement timeout armed for the deadline (0: none).  Returns the nest
 * level for handlers_end().
 */
static int
handlers_begin(TimestampTz deadline)
{
	int			nguc = NewGUCNestLevel();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (deadline != 0)
		enable_timeout_at(STATEMENT_TIMEOUT, deadline);
	return nguc;
}

/* Closes what handlers_begin() opened. */
static void
handlers_end(int nguc)
{
	/* Armed by handler_timeout, or by a stream for its whole length. */
	disable_timeout(STATEMENT_TIMEOUT, false);
	SPI_finish();
	AtEOXact_GUC(false, nguc);
}

/* A step of the request that runs inside its transaction. */
typedef void (*TransactionStep) (Request *rq);

/*
 * Runs step inside the request's transaction (transaction_begin and _end).
 * An error is answered by the one rule (answer_error), or sends the request
 * to an executor when it was a handler cancelled after the inline budget
 * (give_up_on_loop).  Returns true if the request's own transaction
 * committed.
 */
static bool
run_in_transaction(Request *rq, TransactionStep step)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool committed = false;

	if (!rq->share || shared_xact_requests >= SHARED_XACT_MAX_REQUESTS)
		end_shared_transaction();
	PG_TRY();
	{
		transaction_begin(rq);
		step(rq);
		committed = transaction_end(rq);
	}
	PG_CATCH();
	{
		Route	   *running = rq->running;

		rq->running = NULL;
		rq->run->failed = true;
		rq->restart = false;
		rq->listening = false;
		rq->outcome = rq->stream_begun ? PIPELINE_STREAM_CUT : PIPELINE_ANSWERED;
		if (running == NULL || !budget_fired || !give_up_on_loop(rq, running))
			answer_error(rq);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	return committed;
}

/* ---- the steps ---- */

/* StreamSink: the run's sink, noting that the stream's head went out. */
static bool
sink_begin(void *arg, h2o_req_t *req)
{
	Request    *rq = (Request *) arg;

	rq->stream_begun = true;
	/* PHASE_FILTER: the stream's head is about to leave. */
	phase_run(&pipeline_phases[PHASE_FILTER], &rq->pr, rq->route);
	return rq->run->sink->begin(rq->run->sink->arg, req);
}

/* StreamSink: the run's sink, as it is. */
static bool
sink_write(void *arg, const char *data, size_t len)
{
	Request    *rq = (Request *) arg;

	return rq->run->sink->write(rq->run->sink->arg, data, len);
}

/* Takes the request's clock, deadline and path; the first step of every request. */
static void
begin_request(Request *rq, h2o_req_t *req, PipelineRun *run, char **body, size_t *bodylen)
{
	size_t		pathlen = (req->query_at == SIZE_MAX) ? req->path.len : req->query_at;

	rq->req = req;
	rq->run = run;
	rq->body = body;
	rq->bodylen = bodylen;
	rq->outcome = PIPELINE_ANSWERED;
	rq->on_loop = (run->place == PIPELINE_ON_LOOP);
	rq->is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
	/* One clock reading serves both the cache check and the statement. */
	SetCurrentStatementStartTimestamp();
	rq->started = GetCurrentStatementStartTimestamp();
	run->started = rq->started;
	/* handler_timeout counts from the complete request head, queueing included. */
	rq->deadline = webgres_handler_timeout > 0 ?
		TimestampTzPlusMilliseconds(run->head_at != 0 ? run->head_at : rq->started,
									webgres_handler_timeout) : 0;
	rq->split = path_split(req->path.base, pathlen, &rq->segs);
	rq->m.table = NULL;
	rq->share = false;
	rq->deferred = false;
	rq->restart = false;
	rq->running = NULL;
	rq->route = NULL;
	rq->listening = false;
	rq->stream_begun = false;
	rq->sink.begin = sink_begin;
	rq->sink.write = sink_write;
	rq->sink.arg = rq;
	rq->pr.req = req;
	rq->pr.body = body;
	rq->pr.bodylen = bodylen;
	rq->pr.routes = NULL;
	rq->pr.segs = &rq->segs;
	rq->pr.auth = &rq->auth;
	rq->pr.rd = NULL;
	rq->pr.cxt = request_cxt;
	rq->pr.client = run->client;
	rq->pr.now = rq->started;
	/* The modules begin their states as they ask for them (phase.h). */
	rq->pr.states = &run->states;
	if (run->client != NULL)
		run->states.begun = 0;
	else
		pipeline_states_resume(&run->states, rq->started);
}

/*
 * Static mounts and routes share one path space: a route whose pattern
 * matches the path answers it, whatever its method (a mount is a catch-all
 * for what the routes under its prefix leave; path ownership keeps another
 * role's routes from there), and the mount whose prefix covers the path
 * answers the rest.  Sets the outcome to PIPELINE_STATIC and returns true
 * if mounts has one for the request, which no route matches; the caller's
 * file handler serves it (http/static_files.c).
 */
static bool
answer_from_mount(Request *rq, MountTable *mounts)
{
	size_t		pathlen = (rq->req->query_at == SIZE_MAX) ? rq->req->path.len : rq->req->query_at;

	if (!rq->run->static_ok || mounts == NULL || mounts->nmounts == 0)
		return false;
	rq->run->static_mount = mounts_find(mounts, rq->req->path.base, pathlen);
	if (rq->run->static_mount == NULL)
		return false;
	rq->outcome = PIPELINE_STATIC;
	return true;
}

/*
 * True if a route that rq matches before route last (which wants an
 * executor) answers with an event stream: the request then stays on the
 * loop, where only that stream can be served; a route after it runs only
 * if the stream declines, and run_matching_routes() sends the request on
 * from there as it would for any route.  Outside a transaction (in_xact
 * false), a route whose handler this worker has not described yet leaves
 * the question to the request's transaction (rq->deferred) and the answer
 * is false.  Asked only when a route after the first wants an executor,
 * so a path with one route never pays for it.
 */
static bool
stream_comes_first(Request *rq, const RouteTable *routes, const Route *last,
				   bool in_xact, PathCapture *caps)
{
	MemoryContext oldcxt;
	RouteMatch	m;
	Route	   *r;
	int			ncaps;
	bool		stream = false;

	/* As match_begin(): the walk's memory, if any, goes with the request. */
	oldcxt = MemoryContextSwitchTo(request_cxt);
	routes_match_init(&m, routes, &rq->segs);
	MemoryContextSwitchTo(oldcxt);
	while (!stream && (r = routes_match_next(&m, &ncaps, caps)) != NULL && r != last)
	{
		if (!method_matches(r, rq->req, rq->is_head))
			continue;
		if (!in_xact && !handler_knows_event_stream(r))
		{
			rq->deferred = true;
			break;
		}
		stream = handler_answers_event_stream(r);
	}
	routes_match_end(&m);
	return stream;
}

/*
 * Looks at the routes the request matches in the table as last loaded,
 * without a transaction.  Answers from the cached response of a constant
 * route, if the first match is one and the table was checked recently, and
 * returns true; sends the request to an executor if a match wants that,
 * and returns true; hands a path no route has to a static mount
 * (PIPELINE_STATIC) if one has it, and returns true.  Otherwise sets rq->share to whether every match has a
 * handler that can share a read-only transaction and returns false: the
 * transaction looks again, in the current table.
 */
static bool
answer_without_transaction(Request *rq)
{
	RouteTable *routes = routes_peek();
	PathCapture caps[MAX_PATH_SEGMENTS + 1];
	bool		first = true;
	bool		may_share = webgres_share_read_transactions &&
		DefaultXactIsoLevel == XACT_READ_COMMITTED;
	bool		sharing = true;
	bool		path_matched = false;
	Route	   *r;
	int			ncaps;
	const CachedResponse *cached;

	if (routes == NULL || !rq->split)
		return false;
	match_begin(&rq->m, routes, &rq->segs);
	while ((r = routes_match_next(&rq->m, &ncaps, caps)) != NULL)
	{
		path_matched = true;
		if (!method_matches(r, rq->req, rq->is_head))
			continue;
		/* Access: a request over a rate limit goes no further. */
		if (first && !phase_run(&pipeline_phases[PHASE_ACCESS], &rq->pr, r))
			return refused_by(rq, r);
		switch (placement_of(rq, r, first, may_share && sharing, false, &cached))
		{
			case PLACE_EXECUTOR:
				/* A request runs wholly in one place: any route may send it off. */
				rq->share = false;
				/*
				 * ... but an event stream before it keeps it on the loop; a
				 * route before it not described yet leaves that to the
				 * transaction (place_deferred).
				 */
				if (!first && (stream_comes_first(rq, routes, r, false, caps) || rq->deferred))
					return false;
				/* Nothing looked at the token yet: run_handlers() has not run. */
				auth_begin(&rq->auth);
				if (first && !admit_to_executor(rq, r))
					return true;
				set_hand_off(rq, r, false);
				return true;
			case PLACE_MEMORY:
				compress_for_route(rq->req, r->compress);
				response_replay(rq->req, cached, rq->body, rq->bodylen);
				stats_count(STAT_FROM_MEMORY);
				rq->run->answered_by = r->id;
				rq->route = r;
				return true;
			case PLACE_SHARED:
				rq->share = true;
				break;
			case PLACE_OWN:
				if (sharing)
				{
					/* Keep looking only for a route that sends the request off. */
					sharing = false;
					if (!rq->on_loop)
						return false;
				}
				break;
		}
		first = false;
	}
	/*
	 * No route has the path: a static mount whose prefix covers it answers,
	 * with the tables as last loaded if a transaction looked for changes to
	 * them lately, as for a constant route; otherwise the request's
	 * transaction decides, after reloading them.
	 */
	return !path_matched &&
		rq->started - last_transaction_at <= CONSTANT_ROUTE_RECHECK_MS * 1000 &&
		answer_from_mount(rq, mounts_peek());
}

/* Streams route r's rows to the run's sink (mode stream, on an executor). */
static void
run_stream(Request *rq, Route *r)
{
	TimestampTz from = rq->run->head_at != 0 ? rq->run->head_at : rq->started;

	/* A stream answers even with no rows: an empty document. */
	handler_stream(r, &rq->rd, rq->run->sink != NULL ? &rq->sink : NULL, rq->is_head,
				   webgres_stream_timeout > 0 ?
				   TimestampTzPlusMilliseconds(from, webgres_stream_timeout) : 0,
				   rq->body, rq->bodylen);
	if (rq->stream_begun)
		rq->outcome = PIPELINE_STREAMED;
}

/*
 * Seconds a client is asked to wait (Retry-After) before it asks again for
 * an event stream that reached an executor because a lock held its first
 * run on the loop past webgres.inline_budget.
 */
#define STREAM_RETRY_AFTER_SECONDS "1"

/*
 * Answers, on an executor, the event stream of route r whose first run the
 * loop cut after webgres.inline_budget: a lock on a table its handler
 * reads (an ALTER TABLE) kept the worker from telling it was a stream.  It
 * waited here for that lock as any handler would (handler_timeout, then
 * 504); now that it ran, it cannot be held open here: 503 with Retry-After,
 * and the worker, which can now describe the handler, serves the next
 * request on its loop.  Not an error of the handler's.
 */
static void
answer_stream_retry(Request *rq, Route *r)
{
	ereport(LOG,
			(errmsg("webgres route %s answers with an event stream, and its first run waited for a lock past webgres.inline_budget",
					r->label),
			 errdetail("It ran on an executor, which cannot hold a stream open: it was answered 503 with Retry-After, and the worker serves the next request.")));
	response_simple(rq->req, 503, http_reason(503), rq->body, rq->bodylen);
	h2o_add_header(&rq->req->pool, &rq->req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
				   H2O_STRLIT(STREAM_RETRY_AFTER_SECONDS));
}

/*
 * Runs route r's handler for the request (with its captures set); true if
 * the route answered.  An event stream's rows go to events.c, which answers
 * or LISTENs (phase 1).
 */
static bool
run_route(Request *rq, Route *r)
{
	SPITupleTable *rows = NULL;
	HandlerResult result;

	pgstat_report_activity(STATE_RUNNING, r->label);
	compress_for_route(rq->req, r->compress);
	/* A WebSocket route's upgrade is checked before its open handler runs. */
	if (r->websocket && !ws_admit(&rq->rd, r, rq->body, rq->bodylen))
		return true;
	if (r->mode == ROUTE_MODE_STREAM)
	{
		run_stream(rq, r);
		return true;
	}
	/*
	 * An event stream's handler stays on the loop whatever it takes: never
	 * under the budget, which would send it to an executor.  The handler's
	 * first run here is described first, outside the budget, to tell.
	 */
	if (rq->on_loop && r->mode == ROUTE_MODE_AUTO && !handler_answers_event_stream(r))
	{
		rq->running = r;
		budget_start(rq->started);
	}
	result = handler_run(r, &rq->rd, &rows, rq->body, rq->bodylen);
	if (rq->running != NULL)
	{
		/* It finished as the budget ran out: nothing to cancel. */
		if (budget_end())
			QueryCancelPending = false;
		rq->running = NULL;
	}
	if (result == HANDLER_EVENT_ROWS)
	{
		/* Only a worker's loop holds a stream: an executor must not LISTEN. */
		if (!events_served_here() && rq->run->cut_route_id == r->id)
		{
			answer_stream_retry(rq, r);
			return true;
		}
		if (!events_served_here())
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("webgres route %s answers with an event stream, which an executor cannot serve",
							r->label),
					 errdetail("Event streams and WebSockets are held open by the HTTP worker that listens for their notifications."),
					 errhint("A request that a route before the event stream on the same path sends to executors (mode executor or stream, or a slow auto route) runs wholly there, as does one the stream declined on the loop: give the event stream a path of its own.")));
		rq->listening = events_first_phase(&rq->rd, rows, &rq->listen, rq->body, rq->bodylen);
		rq->event_route_id = r->id;
	}
	return result != HANDLER_NO_ROWS;
}

/* No route answered: 405 with an Allow header if only the method was wrong, else 404. */
static void
answer_no_route(Request *rq, const RouteTable *routes, bool wrong_method, PathCapture *caps)
{
	const char *allow = wrong_method ? allowed_methods(routes, &rq->segs, caps) : NULL;

	if (allow != NULL && allow[0] != '\0')
	{
		response_simple(rq->req, 405, "Method Not Allowed", rq->body, rq->bodylen);
		h2o_add_header(&rq->req->pool, &rq->req->res.headers, H2O_TOKEN_ALLOW, NULL,
					   allow, strlen(allow));
		rq->route = cors_route_at(routes, &rq->segs);
	}
	else
		response_simple(rq->req, 404, "Not Found", rq->body, rq->bodylen);
}

/* Tells the access log (%u) the role authentication chose for the handler. */
static void
note_role(Request *rq)
{
	const char *name = rq->auth.run_as;

	if (name != NULL)
		rq->run->role = h2o_strdup(&rq->req->pool, name, strlen(name)).base;
}

/*
 * The rule answer_without_transaction applies (a request runs wholly in
 * one place), for a request it left to the transaction: a route whose
 * handler this worker had not described then.  Every matching route can
 * be told here; if one wants an executor, the request goes there before
 * any handler runs.  True if it went, or admission answered it.
 */
static bool
place_deferred(Request *rq, const RouteTable *routes, PathCapture *caps)
{
	bool		first = true;
	Route	   *r;
	int			ncaps;

	match_begin(&rq->m, routes, &rq->segs);
	while ((r = routes_match_next(&rq->m, &ncaps, caps)) != NULL)
	{
		if (!method_matches(r, rq->req, rq->is_head))
			continue;
		if (wants_executor(rq, r, true))
		{
			/* An event stream before it is served here, as it must be. */
			if (!first && stream_comes_first(rq, routes, r, true, caps))
				return false;
			if (!first || admit_to_executor(rq, r))
				set_hand_off(rq, r, false);
			return true;
		}
		first = false;
	}
	return false;
}

/*
 * Runs the routes the request matches in the current table, in matching
 * order, until one answers; or notes that the request goes to an executor,
 * or must run again outside the shared transaction.
 */
static void
run_matching_routes(Request *rq, const RouteTable *routes)
{
	PathCapture *caps = palloc(sizeof(PathCapture) * (routes->max_captures + 1));
	int			nguc = handlers_begin(rq->deadline);
	bool		path_matched = false;
	bool		method_matched = false;
	bool		answered = false;
	int64		declined_by = 0;
	bool		handlers_ran = false;
	Placement	placement;
	const CachedResponse *cached;
	Route	   *r;
	int			ncaps;

	if (rq->deferred)
		answered = place_deferred(rq, routes, caps);
	match_begin(&rq->m, routes, &rq->segs);
	while (!answered && (r = routes_match_next(&rq->m, &ncaps, caps)) != NULL)
	{
		path_matched = true;
		if (!method_matches(r, rq->req, rq->is_head))
			continue;
		method_matched = true;
		rq->route = r;
		/* A standby answers what needs the primary without running it (replica.c). */
		if (RecoveryInProgress() && handler_needs_primary(r))
		{
			replica_answer_needs_primary(rq->req, rq->body, rq->bodylen);
			answered = true;
			break;
		}
		/* Access: a request over a rate limit goes no further. */
		if (!phase_run(&pipeline_phases[PHASE_ACCESS], &rq->pr, r))
		{
			answered = refused_by(rq, r);
			break;
		}
		placement = placement_of(rq, r, false, shared_xact_open, true, &cached);
		if (placement == PLACE_EXECUTOR)
		{
			if (!handlers_ran && !admit_to_executor(rq, r))
				answered = true;
			else
				set_hand_off(rq, r, false);
			break;
		}
		if (shared_xact_open && placement != PLACE_SHARED)
		{
			/* The route or its plan changed since the request was looked at. */
			rq->restart = true;
			break;
		}
		rq->run->answered_by = r->id;
		/* Authentication: the handler's role and claims, or 401/403 now. */
		rq->pr.rd = &rq->rd;
		if (r->auth == ROUTE_AUTH_NONE)
			request_set_identity(&rq->rd, InvalidOid, NULL);
		else if (!phase_run(&pipeline_phases[PHASE_AUTHENTICATE], &rq->pr, r) ||
				 !phase_run(&pipeline_phases[PHASE_ACCESS_IDENTITY], &rq->pr, r))
		{
			answered = true;
			break;
		}
		else
			note_role(rq);
		request_set_captures(&rq->rd, caps, ncaps);
		answered = run_route(rq, r);
		if (!answered)
			declined_by = r->id;
		handlers_ran = true;
	}
	handlers_end(nguc);
	if (!answered && !rq->restart && rq->outcome != PIPELINE_HAND_OFF)
	{
		/*
		 * A handler that returned no rows produced the 404 that follows: it
		 * is that route's response (the last one to decline), counted under
		 * it.  With no handler run, no route answered.
		 */
		rq->run->answered_by = declined_by;
		if (path_matched || !answer_from_mount(rq, mounts_current()))
			answer_no_route(rq, routes, path_matched && !method_matched, caps);
	}
}

/* TransactionStep: routes the request in the current table and runs its handlers. */
static void
route_and_run(Request *rq)
{
	RouteTable *routes = routes_current();
	bool		rooted = rq->rd.pathlen > 0 && rq->rd.path[0] == '/';

	rq->route = NULL;			/* a run again may find another table */
	handler_forget_stale_responses();
	if (!routes->installed)
		response_simple(rq->req, 503, "Service Unavailable", rq->body, rq->bodylen);
	else if (!rq->split)
		response_simple(rq->req, rooted ? 414 : 400, rooted ? "URI Too Long" : "Bad Request",
						rq->body, rq->bodylen);
	else
	{
		/* The table was stale when the preflight phase looked: answer it now. */
		rq->pr.routes = routes;
		if (phase_run(&pipeline_phases[PHASE_PREFLIGHT], &rq->pr, NULL))
			run_matching_routes(rq, routes);
	}
}

/*
 * TransactionStep: phase 2 of an event stream, after phase 1's transaction
 * committed its LISTEN.  Finds the route again by the route table's match
 * API (the table may have changed meanwhile), runs its handler again and
 * hands the rows to events.c, which starts the stream.
 */
static void
catch_up_event_stream(Request *rq)
{
	RouteTable *routes = routes_current();
	PathCapture *caps = palloc(sizeof(PathCapture) * (routes->max_captures + 1));
	int			nguc = handlers_begin(rq->deadline);
	Route	   *route = NULL;
	Route	   *r;
	int			ncaps;
	SPITupleTable *rows = NULL;

	/*
	 * The settings authentication gave phase 1 (request.jwt.claims) are
	 * still in effect: they last until run_handlers() ends.
	 */
	if (routes->installed && rq->split)
	{
		match_begin(&rq->m, routes, &rq->segs);
		while (route == NULL && (r = routes_match_next(&rq->m, &ncaps, caps)) != NULL)
			if (r->id == rq->event_route_id)
				route = r;
	}
	rq->route = route;
	if (route != NULL)
	{
		request_set_captures(&rq->rd, caps, ncaps);
		rows = handler_run_rows(route, &rq->rd);
	}
	/* PHASE_FILTER: the stream's head goes out in phase 2, with the route's headers. */
	phase_run(&pipeline_phases[PHASE_FILTER], &rq->pr, route);
	if (route == NULL)
		response_simple(rq->req, 503, "Service Unavailable", rq->body, rq->bodylen);
	else if (rows == NULL)
		response_simple(rq->req, 404, "Not Found", rq->body, rq->bodylen);
	else if (events_second_phase(&rq->rd, &rq->listen, rows, rq->body, rq->bodylen))
		rq->outcome = PIPELINE_EVENT_STREAM;
	handlers_end(nguc);
}

/*
 * Runs the request's handlers in its transaction, again in a transaction of
 * its own if the shared one would not do after all, and then phase 2 of an
 * event stream if phase 1 committed its LISTEN.
 */
static void
run_handlers(Request *rq)
{
	bool		committed;

	last_transaction_at = rq->started;
	activity_reported = true;
	request_init(&rq->rd, rq->req, request_cxt);
	auth_begin(&rq->auth);
	for (;;)
	{
		committed = run_in_transaction(rq, route_and_run);
		if (!rq->restart)
			break;
		rq->restart = false;
		rq->share = false;
	}
	if (rq->listening && committed)
	{
		events_listened(&rq->listen);
		/* Phase 2 has a handler_timeout of its own. */
		rq->deadline = webgres_handler_timeout > 0 ?
			TimestampTzPlusMilliseconds(GetCurrentTimestamp(), webgres_handler_timeout) : 0;
		/* A WebSocket's open handler runs once: phase 1 made it ready. */
		if (events_stream_ready())
			rq->outcome = PIPELINE_EVENT_STREAM;
		else
			(void) run_in_transaction(rq, catch_up_event_stream);
		/* Its response starts only once phase 2 has committed. */
		if (rq->outcome == PIPELINE_EVENT_STREAM)
			events_start_stream(rq->req);
		else
			events_forget_stream();
	}
	else if (rq->listening)
		events_forget_stream();
	/* Whatever became of the request, the next one must not see its claims. */
	request_clear_settings(&rq->rd);
}

/*
 * Routes and answers one request, set up by begin_request(): the phases
 * from the route match on (serve/phase.h), each of which may settle the
 * request's outcome.  The worker ran the phases before the route match.
 */
static void
serve(Request *rq)
{
	bool		answered;

	/*
	 * PHASE_PREFLIGHT: a CORS preflight is answered from the route table as
	 * last loaded, without a transaction and never by a handler; with a
	 * stale table, route_and_run() answers it.
	 */
	rq->pr.routes = routes_peek();
	answered = rq->split && rq->pr.routes != NULL &&
		!phase_run(&pipeline_phases[PHASE_PREFLIGHT], &rq->pr, NULL);

	/*
	 * PHASE_ROUTE, then PHASE_ACCESS, PHASE_AUTHENTICATE,
	 * PHASE_ACCESS_IDENTITY per matched route, and PHASE_ADMISSION
	 * (placement_of): outside a transaction when the tables were checked
	 * lately (a static mount's path, a constant route, a request for an
	 * executor: answer_without_transaction), else in the request's transaction (run_handlers), which
	 * also runs PHASE_CONTENT.
	 */
	if (!answered && !answer_without_transaction(rq))
		run_handlers(rq);

	/*
	 * PHASE_FILTER: the modules that need the answering route (CORS' allow
	 * headers; a stream had them in sink_begin).  The answer is then
	 * complete (rq->outcome says what it is) and the caller takes it to the
	 * exit; the filters that see the bytes as sent (compression, nosniff)
	 * and the access log are libh2o's, on the worker's path
	 * (http/response_phase_list.h), so that streams and static files pass
	 * them too.
	 */
	if (rq->outcome == PIPELINE_ANSWERED)
		phase_run(&pipeline_phases[PHASE_FILTER], &rq->pr, rq->route);
}

/* Sets up the pipeline's memory, routes and handlers; once per process. */
void
pipeline_init(void)
{
	request_cxt = AllocSetContextCreate(TopMemoryContext, "webgres request",
										ALLOCSET_DEFAULT_SIZES);
	routes_init();
	mounts_init();
	handler_init();
	cors_init();
	/* After cors_init(): CORS's policies hang on the routes before it looks. */
	routes_on_load(pipeline_phases_build);
	pipeline_phases_build(NULL);
	budget_timeout = RegisterTimeout(USER_TIMEOUT, budget_check);
}

/* Reads the configuration file again, and authentication's keys; after SIGHUP. */
void
pipeline_reload(void)
{
	ProcessConfigFile(PGC_SIGHUP);
	auth_reload();
	/* Settings that put modules on or off may have changed. */
	pipeline_phases_build(routes_peek());
}

/* Routes and answers a request; what became of it is the outcome. */
PipelineOutcome
pipeline_run(h2o_req_t *req, PipelineRun *run, char **body, size_t *bodylen)
{
	Request		rq;
	uint64		plan_at = plan_clock_us();

	run->failed = false;
	run->answered_by = 0;
	run->role = NULL;
	run->rerun = false;
	run->route_id = 0;
	run->max_concurrency = 0;
	run->static_mount = NULL;
	begin_request(&rq, req, run, body, bodylen);
	serve(&rq);
	run->plan_us = (int64) (plan_clock_us() - plan_at);
	MemoryContextReset(request_cxt);
	return rq.outcome;
}

/*
 * Ends the event streams whose role the route's owner may no longer become
 * (a REVOKE, a DROP ROLE, the role made a superuser), as requests are
 * refused: at most once every STREAM_ROLE_CHECK_MS, in a transaction of its
 * own whose start takes in the role changes other sessions made, and only
 * when there were any since the last look.  Streams opened with a token
 * signed by an HS secret that has since changed (webgres.jwt_secret_file's
 * content, webgres.jwt_secret), or verified with a key of a keys file whose
 * content a reload found changed, end in the same look, as new requests
 * with such a token are refused.
 */
static void
check_stream_roles(void)
{
	static TimestampTz checked_at = 0;
	static uint64 checked_generation = 0;
	MemoryContext oldcxt = CurrentMemoryContext;
	TimestampTz now;

	if (sse_identified_streams() == 0 && ws_identified_sockets() == 0)
		return;
	now = GetCurrentTimestamp();
	if (now - checked_at < STREAM_ROLE_CHECK_MS * 1000)
		return;
	checked_at = now;
	PG_TRY();
	{
		int			stale;

		StartTransactionCommand();
		/* Also rereads the secret file, or the keys file, when it is due. */
		if ((stale = sse_end_signer_changed(jwt_secret_generation(), jwt_keys_generation())) > 0)
			ereport(LOG,
					(errmsg("webgres ends %d event stream(s) opened with a token whose JWT secret or keys have changed",
							stale)));
		(void) ws_end_signer_changed(jwt_secret_generation(), jwt_keys_generation());
		if (auth_role_generation() != checked_generation)
		{
			int			ended;

			checked_generation = auth_role_generation();
			if ((ended = sse_end_unauthorised(auth_role_allowed)) > 0)
				ereport(LOG,
						(errmsg("webgres ends %d event stream(s) whose role may no longer be used by the route's owner",
								ended)));
			(void) ws_end_unauthorised(auth_role_allowed);
		}
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
}

/* Before the process waits: commits the shared transaction, reports idle. */
void
pipeline_before_wait(void)
{
	budget_stop();
	end_shared_transaction();
	check_stream_roles();
	refusal_log_flush();
	if (activity_reported)
	{
		/* Reported once a pass: a worker that is not waiting is not idle. */
		pgstat_report_activity(STATE_IDLE, NULL);
		activity_reported = false;
	}
}

/*
 * Before a run beside the pipeline's on the loop (a WebSocket's call, run
 * by exec/ws_dispatch.c in a transaction of its own): commits the shared
 * read-only transaction, and with budget puts the run, begun at began,
 * under webgres.inline_budget as run_route() puts a handler of a route in
 * mode auto; true if it did.
 */
bool
pipeline_inline_begin(TimestampTz began, bool budget)
{
	end_shared_transaction();
	if (!budget || route_placement_inline_budget_ms() <= 0)
		return false;
	budget_start(began);
	return true;
}

/*
 * After that run, or in its error-recovery path: takes it from under the
 * budget; true if the budget ran out (the run is being cancelled, and the
 * caller clears the cancel if the run finished anyway).
 */
bool
pipeline_inline_end(void)
{
	bool		fired = budget_end();

	budget_fired = false;
	return fired;
}

/* webgres.handler_timeout in milliseconds (pipeline.h). */
int
pipeline_handler_timeout_ms(void)
{
	return webgres_handler_timeout;
}

/* The deadline of a handler whose request became complete at from (pipeline.h). */
TimestampTz
pipeline_deadline_from(TimestampTz from)
{
	return webgres_handler_timeout > 0 ?
		TimestampTzPlusMilliseconds(from, webgres_handler_timeout) : 0;
}

/* webgres.expose_errors (pipeline.h). */
bool
pipeline_expose_errors(void)
{
	return webgres_expose_errors;
}

/* Defines the pipeline's settings (webgres.handler_timeout and its companions); from _PG_init. */
void
pipeline_define_settings(void)
{
	DefineCustomIntVariable("webgres.handler_timeout",
							"Longest time from a request's complete head to its response.",
							"Counted from when the request head was complete, so time "
							"spent waiting for an executor counts too; a request still "
							"without a response then is cancelled and answered 504. For a "
							"streamed response it bounds the time to the response head "
							"(webgres.stream_timeout bounds the rest). 0 turns the limit off.",
							&webgres_handler_timeout,
							HANDLER_TIMEOUT_DEFAULT_MS,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
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

	DefineCustomIntVariable("webgres.stream_timeout",
							"Longest time a streamed response may take, from the request head to its last byte.",
							"webgres.handler_timeout bounds a streamed response only until its "
							"first batch of rows is fetched and its head sent; from then on this "
							"bounds the rest, however slowly the client reads. A stream that "
							"runs out is cut and its transaction rolled back. A stream holds "
							"its snapshot, and so the xmin horizon, while it lasts. 0 means no "
							"limit.",
							&webgres_stream_timeout,
							STREAM_TIMEOUT_DEFAULT_MS,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}
