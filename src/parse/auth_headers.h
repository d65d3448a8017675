/*
 * auth_headers.h
 *		Reading the request headers authentication trusts: Cookie,
 *		Authorization: Bearer, and the origin of an Origin or Referer.
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it (fuzz/fuzz_auth_headers.c).
 * serve/auth.c walks the request's headers and hands each value here; every
 * result points into the value it was given, nothing is allocated.
 */
#ifndef WEBGRES_AUTH_HEADERS_H
#define WEBGRES_AUTH_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

/* A place in one Cookie header's value, for cookie_scan_next(). */
typedef struct CookieScan
{
	const char *p;				/* what is left of the value */
	const char *end;
} CookieScan;

/* Starts reading the name=value pairs of one Cookie header value. */
extern void cookie_scan_begin(CookieScan *scan, const char *value, size_t len);

/*
 * The next name=value pair (RFC 6265 5.4: pairs split by ";", blanks around
 * them dropped); false after the last.  Pairs without a name or "=" are
 * passed over.  The name holds no "=" or ";", the value no ";".
 */
extern bool cookie_scan_next(CookieScan *scan, const char **name, size_t *namelen,
							 const char **value, size_t *valuelen);

/* Takes off the double quotes RFC 6265 allows around a cookie's value. */
extern void cookie_value_unquote(const char **value, size_t *len);

/*
 * The token of an Authorization header value "Bearer <token>" (RFC 6750
 * 2.1; the scheme in any case), without the blanks around it; false for any
 * other scheme.  The token may be empty.
 */
extern bool bearer_token(const char *value, size_t len, const char **token, size_t *tokenlen);

/*
 * The origin of a Referer value, "scheme://authority", as the length of
 * the value's head that holds it: up to the first "/", "?" or "#" after
 * "://".  False if it has no "://".
 */
extern bool referer_origin(const char *value, size_t len, size_t *originlen);

/*
 * True if two origins are the same, ignoring ASCII case and trailing
 * slashes ("https://Example.com/" is "https://example.com").
 */
extern bool origin_equals(const char *a, size_t alen, const char *b, size_t blen);

/*
 * The next item of a comma-separated list such as webgres.csrf_trusted_origins,
 * without the blanks around it; *list moves past it.  Empty items are
 * passed over; false at the end of the list.
 */
extern bool list_next_item(const char **list, const char **item, size_t *itemlen);

#endif
