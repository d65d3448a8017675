/*
 * settings.h
 *		webgres' settings, read by every floor of the code; defined once in
 *		module/settings.c.
 */
#ifndef WEBGRES_SETTINGS_H
#define WEBGRES_SETTINGS_H

#include "postgres.h"

/* GUC variables (module/settings.c) */
extern char *webgres_listen;
extern int	webgres_workers;
extern char *webgres_database;
extern int	webgres_handler_timeout;
extern int	webgres_max_body_size;
extern bool webgres_expose_errors;
extern int	webgres_request_timeout;
extern int	webgres_header_timeout;
extern int	webgres_body_timeout;
extern int	webgres_send_timeout;
extern bool webgres_share_read_transactions;
extern bool webgres_http2;
extern int	webgres_http2_max_resets;
extern int	webgres_max_connections_per_worker;
extern char *webgres_tls_listen;
extern char *webgres_tls_cert_file;
extern char *webgres_tls_key_file;
extern char *webgres_tls_sni_cert_file;
extern char *webgres_tls_sni_key_file;
extern int	webgres_tls_min_version;
extern char *webgres_tls_ciphers;
extern char *webgres_tls_ciphersuites;
extern bool webgres_tls_redirect;
extern int	webgres_tls_ticket_rotation;
extern int	webgres_executors;
extern int	webgres_inline_budget;
extern int	webgres_max_queue;
extern int	webgres_stream_timeout;
extern int	webgres_sse_heartbeat;
extern int	webgres_sse_buffer_limit;
extern int	webgres_events_read_limit;
extern char *webgres_jwt_keys_file;
extern char *webgres_jwt_audience;
extern char *webgres_jwt_issuer;
extern int	webgres_jwt_leeway;
extern char *webgres_jwt_role_claim;
extern char *webgres_anon_role;
extern char *webgres_jwt_cookie;
extern char *webgres_csrf_trusted_origins;
extern bool webgres_postgrest_request_settings;

extern char *webgres_metrics_path;
extern char *webgres_metrics_listen;
extern char *webgres_liveness_path;
extern char *webgres_readiness_path;
extern char *webgres_primary_path;
extern int	webgres_max_replica_lag;
extern char *webgres_primary_url;
extern char *webgres_access_log;
extern char *webgres_access_log_format;
extern int	webgres_log_slow_requests;
extern bool webgres_track_route_stats;
extern bool webgres_compress;
extern int	webgres_compress_min_size;
extern char *webgres_cors_allowed_origins;
extern char *webgres_cors_allowed_methods;
extern char *webgres_cors_allowed_headers;
extern char *webgres_cors_exposed_headers;
extern bool webgres_cors_allow_credentials;
extern int	webgres_cors_max_age;

/* Values of webgres.tls_min_version. */
#define WEBGRES_TLS_V1_2 12
#define WEBGRES_TLS_V1_3 13

/* Mozilla's "intermediate" profile (version 5.7) for TLS 1.2 and TLS 1.3. */
#define WEBGRES_TLS_DEFAULT_CIPHERS \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" \
	"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
#define WEBGRES_TLS_DEFAULT_CIPHERSUITES \
	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

/* The response safeguards' settings (module/settings.c, at its end). */
extern int	webgres_static_max_ranges;
extern bool webgres_nosniff;
extern char *webgres_hsts;
extern char *webgres_metrics_allow;

/* The product name, as it goes into the Server header and process titles. */
#define WEBGRES_SERVER_NAME "webgres"

#endif							/* WEBGRES_SETTINGS_H */
