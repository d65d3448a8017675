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
#include "http/listen.h"
#include "parse/jwt.h"
#include "http/metrics.h"
#include "http/security_headers.h"
#include "http/tls.h"
#include "serve/access_log.h"
#include "module/settings_define.h"
#include "parse/byte_ranges.h"
#include "serve/cors.h"
#include "serve/jwt_secret.h"
#include "serve/rate_limit.h"
#include "events/ws_socket.h"

/*
 * The settings' variables.  Each default is written once, as the boot value
 * in define_settings(), which _PG_init() calls before anything reads them.
 */
char	   *webgres_listen;
int			webgres_workers;
char	   *webgres_database;
int			webgres_handler_timeout;
int			webgres_max_body_size;
bool		webgres_expose_errors;
int			webgres_request_timeout;
int			webgres_header_timeout;
int			webgres_body_timeout;
int			webgres_send_timeout;
bool		webgres_share_read_transactions;
bool		webgres_http2;
int			webgres_http2_max_resets;
int			webgres_max_connections_per_worker;
int			webgres_executors;
int			webgres_inline_budget;
int			webgres_max_queue;
int			webgres_stream_timeout;
int			webgres_sse_heartbeat;
int			webgres_sse_buffer_limit;
int			webgres_events_read_limit;
char	   *webgres_metrics_path;
char	   *webgres_metrics_listen;
char	   *webgres_liveness_path;
char	   *webgres_readiness_path;
char	   *webgres_primary_path;
int			webgres_max_replica_lag;
char	   *webgres_primary_url;
char	   *webgres_tls_listen;
char	   *webgres_tls_cert_file;
char	   *webgres_tls_key_file;
char	   *webgres_tls_sni_cert_file;
char	   *webgres_tls_sni_key_file;
int			webgres_tls_min_version;
char	   *webgres_tls_ciphers;
char	   *webgres_tls_ciphersuites;
bool		webgres_tls_redirect;
int			webgres_tls_ticket_rotation;
char	   *webgres_access_log;
char	   *webgres_access_log_format;
int			webgres_log_slow_requests;
bool		webgres_track_route_stats;
bool		webgres_compress;
int			webgres_compress_min_size;
char	   *webgres_cors_allowed_origins;
char	   *webgres_cors_allowed_methods;
char	   *webgres_cors_allowed_headers;
char	   *webgres_cors_exposed_headers;
bool		webgres_cors_allow_credentials;
int			webgres_cors_max_age;
char	   *webgres_jwt_keys_file;
char	   *webgres_jwt_audience;
char	   *webgres_jwt_issuer;
int			webgres_jwt_leeway;
char	   *webgres_jwt_role_claim;
char	   *webgres_anon_role;
char	   *webgres_jwt_cookie;
char	   *webgres_csrf_trusted_origins;
bool		webgres_postgrest_request_settings;

/* GUC check hook for webgres.listen: the list must parse. */
static bool
check_listen(char **newval, void **extra, GucSource source)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;

	if (!listen_parse(*newval, &addrs, &naddrs, &error))
	{
		GUC_check_errdetail("%s", error);
		GUC_check_errhint("Use a comma-separated list of host:port entries, for example '127.0.0.1:8080' or '0.0.0.0:8080,[::]:8080'.");
		return false;
	}
	return true;
}

/* webgres.metrics_listen: empty, or addresses as webgres.listen takes them. */
static bool
check_metrics_listen(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	return check_listen(newval, extra, source);
}

/* webgres.workers' default is one per CPU, up to this many. */
#define DEFAULT_WORKERS_MAX 64

/* webgres.tls_listen: empty (no TLS) or a list as webgres.listen takes. */
static bool
check_tls_listen(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";

	while (*p == ' ' || *p == '\t')
		p++;
	return *p == '\0' || check_listen(newval, extra, source);
}

/* webgres.access_log_format: a format libh2o's log compiler takes. */
static bool
check_access_log_format(char **newval, void **extra, GucSource source)
{
	char	   *error;

	if (*newval == NULL || access_log_format_ok(*newval, &error))
		return true;
	GUC_check_errdetail("%s", error);
	GUC_check_errhint("Use Apache's directives, for example '%%h %%l %%u %%t \"%%r\" %%s %%b'.");
	return false;
}

/* webgres.tls_ciphers: a list OpenSSL accepts for TLS 1.2. */
static bool
check_tls_ciphers(char **newval, void **extra, GucSource source)
{
	return tls_check_ciphers(*newval, false);
}

