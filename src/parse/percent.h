/*
 * percent.h
 *		Percent-decoding (RFC 3986 section 2.1).
 */
#ifndef WEBGRES_PERCENT_H
#define WEBGRES_PERCENT_H

#include <stddef.h>
#include <stdbool.h>

/* The value of a hexadecimal digit, or -1. */
extern int	percent_hexval(char c);

/*
 * Percent-decodes src into dst (which has room for srclen bytes).  Returns
 * the decoded length, or -1 on a malformed escape.  plus_is_space is for
 * application/x-www-form-urlencoded.
 */
extern long percent_decode(const char *src, size_t srclen, char *dst, bool plus_is_space);

#endif
