/*
 * cors_syntax.h
 *		The syntax of CORS lists (origins, methods, header names) and
 *		origin matching with * patterns.
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it.  serve/cors_policy.c
 * keeps the lists and applies them.
 */
#ifndef WEBGRES_CORS_SYNTAX_H
#define WEBGRES_CORS_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>

/* Longest origin, method or header name in a list, and longest Origin matched. */
#define CORS_MAX_ITEM 300
/* Most wildcards in one origin pattern. */
#define CORS_MAX_STARS 4

typedef enum CorsListKind
{
	CORS_LIST_ORIGINS,
	CORS_LIST_METHODS,
	CORS_LIST_HEADERS
} CorsListKind;

/* An entry of a list: a span of the value it was read from. */
typedef struct CorsSpan
{
	const char *base;
	size_t		len;
} CorsSpan;

/*
 * Whether item (len bytes) is well formed for a list of this kind: an
 * origin scheme://host[:port] (* standing for part of a host or port) or
 * "*"; a method name; a header name (a token, not "*").
 */
extern bool cors_item_ok(CorsListKind kind, const char *item, size_t len);

/*
 * The most entries a comma-separated value can hold: one more than its
 * commas.  The array cors_split() fills needs this many.
 */
extern int	cors_split_max(const char *value);

/*
 * Splits a comma-separated value into its entries, trimmed of white space,
 * empty ones skipped, each checked by cors_item_ok().  Returns how many
 * went into spans, or -1 with *bad set to the first bad entry.
 */
extern int	cors_split(const char *value, CorsListKind kind, CorsSpan *spans, CorsSpan *bad);

/*
 * Whether pattern (an origin entry, lower case, NUL-terminated, * standing
 * for a run of one or more host characters) matches s (slen bytes),
 * ignoring case.  Its cost is bounded by the two lengths, whatever the
 * stars.
 */
extern bool cors_origin_matches(const char *pattern, const char *s, size_t slen);

#endif