/* webgres.tls_ciphersuites: a list OpenSSL accepts for TLS 1.3. */
static bool
check_tls_ciphersuites(char **newval, void **extra, GucSource source)
{
	return tls_check_ciphers(*newval, true);
}

static const struct config_enum_entry tls_version_options[] = {
	{"TLSv1.2", WEBGRES_TLS_V1_2, false},
	{"TLSv1.3", WEBGRES_TLS_V1_3, false},
	{NULL, 0, false}
};

/* The number of CPUs online, between 1 and DEFAULT_WORKERS_MAX. */
static int
online_cpus(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1) ? 1 : (n > DEFAULT_WORKERS_MAX ? DEFAULT_WORKERS_MAX : (int) n);
}

/* The metrics and health paths: empty (off), or an absolute path without a query. */
static bool
check_endpoint_path(char **newval, void **extra, GucSource source)
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

/* The TLS settings (docs/tls.md). */
static void
define_tls_settings(void)
{
	DefineCustomStringVariable("webgres.tls_listen",
							   "Addresses the HTTP workers serve TLS on.",
							   "A comma-separated list of host:port entries, as for "
							   "webgres.listen, on ports of their own. Each connection "
							   "negotiates HTTP/2 or HTTP/1.1 by ALPN. Empty serves no TLS.",
							   &webgres_tls_listen,
							   "",
							   PGC_POSTMASTER,
							   0,
							   check_tls_listen, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_cert_file",
							   "PEM file with the server certificate, then any intermediate certificates.",
							   "Relative paths are relative to the data directory. Read again "
							   "on reload; connections already open keep the certificate "
							   "they started with.",
							   &webgres_tls_cert_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_key_file",
							   "PEM file with the private key of webgres.tls_cert_file.",
							   "Relative paths are relative to the data directory. The key "
							   "must not be encrypted. Read again on reload.",
							   &webgres_tls_key_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_sni_cert_file",
							   "PEM file with a second certificate, for the host names it covers.",
							   "A client whose TLS server name (SNI) this certificate's "
							   "subjectAltName covers gets it; every other client gets "
							   "webgres.tls_cert_file. Empty: one certificate for all.",
							   &webgres_tls_sni_cert_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_sni_key_file",
							   "PEM file with the private key of webgres.tls_sni_cert_file.",
							   "Relative paths are relative to the data directory. The key "
							   "must not be encrypted.",
							   &webgres_tls_sni_key_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomEnumVariable("webgres.tls_min_version",
							 "Oldest TLS version a client may use.",
							 "TLS 1.0 and 1.1 are never offered.",
							 &webgres_tls_min_version,
							 WEBGRES_TLS_V1_2,
							 tls_version_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.tls_ticket_rotation",
							"How long a TLS session ticket key encrypts new tickets.",
							"The workers share their ticket keys, so a session resumes on "
							"any worker; the key after this long is new, the previous one "
							"still decrypts for one more period, then is destroyed. A "
							"session lives this long at most.",
							&webgres_tls_ticket_rotation,
							3600,
							1, 7 * 24 * 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_ciphers",
							   "Cipher list for TLS 1.2, in OpenSSL's syntax.",
							   "The default is Mozilla's \"intermediate\" profile: forward "
							   "secret AEAD ciphers only.",
							   &webgres_tls_ciphers,
							   WEBGRES_TLS_DEFAULT_CIPHERS,
							   PGC_SIGHUP,
							   0,
							   check_tls_ciphers, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_ciphersuites",
							   "Cipher suites for TLS 1.3, in OpenSSL's syntax.",
							   "The default is Mozilla's \"intermediate\" profile, which is "
							   "OpenSSL's own default.",
							   &webgres_tls_ciphersuites,
							   WEBGRES_TLS_DEFAULT_CIPHERSUITES,
							   PGC_SIGHUP,
							   0,
							   check_tls_ciphersuites, NULL, NULL);

	DefineCustomBoolVariable("webgres.tls_redirect",
							 "Answers requests that arrive without TLS with a redirect to HTTPS.",
							 "A request on a webgres.listen address is answered 308 with a "
							 "Location on the host it named and the first webgres.tls_listen "
							 "port. Has no effect when webgres.tls_listen is empty.",
							 &webgres_tls_redirect,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

/* The webgres.cors_* settings; a route's cors_* columns override each. */
static void
define_cors_settings(void)
{
	DefineCustomStringVariable("webgres.cors_allowed_origins",
							   "Origins whose pages may call the routes from a browser (CORS).",
							   "A comma-separated list of origins such as https://app.example.com; "
							   "* stands for part of a host name or port (https://*.example.com), "
							   "and * alone for any origin. Empty, the default, turns CORS off for "
							   "every route that does not set cors_allowed_origins.",
							   &webgres_cors_allowed_origins,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_origins_setting, cors_assign_origins_setting, NULL);

	DefineCustomStringVariable("webgres.cors_allowed_methods",
							   "Methods a CORS preflight may ask for.",
							   "A comma-separated list of methods. Empty, the default, allows "
							   "whatever method the route the request would go to takes.",
							   &webgres_cors_allowed_methods,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_methods_setting, cors_assign_methods_setting, NULL);

	DefineCustomStringVariable("webgres.cors_allowed_headers",
							   "Request headers a CORS preflight may ask for.",
							   "A comma-separated list of header names. Empty, the default, "
							   "allows whatever headers the preflight asks for.",
							   &webgres_cors_allowed_headers,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_headers_setting, cors_assign_headers_setting, NULL);

	DefineCustomStringVariable("webgres.cors_exposed_headers",
							   "Response headers a cross-origin page's script may read.",
							   "A comma-separated list of header names, sent as "
							   "Access-Control-Expose-Headers. Empty, the default, exposes only "
							   "the headers browsers always expose.",
							   &webgres_cors_exposed_headers,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_exposed_setting, cors_assign_exposed_setting, NULL);

	DefineCustomBoolVariable("webgres.cors_allow_credentials",
							 "Lets allowed origins send cookies and HTTP authentication (CORS).",
							 "Sends Access-Control-Allow-Credentials: true to origins named in "
							 "the allowed origins. Refused while webgres.cors_allowed_origins "
							 "allows any origin (*), as the CORS specification requires.",
							 &webgres_cors_allow_credentials,
							 false,
							 PGC_SIGHUP,
							 0,
							 cors_check_credentials_setting, NULL, NULL);

	DefineCustomIntVariable("webgres.cors_max_age",
							"How long a browser may keep a CORS preflight's answer.",
							"Sent as Access-Control-Max-Age. -1, the default, sends none, "
							"and browsers keep the answer a few seconds.",
							&webgres_cors_max_age,
							-1,
							-1, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* webgres.jwt_role_claim: a claim path as PostgREST's jwt-role-claim-key. */
static bool
check_claim_path(char **newval, void **extra, GucSource source)
{
	const char *error;

	if (*newval == NULL || jwt_path_valid(*newval, &error))
		return true;
	GUC_check_errdetail("%s.", error);
	GUC_check_errhint("Write a path such as role, .role, .\"https://example.com/claims\".role or .roles[0].");
	return false;
}

static void define_auth_settings(void);
static void define_response_safety_settings(void);

/* Defines every webgres setting; from _PG_init. */
void
define_settings(void)
{
	define_auth_settings();
	DefineCustomStringVariable("webgres.listen",
							   "Addresses the HTTP workers listen on.",
							   "A comma-separated list of host:port entries; "
							   "IPv6 hosts are written in brackets, as in [::1]:8080.",
							   &webgres_listen,
							   "127.0.0.1:8080",
							   PGC_POSTMASTER,
							   0,
							   check_listen, NULL, NULL);

	DefineCustomIntVariable("webgres.workers",
							"Number of HTTP worker processes.",
							"Each worker is a database backend with its own event loop "
							"and its own SO_REUSEPORT listening sockets. 0 stops serving. "
							"Changes take effect on reload. The default is the number of "
							"online CPUs.",
							&webgres_workers,
							online_cpus(),
							0, 256,
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

	DefineCustomStringVariable("webgres.liveness_path",
							   "Path answered 200 while an HTTP worker's loop runs.",
							   "For a load balancer's or orchestrator's liveness probe; "
							   "answered without SQL. Empty turns the endpoint off.",
							   &webgres_liveness_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_endpoint_path, NULL, NULL);

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
							   check_endpoint_path, NULL, NULL);

	DefineCustomStringVariable("webgres.primary_path",
							   "Path answered 200 on the primary and 503 on a standby.",
							   "Lets a load balancer send writes to the primary by status "
							   "alone. Empty turns the endpoint off.",
							   &webgres_primary_path,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_endpoint_path, NULL, NULL);

	DefineCustomIntVariable("webgres.max_replica_lag",
							"Most replay lag at which a standby still reports itself ready.",
							"The lag is the age of the oldest WAL the standby received and "
							"has not replayed.",
							&webgres_max_replica_lag,
							10000,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
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

	DefineCustomIntVariable("webgres.request_timeout",
							"Longest time an idle connection is kept open.",
							"A connection on which no byte of a request has arrived "
							"for this long, after it was opened or after its last "
							"response, is closed without a response.",
							&webgres_request_timeout,
							10000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.header_timeout",
							"Longest time a client may take to send a request's line and headers.",
							"Counted from the first byte of the request. A client that "
							"takes longer is answered 408 and its connection closed, "
							"so slow clients cannot hold connections open.",
							&webgres_header_timeout,
							10000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.body_timeout",
							"Longest time a client may take to send a request's body.",
							"Counted from the end of the headers. A client that takes "
							"longer is answered 408 and its connection closed.",
							&webgres_body_timeout,
							30000,
							100, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.send_timeout",
							"Longest time a client may take no byte of a response being sent to it.",
							"While bytes wait for the client and it acknowledges none of "
							"them for this long, its connection (HTTP/1 or HTTP/2) is "
							"reset, so a client that stops reading cannot hold it and the "
							"kernel's queue for it. A client that reads slowly but steadily "
							"is not cut. 0 disables.",
							&webgres_send_timeout,
							60000,
							0, INT_MAX / 4,
							PGC_SIGHUP,
							GUC_UNIT_MS,
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

	DefineCustomBoolVariable("webgres.http2",
							 "Serves cleartext HTTP/2 (h2c) to clients that open with its preface.",
							 "When off, a connection that starts with the HTTP/2 preface is "
							 "answered 400 and closed. An HTTP/1.1 request asking to upgrade "
							 "to h2c is always served as HTTP/1.1. Applies to new connections.",
							 &webgres_http2,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.http2_max_resets",
							"Stream resets an HTTP/2 connection may send before it is closed.",
							"Each RST_STREAM from the client spends one; each request "
							"answered on the connection earns half of one back, up to this "
							"number. A connection that runs out is sent GOAWAY "
							"(ENHANCE_YOUR_CALM) and closed. Applies to new connections.",
							&webgres_http2_max_resets,
							100,
							1, 1000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	define_tls_settings();

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
							0, 256,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.max_connections_per_worker",
							"Most client connections each HTTP worker holds open at once.",
							"At the limit the worker stops accepting: new connections "
							"wait in the kernel's accept queue of the worker's listening "
							"socket until one of its connections closes. 0 means as many "
							"as the worker's open file limit leaves room for, after the "
							"files PostgreSQL itself may keep open.",
							&webgres_max_connections_per_worker,
							0,
							0, INT_MAX / 4,
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
							   check_endpoint_path, NULL, NULL);

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

	DefineCustomStringVariable("webgres.access_log",
							   "Where the HTTP workers log each request: a file, or the Postgres log.",
							   "Empty turns the access log off. 'postgres' sends each line to the "
							   "Postgres log; any other value names a file, relative to the data "
							   "directory unless absolute, which every worker appends to and opens "
							   "again on reload (SIGHUP), so that it can be rotated.",
							   &webgres_access_log,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.access_log_format",
							   "Format of the access log's lines.",
							   "Apache's and h2o's directives (%h %l %u %t %r %s %b, %{Header}i, "
							   "%{duration}x and the rest); webgres' own fields are %{webgres.route_id}e, "
							   "%{webgres.route}e, %{webgres.route_method}e, %{webgres.place}e, "
							   "%{webgres.handler_ms}e and %{webgres.queue_ms}e. The default is "
							   "Apache's combined format.",
							   &webgres_access_log_format,
							   "%h %l %u %t \"%r\" %s %b \"%{referer}i\" \"%{user-agent}i\"",
							   PGC_SIGHUP,
							   0,
							   check_access_log_format, NULL, NULL);

	DefineCustomIntVariable("webgres.log_slow_requests",
							"Logs requests that take longer than this, with their time split.",
							"From the complete request to the last byte of its response, a "
							"request that takes at least this long is logged with its route, "
							"status, and the time it waited for the event loop, waited for an "
							"executor, was planned, executed and sent. -1 turns it off; 0 logs "
							"every request.",
							&webgres_log_slow_requests,
							-1,
							-1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
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
	define_cors_settings();
	define_response_safety_settings();
	rate_limit_define_settings();
	ws_define_settings();

	MarkGUCPrefixReserved("webgres");
}


/* The settings of authentication (serve/auth.c, docs/authentication.md). */
static void
define_auth_settings(void)
{
	jwt_secret_define_settings();

	DefineCustomStringVariable("webgres.jwt_keys_file",
							   "File of public keys for JSON Web Tokens signed with RSA, ECDSA or EdDSA.",
							   "A JWKS document (keys chosen by kid) or PEM public keys; read "
							   "again on reload. Empty accepts no such token.",
							   &webgres_jwt_keys_file,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_audience",
							   "Audience a JSON Web Token must name in its aud claim.",
							   "Empty: the aud claim is not checked.",
							   &webgres_jwt_audience,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_issuer",
							   "Issuer a JSON Web Token must name in its iss claim.",
							   "Empty: the iss claim is not checked.",
							   &webgres_jwt_issuer,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.jwt_leeway",
							"Clock skew allowed when checking a JSON Web Token's exp, nbf and iat.",
							NULL,
							&webgres_jwt_leeway,
							30,
							0, 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_role_claim",
							   "Path of the claim that names the role a token's requests run as.",
							   "As PostgREST's jwt-role-claim-key: role, .role, "
							   ".\"https://example.com/claims\".role, .roles[0]. A token "
							   "without it runs as webgres.anon_role.",
							   &webgres_jwt_role_claim,
							   "role",
							   PGC_SIGHUP,
							   0,
							   check_claim_path, NULL, NULL);

	DefineCustomStringVariable("webgres.anon_role",
							   "Role that requests without a token run as on routes whose auth is optional.",
							   "Empty: such requests are answered 401. The route's owner must be a "
							   "member of it.",
							   &webgres_anon_role,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_cookie",
							   "Name of a cookie that may carry the JSON Web Token.",
							   "For browsers (EventSource sends no Authorization header). A "
							   "cookie-authenticated POST, PUT, PATCH or DELETE must come from "
							   "the server's own origin or one of webgres.csrf_trusted_origins. "
							   "Empty: tokens come only from the Authorization header.",
							   &webgres_jwt_cookie,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomBoolVariable("webgres.postgrest_request_settings",
							 "Also sets PostgREST's request.method, request.path, request.headers and request.cookies for routes with auth.",
							 "request.jwt.claims is always set on such routes. These four cost "
							 "building JSON of every header and three more settings a request; "
							 "handlers read the same from the request relation.",
							 &webgres_postgrest_request_settings,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.csrf_trusted_origins",
							   "Origins besides the server's own that may send cookie-authenticated unsafe requests.",
							   "A comma-separated list such as https://app.example.com.",
							   &webgres_csrf_trusted_origins,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);
}


/*
 * What bounds or protects responses webgres builds itself: byte ranges of
 * static files (http/static_files.c), security headers
 * (http/security_headers.c), who may read the metrics (http/metrics.c).
 */
int			webgres_static_max_ranges;
bool		webgres_nosniff;
char	   *webgres_hsts;
char	   *webgres_metrics_allow;

/* webgres.hsts: empty, or a Strict-Transport-Security value with max-age. */
static bool
check_hsts(char **newval, void **extra, GucSource source)
{
	const char *detail;

	if (security_headers_check_hsts(*newval, &detail))
		return true;
	GUC_check_errdetail("%s", detail);
	GUC_check_errhint("Write a Strict-Transport-Security value, as \"max-age=31536000; includeSubDomains\".");
	return false;
}

/* Defines the settings of the response safeguards. */
static void
define_response_safety_settings(void)
{
	DefineCustomIntVariable("webgres.static_max_ranges",
							"Most byte ranges a request for a static file may ask for.",
							"A Range header listing more is ignored and the whole file is "
							"sent (200). Overlapping and nearly adjacent ranges are merged "
							"first, so a body is never larger than the file and a part "
							"header per range.",
							&webgres_static_max_ranges,
							16,
							1, BYTE_RANGES_LIMIT,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

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

	DefineCustomBoolVariable("webgres.nosniff",
							 "Sends X-Content-Type-Options: nosniff with every response.",
							 "Browsers then take each response for the Content-Type it "
							 "declares rather than guess, so that text a client uploaded is "
							 "never run as a script. A handler's own header is kept.",
							 &webgres_nosniff,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.hsts",
							   "Strict-Transport-Security value sent with every response over TLS.",
							   "Such as \"max-age=31536000; includeSubDomains\": browsers then use "
							   "only https:// for the host for that long. Never sent in "
							   "cleartext; empty sends none.",
							   &webgres_hsts,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_hsts, NULL, NULL);
}
