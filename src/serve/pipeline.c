/*
 * pipeline.c
 *		Routes and answers one request: the per-request work of a worker.
 *
 * A request is first looked up in the route table as last loaded, without
 * a transaction: a constant route answers from memory.  Otherwise it runs
 * in a transaction of its own, or in a read-only one shared with the other
 * read-only requests of the same pass of the event loop.  The contract is
 * in pipeline.h.
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
#include "handler/handler.h"
#include "serve/pipeline.h"
#include "serve/replica.h"
#include "message/request.h"
#include "message/response.h"
#include "routes/route_limits.h"
#include "routes/routes.h"
#include "common/stats.h"
#include "common/settings.h"

/* Holds what one request needs beyond its h2o pool; reset after each. */
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
		GetCurrentTimestamp() < TimestampTzPlusMilliseconds(began, webgres_inline_budget))
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
		int			period = Max(1, webgres_inline_budget / 2);

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
static RouteLimits *
limits_of(Route *r)
{
	if (!r->limits_looked_up)
	{
		r->limits = route_limits_get(r->id);
		r->limits_looked_up = true;
	}
	return r->limits;
}

/*
 * Whether the route answers with an event stream: its result has a
 * channels column.  Such a response is held open by the worker that
 * listens for its notifications, so it never leaves the event loop.  Known
 * once this process has prepared the handler.
 */
static bool
answers_event_stream(const Route *r)
{
	TupleDesc	desc = handler_result_desc(r);

	if (desc == NULL)
		return false;
	for (int i = 0; i < desc->natts; i++)
		if (strcmp(NameStr(TupleDescAttr(desc, i)->attname), "channels") == 0)
			return true;
	return false;
}

/* True if, on the event loop, route r's requests go to an executor. */
static bool
wants_executor(Route *r)
{
	if (r->mode == ROUTE_MODE_STREAM)
		return true;
	if (r->mode == ROUTE_MODE_INLINE)
		return false;
	if (r->mode == ROUTE_MODE_AUTO && webgres_inline_budget > 0 &&
		!route_limits_is_slow(limits_of(r)))
		return false;
	return !answers_event_stream(r);
}

/* Notes in run that route r sends the request to an executor. */
static void
set_hand_off(PipelineRun *run, const Route *r, bool rerun)
{
	run->hand_off = true;
	run->rerun = rerun;
	run->route_id = r->id;
	run->max_concurrency = r->max_concurrency;
}

/*
 * Logs the error in full, rolls back, and turns it into a response.  Runs in
 * the error-recovery path, so it must not raise.
 */
static void
answer_error(h2o_req_t *req, const char *route_label, TimestampTz deadline,
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
	budget_stop();
	QueryCancelPending = false;

	/* A write that got past the plan check on a standby (replica.c). */
	if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION && RecoveryInProgress())
	{
		replica_answer_needs_primary(req, body, bodylen);
		return;
	}

	status = http_status_for_sqlstate(edata->sqlerrcode, &chosen);
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		(deadline == 0 ||
		 TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 5) < deadline))
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

/*
 * The error-recovery path of a handler cancelled after webgres.inline_budget:
 * rolls back (nothing was committed), marks the route slow for every
 * worker, and asks for the request to be run again on an executor.  False
 * for any other error, which answer_error answers as usual.
 */
