/*
 * metrics.c
 *		The Prometheus endpoint.
 *
 * A GET of webgres.metrics_path is answered from shared memory by
 * whichever worker takes it, before any route is looked at and without a
 * transaction: per-route histograms and counters (route_stats.c), the
 * executor state of each route (route_placement.c) and each worker's counters
 * and connections (stats.c).  Every worker reads the same shared figures,
 * so a scrape gets the whole server's whatever worker answers.
 *
 * Routes are labelled by id, method and path pattern, never by the path
 * requested, so the number of series is bounded by the number of routes.
 * Their names come from the worker's copy of the route table as last
 * loaded; a route that is in no table this worker loaded (deleted, or new
 * and not yet requested here) is left out until it is.
 *
 * webgres.metrics_listen opens listeners of their own, with an h2o host
 * whose one handler answers the metrics path and 404 to the rest; their
 * connections are few and short, so they are not counted against the
 * worker's connection capacity.  Without them, the metrics path is
 * answered on the main listeners, which face the clients, only to those
 * whose address lies in webgres.metrics_allow (loopback by default); any
 * other client is answered 404, as if there were no metrics there.
 */
#include "postgres.h"

#include <math.h>

#include <sys/socket.h>

#include "lib/stringinfo.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/health.h"
#include "http/listen.h"
#include "http/metrics.h"
#include "http/response_phases.h"
#include "parse/networks.h"
#include "routes/route_placement.h"
#include "routes/route_names.h"
#include "routes/route_stats.h"
#include "serve/phase.h"
#include "core/pg_compat.h"
#include "core/settings.h"
#include "core/stats.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static h2o_globalconf_t metrics_config;
static h2o_accept_ctx_t metrics_accept_ctx;

/* webgres.metrics_allow as read by its check hook (from guc_malloc, as GUC extras are). */
static NetworkList *metrics_allow = NULL;
/* webgres.metrics_allow itself, and the endpoint's path and listeners (metrics_define_settings). */
static char *webgres_metrics_allow;
static char *webgres_metrics_path;
static char *webgres_metrics_listen;

/* Appends s as a Prometheus label value: backslash, quote and newline escaped. */
static void
append_label_value(StringInfo buf, const char *s)
{
	for (; *s; s++)
	{
		if (*s == '\\' || *s == '"')
		{
			appendStringInfoChar(buf, '\\');
			appendStringInfoChar(buf, *s);
		}
		else if (*s == '\n')
			appendStringInfoString(buf, "\\n");
		else
			appendStringInfoChar(buf, *s);
	}
}

/*
 * The labels of a route (route_id="3",method="GET",route="/x/:id"), in
 * the current memory context; NULL if no table this worker loaded has it.
 */
static const char *
labels_of(int64 route_id)
{
	const char *method;
	const char *path;
	StringInfoData buf;

	if (!route_names_lookup(route_id, &method, &path))
		return NULL;
	initStringInfo(&buf);
	appendStringInfo(&buf, "route_id=\"" INT64_FORMAT "\",method=\"", route_id);
	append_label_value(&buf, method != NULL ? method : "ANY");
	appendStringInfoString(&buf, "\",route=\"");
	append_label_value(&buf, path);
	appendStringInfoChar(&buf, '"');
	return buf.data;
}

/* The sections of the exposition, each written as the figures are walked. */
typedef struct Exposition
{
	StringInfoData hist;		/* the latency histograms */
	StringInfoData responses;
	StringInfoData errors;
	StringInfoData timeouts;
	StringInfoData queue_full;
	StringInfoData rate_limited;
	StringInfoData bytes;
	StringInfoData slow;
	StringInfoData running;
	StringInfoData queued;
	StringInfoData w_requests;
	StringInfoData w_responses;
	StringInfoData w_memory;
	StringInfoData w_errors;
	StringInfoData w_loads;
	StringInfoData w_connections;
	int			workers;
	int64		connections;
} Exposition;

static const char *const status_classes[5] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

