/*
 * health.c
 *		Liveness, readiness and role endpoints for load balancers.
 *
 * A load balancer probes every node often (HAProxy's default is every two
 * seconds per backend line), so a probe must cost no SQL and no backend
 * query: it is answered on the event loop, before routing, from a small
 * state the worker refreshes from shared memory at most every
 * HEALTH_REFRESH_MS (each pass of the loop, and on a probe that finds it
 * older).  Each endpoint is off while its path setting is empty.
 *
 *   liveness   200 while the worker's loop runs.
 *   readiness  200 on a primary, and on a standby whose replay is no more
 *				than webgres.max_replica_lag behind what it received and
 *				is not paused; 503 otherwise, and while the worker stops or
 *				no executor runs (when webgres.executors > 0).
 *   primary    200 on the primary only, so a balancer can send writes
 *				there by the status alone.
 *
 * Replay lag is measured here rather than read from a timestamp: the
 * usual "now minus pg_last_xact_replay_timestamp()" reads as hours of lag
 * on a standby of an idle primary the moment one write arrives.  Instead
 * the worker notes the WAL position received when replay was last seen
 * behind it, and the time; the lag is how long ago that was, until replay
 * passes it.  So it is the age of the oldest WAL received and not yet
 * replayed, to within the refresh period.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "replication/walreceiver.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "core/settings.h"
#include "core/stats.h"
#include "http/health.h"
#include "message/errors.h"
#include "message/response.h"
#include "serve/phase.h"

/* webgres.max_replica_lag's default, in milliseconds. */
#define MAX_REPLICA_LAG_DEFAULT_MS 10000

/* The health endpoints' settings (health_define_settings). */
static char *webgres_liveness_path;
static char *webgres_readiness_path;
static char *webgres_primary_path;
static int	webgres_max_replica_lag = MAX_REPLICA_LAG_DEFAULT_MS;

/* How stale the node's state may be when a probe reads it. */
#define HEALTH_REFRESH_MS 100
/* Room for the JSON body of any answer. */
#define HEALTH_BODY_MAX 256

typedef struct NodeState
{
	TimestampTz refreshed_at;	/* 0: never */
	bool		standby;		/* in recovery */
	bool		replay_paused;
	bool		receiving;		/* a WAL receiver is streaming */
	XLogRecPtr	pending_lsn;	/* received, not yet replayed when noted */
	TimestampTz pending_since;	/* when pending_lsn was noted; 0: caught up */
	int64		lag_ms;
	int			executors;		/* executors running */
	bool		stopping;
} NodeState;

static NodeState node;

/* Reads the recovery state from shared memory and updates the lag. */
static void
refresh_now(TimestampTz now)
{
	node.refreshed_at = now;
	node.executors = stats_executors_running();
	node.standby = RecoveryInProgress();
	if (!node.standby)
	{
		node.replay_paused = false;
		node.receiving = false;
		node.pending_since = 0;
		node.lag_ms = 0;
		return;
	}

	{
		XLogRecPtr	received = GetWalRcvFlushRecPtr(NULL, NULL);
		XLogRecPtr	replayed = GetXLogReplayRecPtr(NULL);

		node.replay_paused = GetRecoveryPauseState() != RECOVERY_NOT_PAUSED;
		node.receiving = WalRcvStreaming();

		/* Replay passed what was pending: start again from what is received now. */
		if (node.pending_since != 0 && replayed >= node.pending_lsn)
			node.pending_since = 0;
		if (node.pending_since == 0 && received > replayed)
		{
			node.pending_lsn = received;
			node.pending_since = now;
		}
		node.lag_ms = node.pending_since == 0 ? 0 :
			TimestampDifferenceMilliseconds(node.pending_since, now);
	}
}

/* Brings the node's state up to date if it is older than the refresh period. */
void
health_refresh(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (node.refreshed_at == 0 ||
		TimestampDifferenceExceeds(node.refreshed_at, now, HEALTH_REFRESH_MS))
		refresh_now(now);
}

/* The worker is stopping: readiness answers 503 from now on. */
void
health_set_stopping(void)
{
	node.stopping = true;
}

/* True when this node is a standby (in recovery), as last refreshed. */
bool
health_is_standby(void)
{
	return node.standby;
}

/* Why this node should take no traffic now, or NULL if it should. */
static const char *
not_ready_reason(void)
{
	if (node.stopping)
		return "shutting down";
	if (webgres_executors > 0 && node.executors == 0)
		return "no executor is running";
	if (node.standby && node.replay_paused)
		return "replay is paused";
	if (node.standby && node.lag_ms > webgres_max_replica_lag)
		return "replay lag is over webgres.max_replica_lag";
	return NULL;
}

/* True if the request's path (without its query) is the setting's path. */
static bool
path_is(h2o_req_t *req, const char *setting)
{
	size_t		len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;

	return setting != NULL && setting[0] != '\0' &&
		h2o_memis(req->path.base, len, setting, strlen(setting));
}

