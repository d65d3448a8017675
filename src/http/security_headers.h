/*
 * security_headers.h
 *		Headers every response carries: X-Content-Type-Options: nosniff
 *		(webgres.nosniff) and, over TLS, Strict-Transport-Security
 *		(webgres.hsts).
 */
#ifndef WEBGRES_SECURITY_HEADERS_H
#define WEBGRES_SECURITY_HEADERS_H

#include <stdbool.h>

struct st_h2o_pathconf_t;

/*
 * Registers the filter that adds them on pathconf; once per path
 * configuration that answers requests (the worker's path, its host's
 * fallback path for libh2o's own errors, the metrics listeners' path),
 * before the context is initialised.  The settings are read per response.
 */
extern void security_headers_register(struct st_h2o_pathconf_t *pathconf);

/* For the GUC check hook of webgres.hsts: empty, or a valid header value. */
extern bool security_headers_check_hsts(const char *value, const char **detail);

/* Defines webgres.nosniff and webgres.hsts; from _PG_init. */
extern void security_headers_define_settings(void);

#endif