/* Writes one route's histogram and counters. */
static void
put_route(const RouteStatsSnapshot *snap, void *arg)
{
	Exposition *e = arg;
	const char *labels = labels_of(snap->route_id);
	uint64		cumulative = 0;

	if (labels == NULL)
		return;
	for (int b = 0; b < ROUTE_STATS_BUCKETS; b++)
	{
		cumulative += snap->buckets[b];
		if (b < ROUTE_STATS_BOUNDS)
			appendStringInfo(&e->hist, "webgres_route_request_duration_seconds_bucket{%s,le=\"%g\"} " UINT64_FORMAT "\n",
							 labels, (double) route_stats_bucket_bound_us(b) / 1e6, cumulative);
		else
			appendStringInfo(&e->hist, "webgres_route_request_duration_seconds_bucket{%s,le=\"+Inf\"} " UINT64_FORMAT "\n",
							 labels, cumulative);
	}
	appendStringInfo(&e->hist, "webgres_route_request_duration_seconds_sum{%s} %.6f\n",
					 labels, (double) snap->latency_sum_us / 1e6);
	appendStringInfo(&e->hist, "webgres_route_request_duration_seconds_count{%s} " UINT64_FORMAT "\n",
					 labels, cumulative);
	for (int k = 0; k < 5; k++)
		appendStringInfo(&e->responses, "webgres_route_responses_total{%s,code=\"%s\"} " UINT64_FORMAT "\n",
						 labels, status_classes[k], snap->status_class[k]);
	appendStringInfo(&e->errors, "webgres_route_handler_errors_total{%s} " UINT64_FORMAT "\n",
					 labels, snap->handler_errors);
	appendStringInfo(&e->timeouts, "webgres_route_timeouts_total{%s} " UINT64_FORMAT "\n",
					 labels, snap->timeouts);
	appendStringInfo(&e->queue_full, "webgres_route_queue_full_total{%s} " UINT64_FORMAT "\n",
					 labels, snap->queue_full);
	appendStringInfo(&e->rate_limited, "webgres_route_rate_limited_total{%s} " UINT64_FORMAT "\n",
					 labels, snap->rate_limited);
	appendStringInfo(&e->bytes, "webgres_route_response_bytes_total{%s} " UINT64_FORMAT "\n",
					 labels, snap->bytes_out);
}

/* Writes one route's executor state. */
static void
put_execution(int64 route_id, bool slow, int running, int queued, void *arg)
{
	Exposition *e = arg;
	const char *labels = labels_of(route_id);

	if (labels == NULL)
		return;
	appendStringInfo(&e->slow, "webgres_route_slow{%s} %d\n", labels, slow ? 1 : 0);
	appendStringInfo(&e->running, "webgres_route_executor_running{%s} %d\n", labels, running);
	appendStringInfo(&e->queued, "webgres_route_executor_queued{%s} %d\n", labels, queued);
}

/* Writes one worker's counters. */
static void
put_worker(const StatsWorkerSnapshot *w, void *arg)
{
	Exposition *e = arg;
	char		lab[32];

	snprintf(lab, sizeof(lab), "worker=\"%d\"", w->worker);
	e->workers++;
	e->connections += w->connections;
	appendStringInfo(&e->w_requests, "webgres_worker_requests_total{%s} " UINT64_FORMAT "\n",
					 lab, w->counters[STAT_REQUESTS]);
	for (int k = STAT_2XX; k <= STAT_5XX; k++)
		appendStringInfo(&e->w_responses, "webgres_worker_responses_total{%s,code=\"%s\"} " UINT64_FORMAT "\n",
						 lab, status_classes[k - STAT_2XX + 1], w->counters[k]);
	appendStringInfo(&e->w_memory, "webgres_worker_from_memory_total{%s} " UINT64_FORMAT "\n",
					 lab, w->counters[STAT_FROM_MEMORY]);
	appendStringInfo(&e->w_errors, "webgres_worker_handler_errors_total{%s} " UINT64_FORMAT "\n",
					 lab, w->counters[STAT_HANDLER_ERRORS]);
	appendStringInfo(&e->w_loads, "webgres_worker_route_loads_total{%s} " UINT64_FORMAT "\n",
					 lab, w->counters[STAT_ROUTE_LOADS]);
	appendStringInfo(&e->w_connections, "webgres_worker_connections{%s} %d\n",
					 lab, w->connections);
}