/* Sets a JSON answer with no caching. */
static void
answer_json(h2o_req_t *req, int status, const char *json, char **body, size_t *bodylen)
{
	size_t		len = strlen(json);

	req->res.status = status;
	req->res.reason = http_reason(status);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
				   H2O_STRLIT("application/json"));
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
				   H2O_STRLIT("no-store"));
	*body = h2o_mem_alloc_pool(&req->pool, len);
	memcpy(*body, json, len);
	*bodylen = len;
}

/* The readiness answer: status, role, lag and, when not ready, why. */
static void
answer_readiness(h2o_req_t *req, char **body, size_t *bodylen)
{
	const char *reason = not_ready_reason();
	char		json[HEALTH_BODY_MAX];

	if (reason == NULL)
		snprintf(json, sizeof(json),
				 "{\"status\":\"ready\",\"role\":\"%s\",\"replay_lag_ms\":" INT64_FORMAT "}\n",
				 node.standby ? "standby" : "primary", node.lag_ms);
	else
		snprintf(json, sizeof(json),
				 "{\"status\":\"not ready\",\"role\":\"%s\",\"replay_lag_ms\":" INT64_FORMAT ",\"reason\":\"%s\"}\n",
				 node.standby ? "standby" : "primary", node.lag_ms, reason);
	answer_json(req, reason == NULL ? 200 : 503, json, body, bodylen);
}

/*
 * Answers the request if its path is one of the configured health paths;
 * returns false (and touches nothing) otherwise.
 */
static bool
health_try_answer(h2o_req_t *req, char **body, size_t *bodylen)
{
	bool		live = path_is(req, webgres_liveness_path);
	bool		ready = !live && path_is(req, webgres_readiness_path);
	bool		primary = !live && !ready && path_is(req, webgres_primary_path);

	if (!live && !ready && !primary)
		return false;

	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
		!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
	{
		response_simple(req, 405, "Method Not Allowed", body, bodylen);
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
					   H2O_STRLIT("GET, HEAD"));
		return true;
	}

	health_refresh();
	if (live)
		answer_json(req, 200, "{\"status\":\"alive\"}\n", body, bodylen);
	else if (ready)
		answer_readiness(req, body, bodylen);
	else if (!node.standby)
		answer_json(req, 200, "{\"role\":\"primary\"}\n", body, bodylen);
	else
		answer_json(req, 503, "{\"role\":\"standby\"}\n", body, bodylen);
	return true;
}

/* PHASE_ENDPOINT: answers a health path; false then. */
static bool
health_phase(PhaseRequest *pr, const Route *unused)
{
	return !health_try_answer(pr->req, pr->body, pr->bodylen);
}

/* Whether any health path is set (an empty one is off). */
static bool
health_enabled(const RouteTable *unused)
{
	return (webgres_liveness_path != NULL && webgres_liveness_path[0] != '\0') ||
		(webgres_readiness_path != NULL && webgres_readiness_path[0] != '\0') ||
		(webgres_primary_path != NULL && webgres_primary_path[0] != '\0');
}

/* The module: the liveness, readiness and primary endpoints. */
const PhaseModule health_module = {
	.name = "health",
	.enabled = health_enabled,
	.hooks = {[PHASE_ENDPOINT] = health_phase}
};

/* The metrics and health paths: empty (off), or an absolute path without a query. */
bool
health_check_path_setting(char **newval, void **extra, GucSource source)
{
	const char *p = *newval;

	if (p == NULL || p[0] == '\0')
		return true;
	if (p[0] != '/' || strpbrk(p, "?# \t") != NULL)
	{
		GUC_check_errdetail("The path must start with \"/\" and hold no query, fragment or blanks.");
		return false;
	}
	return true;
}

/* Defines the health endpoints' settings; from _PG_init. */
void
health_define_settings(void)
{
	DefineCustomStringVariable("webgres.liveness_path",
							   "Path answered 200 while an HTTP worker's loop runs.",
							   "For a load balancer's or orchestrator's liveness probe; "
							   "answered without SQL. Empty turns the endpoint off.",
							   &webgres_liveness_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   health_check_path_setting, NULL, NULL);

	DefineCustomStringVariable("webgres.readiness_path",
							   "Path answered 200 when this node should take traffic, 503 when not.",
							   "Not ready: a standby whose replay lags more than "
							   "webgres.max_replica_lag or is paused, a worker that is "
							   "stopping, or no executor running. The JSON body gives the "
							   "role and the lag. Empty turns the endpoint off.",
							   &webgres_readiness_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   health_check_path_setting, NULL, NULL);

	DefineCustomStringVariable("webgres.primary_path",
							   "Path answered 200 on the primary and 503 on a standby.",
							   "Lets a load balancer send writes to the primary by status "
							   "alone. Empty turns the endpoint off.",
							   &webgres_primary_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   health_check_path_setting, NULL, NULL);

	DefineCustomIntVariable("webgres.max_replica_lag",
							"Most replay lag at which a standby still reports itself ready.",
							"The lag is the age of the oldest WAL the standby received and "
							"has not replayed.",
							&webgres_max_replica_lag,
							MAX_REPLICA_LAG_DEFAULT_MS,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}
