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
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "errors.h"
#include "handler.h"
#include "pipeline.h"
#include "request.h"
#include "response.h"
#include "routes.h"
#include "stats.h"
#include "webgres.h"

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
	bool		answered = false;
	RouteMatch	m;
	Route	   *r;
	int			ncaps;

	*share = false;
	if (routes == NULL)
		return false;

	routes_match_init(&m, routes, segs);
	while ((r = routes_match_next(&m, &ncaps, caps)) != NULL)
	{
		if (!method_matches(r, req, is_head))
			continue;
		if (first && r->cached != NULL &&
			now - last_transaction_at <= CONSTANT_ROUTE_RECHECK_MS * 1000)
		{
			response_replay(req, r->cached, body, bodylen);
			stats_count(STAT_FROM_MEMORY);
			answered = true;
			break;
		}
		first = false;
		if (!may_share || !handler_can_share(r))
			break;
		*share = true;
	}
	routes_match_end(&m);
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
		RouteMatch	m;
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

			routes_match_init(&m, routes, &segs);
			while (!answered && (r = routes_match_next(&m, &ncaps, caps)) != NULL)
			{
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
			routes_match_end(&m);

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
}

void
pipeline_serve(h2o_req_t *req, char **body, size_t *bodylen)
{
	serve(req, body, bodylen);
	MemoryContextReset(request_cxt);
}

void
pipeline_before_wait(void)
{
	end_shared_transaction();
	if (activity_reported)
	{
		/* Reported once a pass: a worker that is not waiting is not idle. */
		pgstat_report_activity(STATE_IDLE, NULL);
		activity_reported = false;
	}
}
