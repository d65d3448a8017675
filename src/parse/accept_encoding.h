/*
 * accept_encoding.h
 *		Reading an Accept-Encoding header's q-values (RFC 9110 12.5.3).
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it.
 */
#ifndef WEBGRES_ACCEPT_ENCODING_H
#define WEBGRES_ACCEPT_ENCODING_H

#include <stddef.h>
#include <stdbool.h>

/*
 * Whether a client that sent this Accept-Encoding value takes gzip: it
 * names gzip with a q-value above 0.  Neither "*" nor the old alias x-gzip
 * counts: gzip is sent only to a client that asks for it by name, as
 * browsers do.  A malformed q-value counts as q=0, so a header that cannot
 * be read never causes compression.  Several Accept-Encoding fields are
 * one list: call it on each, and take gzip if one says yes and none no.
 */
typedef enum AcceptGzip
{
	ACCEPT_GZIP_UNSAID,			/* gzip is not named */
	ACCEPT_GZIP_YES,			/* named with q > 0 */
	ACCEPT_GZIP_NO				/* named with q = 0 (or an unreadable q) */
} AcceptGzip;

extern AcceptGzip accept_encoding_gzip(const char *value, size_t len);

#endif
