/*
 * security_headers.h
 *		Headers every response carries: X-Content-Type-Options: nosniff
 *		(webgres.nosniff) and, over TLS, Strict-Transport-Security
 *		(webgres.hsts).
 */
#ifndef WEBGRES_SECURITY_HEADERS_H
#define WEBGRES_SECURITY_HEADERS_H

#include <stdbool.h>

/*
 * The filter that adds them is "security_headers_filter", a FilterModule of
 * PHASE_FILTER (http/response_phase_list.h) on every path that answers
 * requests (the worker's path, its host's fallback path for libh2o's own
 * errors, the metrics listeners'); off the lists while both settings are
 * off, and reading them per response while either is on.
 */

/* For the GUC check hook of webgres.hsts: empty, or a valid header value. */
extern bool security_headers_check_hsts(const char *value, const char **detail);

/* Defines webgres.nosniff and webgres.hsts; from _PG_init. */
extern void security_headers_define_settings(void);

#endif