static bool
give_up_on_loop(h2o_req_t *req, Route *r, PipelineRun *run)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(request_cxt);
	edata = CopyErrorData();
	if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED)
		return false;
	FlushErrorState();
	AbortCurrentTransaction();
	shared_xact_open = false;
	disable_timeout(STATEMENT_TIMEOUT, false);
	budget_stop();
	QueryCancelPending = false;
	budget_fired = false;

	route_limits_mark_slow(limits_of(r));
	req->res.headers = (h2o_headers_t) {NULL};
	set_hand_off(run, r, true);
	ereport(LOG,
			(errmsg("webgres route %s ran longer than webgres.inline_budget (%d ms) on the event loop",
					r->label, webgres_inline_budget),
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
 * start if m already walked them in this table (the second look of a
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
 * Looks at the routes the request matches in the table as last loaded,
 * without a transaction.  Answers from the cached response of a constant
 * route, if the first match is one and the table was checked recently, and
 * returns true.  Otherwise sets *share to whether every match has a handler
 * that can share a read-only transaction; serve() checks again with the
 * current table.
 */
static bool
look_up_without_transaction(h2o_req_t *req, const PathSegments *segs, bool is_head,
							TimestampTz now, bool on_loop, RouteMatch *m, bool *share,
							Route **offload, int64 *answered_by, char **body, size_t *bodylen)
{
	RouteTable *routes = routes_peek();
	PathCapture caps[MAX_PATH_SEGMENTS + 1];
	bool		first = true;
	bool		may_share = webgres_share_read_transactions &&
		DefaultXactIsoLevel == XACT_READ_COMMITTED;
	bool		answered = false;
	bool		sharing = true;
	Route	   *r;
	int			ncaps;
	const CachedResponse *cached;

	*share = false;
	*offload = NULL;
	if (routes == NULL)
		return false;

	match_begin(m, routes, segs);
	while ((r = routes_match_next(m, &ncaps, caps)) != NULL)
	{
		if (!method_matches(r, req, is_head))
			continue;
		/* A request runs wholly in one place: any route may send it off. */
		if (on_loop && wants_executor(r))
		{
			*offload = r;
			break;
		}
		if (first && (cached = handler_cached_response(r)) != NULL &&
			now - last_transaction_at <= CONSTANT_ROUTE_RECHECK_MS * 1000)
		{
			response_replay(req, cached, body, bodylen);
			stats_count(STAT_FROM_MEMORY);
			*answered_by = r->id;
			answered = true;
			break;
		}
		first = false;
		if (sharing)
		{
			if (may_share && handler_can_share(r))
				*share = true;
			else
			{
				/* Keep looking only for a route that sends the request off. */
				sharing = false;
				if (!on_loop)
					break;
			}
		}
	}
	if (*offload != NULL)
		*share = false;
	return answered;
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
serve(h2o_req_t *req, PipelineRun *run, char **body, size_t *bodylen)
{
	RequestData rd;
	const char *volatile label = NULL;
	TimestampTz started;
	TimestampTz deadline;
	bool		on_loop = (run->place == PIPELINE_ON_LOOP);
	Route	   *early = NULL;
	Route	   *volatile offload = NULL;
	Route	   *volatile running = NULL;	/* under the inline budget */
	bool		is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
	size_t		pathlen = (req->query_at == SIZE_MAX) ? req->path.len : req->query_at;
	PathSegments segs;
	bool		split = path_split(req->path.base, pathlen, &segs);
	bool		share = false;
	volatile bool restart;
	RouteMatch	m;

	/* One clock reading serves both the cache check and the statement. */
	SetCurrentStatementStartTimestamp();
	started = GetCurrentStatementStartTimestamp();
	run->started = started;
	/* handler_timeout counts from the complete request head, queueing included. */
	deadline = webgres_handler_timeout > 0 ?
		TimestampTzPlusMilliseconds(run->head_at != 0 ? run->head_at : started,
									webgres_handler_timeout) : 0;
	m.table = NULL;
	if (split && look_up_without_transaction(req, &segs, is_head, started, on_loop,
											 &m, &share, &early, &run->answered_by, body, bodylen))
		return;
	if (early != NULL)
	{
		set_hand_off(run, early, false);
		return;
	}

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
		Route	   *r;
		int			ncaps;
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
		handler_forget_stale_responses();

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
			if (deadline != 0)
				enable_timeout_at(STATEMENT_TIMEOUT, deadline);

			match_begin(&m, routes, &segs);
			while (!answered && (r = routes_match_next(&m, &ncaps, caps)) != NULL)
			{
				path_matched = true;
				if (!method_matches(r, req, is_head))
					continue;
				method_matched = true;
				/* A standby answers what needs the primary without running it (replica.c). */
				if (RecoveryInProgress() && handler_needs_primary(r))
				{
					replica_answer_needs_primary(req, body, bodylen);
					answered = true;
					break;
				}
				if (on_loop && wants_executor(r))
				{
					offload = r;
					break;
				}
				if (shared_xact_open && !handler_can_share(r))
				{
					/* The route or its plan changed since the request was looked at. */
					restart = true;
					break;
				}
				label = r->label;
				run->answered_by = r->id;
				pgstat_report_activity(STATE_RUNNING, r->label);
				request_set_captures(&rd, caps, ncaps);
				/* An event stream's handler stays on the loop whatever it takes. */
				if (on_loop && r->mode == ROUTE_MODE_AUTO && !answers_event_stream(r))
				{
					running = r;
					budget_start(started);
				}
				if (r->mode == ROUTE_MODE_STREAM)
				{
					/* A stream answers even with no rows: an empty document. */
					handler_stream(r, &rd, run->sink, is_head,
								   webgres_stream_timeout > 0 ?
								   TimestampTzPlusMilliseconds(run->head_at != 0 ? run->head_at : started,
															   webgres_stream_timeout) : 0,
								   body, bodylen);
					answered = true;
				}
				else
					answered = handler_run(r, &rd, body, bodylen);
				if (running != NULL)
				{
					/* It finished as the budget ran out: nothing to cancel. */
					if (budget_end())
						QueryCancelPending = false;
					running = NULL;
				}
			}

			/* Armed by handler_timeout, or by a stream for its whole length. */
			disable_timeout(STATEMENT_TIMEOUT, false);
			SPI_finish();
			/* Settings a handler changed with set_config() end with the request. */
			AtEOXact_GUC(false, nguc);

			if (!answered && !restart && offload == NULL)
			{
				const char *allow = (path_matched && !method_matched) ?
					allowed_methods(routes, &segs, caps) : NULL;

				run->answered_by = 0;

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
		{
			/* A request that goes elsewhere leaves nothing done here. */
			if (offload != NULL)
				AbortCurrentTransaction();
			else
				CommitTransactionCommand();
		}
	}
	PG_CATCH();
	{
		offload = NULL;
		run->failed = true;
		if (running == NULL || !budget_fired || answers_event_stream(running) ||
			!give_up_on_loop(req, running, run))
			answer_error(req, label, deadline, body, bodylen);
	}
	PG_END_TRY();

	/* Event streams: a route that LISTENed catches up and streams (events.c). */
	if (events_pending())
		events_second_phase(&rd, body, bodylen);

	if (offload != NULL)
		set_hand_off(run, offload, false);

	if (restart)
	{
		share = false;
		goto again;
	}
}

void
pipeline_init(void)
{
	request_cxt = AllocSetContextCreate(TopMemoryContext, "webgres request",
										ALLOCSET_DEFAULT_SIZES);
	routes_init();
	handler_init();
	budget_timeout = RegisterTimeout(USER_TIMEOUT, budget_check);
}

void
pipeline_run(h2o_req_t *req, PipelineRun *run, char **body, size_t *bodylen)
{
	run->hand_off = false;
	run->rerun = false;
	run->route_id = 0;
	run->max_concurrency = 0;
	run->failed = false;
	run->answered_by = 0;
	run->started = 0;
	serve(req, run, body, bodylen);
	MemoryContextReset(request_cxt);
}

void
pipeline_serve(h2o_req_t *req, char **body, size_t *bodylen)
{
	PipelineRun run;

	memset(&run, 0, sizeof(run));
	run.place = PIPELINE_RUN_HERE;
	pipeline_run(req, &run, body, bodylen);
}

void
pipeline_before_wait(void)
{
	budget_stop();
	end_shared_transaction();
	if (activity_reported)
	{
		/* Reported once a pass: a worker that is not waiting is not idle. */
		pgstat_report_activity(STATE_IDLE, NULL);
		activity_reported = false;
	}
}