/* Appends a metric family: its HELP and TYPE lines, then its samples. */
static void
put_family(StringInfo out, const char *name, const char *type, const char *help,
		   StringInfo samples)
{
	appendStringInfo(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	appendBinaryStringInfo(out, samples->data, samples->len);
}

/* The exposition text, in the current memory context. */
char *
metrics_render(void)
{
	Exposition e;
	StringInfoData out;
	StringInfo	sections[] = {&e.hist, &e.responses, &e.errors, &e.timeouts, &e.queue_full,
		&e.rate_limited, &e.bytes, &e.slow, &e.running, &e.queued, &e.w_requests, &e.w_responses,
	&e.w_memory, &e.w_errors, &e.w_loads, &e.w_connections};

	memset(&e, 0, sizeof(e));
	for (int i = 0; i < (int) lengthof(sections); i++)
		initStringInfo(sections[i]);
	(void) route_stats_walk(put_route, &e);
	(void) route_placement_walk(put_execution, &e);
	(void) stats_walk(put_worker, &e);

	initStringInfo(&out);
	put_family(&out, "webgres_route_request_duration_seconds", "histogram",
			   "Time from routing a request to handing its response to the connection (a stream: to its end).", &e.hist);
	put_family(&out, "webgres_route_responses_total", "counter",
			   "Responses of the route by status class.", &e.responses);
	put_family(&out, "webgres_route_handler_errors_total", "counter",
			   "Requests whose handler's transaction ended in an error.", &e.errors);
	put_family(&out, "webgres_route_timeouts_total", "counter",
			   "Requests answered 504 because webgres.handler_timeout ran out.", &e.timeouts);
	put_family(&out, "webgres_route_queue_full_total", "counter",
			   "Requests refused 503 because the route's executor queue was full.", &e.queue_full);
	put_family(&out, "webgres_route_rate_limited_total", "counter",
			   "Requests refused 429 because a rate limit was reached (docs/rate-limits.md).", &e.rate_limited);
	put_family(&out, "webgres_route_response_bytes_total", "counter",
			   "Response body bytes sent.", &e.bytes);
	put_family(&out, "webgres_route_slow", "gauge",
			   "1 while mode auto runs the route on executors.", &e.slow);
	put_family(&out, "webgres_route_executor_running", "gauge",
			   "Requests of the route running on executors now.", &e.running);
	put_family(&out, "webgres_route_executor_queued", "gauge",
			   "Requests of the route waiting for an executor now.", &e.queued);
	put_family(&out, "webgres_worker_requests_total", "counter",
			   "Requests the HTTP worker answered.", &e.w_requests);
	put_family(&out, "webgres_worker_responses_total", "counter",
			   "Responses of the HTTP worker by status class.", &e.w_responses);
	put_family(&out, "webgres_worker_from_memory_total", "counter",
			   "Requests answered from a constant route's cached response.", &e.w_memory);
	put_family(&out, "webgres_worker_handler_errors_total", "counter",
			   "Requests of the worker whose transaction ended in an error.", &e.w_errors);
	put_family(&out, "webgres_worker_route_loads_total", "counter",
			   "Times the worker loaded the route table.", &e.w_loads);
	put_family(&out, "webgres_worker_connections", "gauge",
			   "Client connections the worker holds open.", &e.w_connections);
	appendStringInfo(&out, "# HELP webgres_connections Client connections held open by all workers.\n"
					 "# TYPE webgres_connections gauge\nwebgres_connections " INT64_FORMAT "\n",
					 e.connections);
	appendStringInfo(&out, "# HELP webgres_workers HTTP workers running.\n"
					 "# TYPE webgres_workers gauge\nwebgres_workers %d\n", e.workers);
	appendStringInfo(&out, "# HELP webgres_executors Executors configured (webgres.executors).\n"
					 "# TYPE webgres_executors gauge\nwebgres_executors %d\n", webgres_executors);
	return out.data;
}

/* Answers req with the exposition, 405 for other methods than GET and HEAD. */
static void
answer(h2o_req_t *req)
{
	static h2o_generator_t generator = {NULL, NULL};
	bool		is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "webgres metrics",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	h2o_iovec_t body;

	if (!is_head && !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
	{
		req->res.status = 405;
		req->res.reason = "Method Not Allowed";
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET, HEAD"));
		body = h2o_iovec_init(H2O_STRLIT("Method Not Allowed\n"));
	}
	else
	{
		char	   *text = metrics_render();

		body = h2o_strdup(&req->pool, text, strlen(text));
		req->res.status = 200;
		req->res.reason = "OK";
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
					   H2O_STRLIT(METRICS_CONTENT_TYPE));
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	req->res.content_length = body.len;
	h2o_start_response(req, &generator);
	h2o_send(req, is_head ? NULL : &body, is_head ? 0 : 1, H2O_SEND_STATE_FINAL);
}

/* Whether req's path, without its query, is webgres.metrics_path. */
static bool
asks_for_metrics(h2o_req_t *req)
{
	size_t		len = req->query_at == SIZE_MAX ? req->path.len : req->query_at;

	return webgres_metrics_path != NULL && webgres_metrics_path[0] != '\0' &&
		h2o_memis(req->path.base, len, webgres_metrics_path, strlen(webgres_metrics_path));
}

/* Whether req's client lies in a network of webgres.metrics_allow. */
static bool
client_allowed(h2o_req_t *req)
{
	struct sockaddr_storage ss;

	if (metrics_allow == NULL || req->conn->callbacks->get_peername == NULL ||
		req->conn->callbacks->get_peername(req->conn, (struct sockaddr *) &ss) == 0)
		return false;
	return networks_contain(metrics_allow, (struct sockaddr *) &ss);
}

/*
 * Answers req if it asks for webgres.metrics_path; returns whether it did.
 * A client outside webgres.metrics_allow gets 404 (no route is tried, so
 * none answers the path for it either).
 */
static bool
metrics_try_answer(h2o_req_t *req)
{
	static h2o_generator_t generator = {NULL, NULL};
	static const char not_found[] = "Not Found\n";

	if (webgres_metrics_listen[0] != '\0' || !asks_for_metrics(req))
		return false;
	if (client_allowed(req))
	{
		answer(req);
		return true;
	}
	req->res.status = 404;
	req->res.reason = "Not Found";
	req->res.content_length = sizeof(not_found) - 1;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
				   H2O_STRLIT("text/plain; charset=utf-8"));
	h2o_start_response(req, &generator);
	if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
		h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
	else
	{
		h2o_iovec_t body = h2o_iovec_init(not_found, sizeof(not_found) - 1);

		h2o_send(req, &body, 1, H2O_SEND_STATE_FINAL);
	}
	return true;
}

/* webgres.metrics_allow's check hook: reads the list into *extra. */
static bool
metrics_check_allow(char **newval, void **extra, GucSource source)
{
	NetworkList *list = guc_malloc(LOG, sizeof(NetworkList));
	const char *error;

	if (list == NULL)
	{
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return false;
	}
	if (!networks_parse(*newval, list, &error))
	{
		guc_free(list);
		GUC_check_errdetail("%s.", error);
		GUC_check_errhint("List networks as 127.0.0.0/8, ::1/128 or 10.1.2.3.");
		return false;
	}
	*extra = list;
	return true;
}

/* webgres.metrics_allow's assign hook: the list its check hook read. */
static void
metrics_assign_allow(const char *newval, void *extra)
{
	metrics_allow = extra;
}

/* The handler of the metrics listeners: the metrics path, or 404. */
static int
on_metrics_req(h2o_handler_t *self, h2o_req_t *req)
{
	if (asks_for_metrics(req))
		answer(req);
	else
		h2o_send_error_404(req, "Not Found", "Not Found\n", 0);
	return 0;
}

/* A connection to a metrics listener: h2o serves it with the metrics host. */
static void
on_metrics_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err != NULL || (sock = h2o_evloop_socket_accept(listener)) == NULL)
		return;
	h2o_accept(&metrics_accept_ctx, sock);
}

