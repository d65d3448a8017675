/*
 * formscan.h
 *		Splits application/x-www-form-urlencoded text into key/value spans.
 *
 * Pure byte-level code, no allocation: querystring.c decodes and checks the
 * spans, and the fuzzer drives this directly.
 */
#ifndef WEBGRES_FORMSCAN_H
#define WEBGRES_FORMSCAN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct FormSpan
{
	const char *key;			/* still percent-encoded */
	size_t		keylen;
	const char *value;			/* NULL when the pair has no '=' */
	size_t		valuelen;
} FormSpan;

/*
 * Finds the next non-empty '&'-separated pair of s[0..len) at or after
 * *pos, and moves *pos past it.  Returns false when there is none.
 */
extern bool form_next(const char *s, size_t len, size_t *pos, FormSpan *out);

#endif