/* Opens the metrics-only listeners of webgres.metrics_listen, if set; once per worker. */
void
metrics_start(h2o_context_t *ctx)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;
	h2o_hostconf_t *hostconf;
	h2o_pathconf_t *pathconf;
	h2o_handler_t *handler;

	if (webgres_metrics_listen == NULL || webgres_metrics_listen[0] == '\0')
		return;
	if (!listen_parse(webgres_metrics_listen, &addrs, &naddrs, &error))
		ereport(FATAL,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for webgres.metrics_listen: %s", error)));

	h2o_config_init(&metrics_config);
	metrics_config.server_name = ctx->globalconf->server_name;
	hostconf = h2o_config_register_host(&metrics_config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	pathconf = h2o_config_register_path(hostconf, "/", 0);
	handler = h2o_create_handler(pathconf, sizeof(*handler));
	handler->on_req = on_metrics_req;
	response_phases_attach(pathconf, RESPONSE_PATH_OTHER);
	response_phases_attach(&hostconf->fallback_path, RESPONSE_PATH_OTHER);
	metrics_accept_ctx.ctx = ctx;
	metrics_accept_ctx.hosts = metrics_config.hosts;

	for (int i = 0; i < naddrs; i++)
	{
		int			fd = listen_open(&addrs[i], "webgres.metrics_listen");
		h2o_socket_t *sock = h2o_evloop_socket_create(ctx->loop, fd, H2O_SOCKET_FLAG_DONT_READ);

		h2o_socket_read_start(sock, on_metrics_accept);
	}
}

/* PHASE_ENDPOINT: answers (and sends) the metrics path; false then. */
static bool
metrics_phase(PhaseRequest *pr, const Route *unused)
{
	if (!metrics_try_answer(pr->req))
		return true;
	pr->sent = true;
	return false;
}

/* Whether the main listeners answer webgres.metrics_path. */
static bool
metrics_enabled(const RouteTable *unused)
{
	return webgres_metrics_path != NULL && webgres_metrics_path[0] != '\0' &&
		webgres_metrics_listen[0] == '\0';
}

/* The module: the Prometheus endpoint on the main listeners. */
const PhaseModule metrics_module = {
	.name = "metrics",
	.enabled = metrics_enabled,
	.hooks = {[PHASE_ENDPOINT] = metrics_phase}
};

/* webgres.metrics_listen: empty, or addresses as webgres.listen takes them. */
static bool
check_metrics_listen(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	return listen_check_setting(newval, extra, source);
}

/* Defines webgres.metrics_path, webgres.metrics_listen and webgres.metrics_allow; from _PG_init. */
void
metrics_define_settings(void)
{
	DefineCustomStringVariable("webgres.metrics_path",
							   "Path at which the HTTP workers answer with Prometheus metrics.",
							   "The per-route, worker and executor figures in Prometheus' text "
							   "format, answered from shared memory without running SQL, before "
							   "any route is looked at. Empty turns the endpoint off. With "
							   "webgres.metrics_listen set, it is answered only there.",
							   &webgres_metrics_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   health_check_path_setting, NULL, NULL);

	DefineCustomStringVariable("webgres.metrics_listen",
							   "Separate addresses on which the HTTP workers answer only metrics.",
							   "host:port entries as webgres.listen takes them. When set, "
							   "webgres.metrics_path is answered on these addresses only, and "
							   "every other request there is answered 404, so that metrics "
							   "need not be reachable where the routes are. Empty: metrics "
							   "are answered on webgres.listen.",
							   &webgres_metrics_listen,
							   "",
							   PGC_POSTMASTER,
							   0,
							   check_metrics_listen, NULL, NULL);

	DefineCustomStringVariable("webgres.metrics_allow",
							   "Networks whose clients may read the metrics on the main listeners.",
							   "A comma-separated list such as 127.0.0.0/8, ::1/128, 10.0.0.0/8. "
							   "Applies to webgres.metrics_path answered on webgres.listen and "
							   "webgres.tls_listen; other clients get 404. Empty allows none. "
							   "webgres.metrics_listen's own address is not filtered.",
							   &webgres_metrics_allow,
							   "127.0.0.0/8, ::1/128",
							   PGC_SIGHUP,
							   0,
							   metrics_check_allow, metrics_assign_allow, NULL);
}
