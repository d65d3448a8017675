/*
 * http_tokens.h
 *		The small pieces of RFC 9110's list grammar that header parsers
 *		share: optional whitespace, a case-insensitive token compared with
 *		a lower-case word, and a qvalue.
 *
 * Pure C, no Postgres or h2o, inline so that each parser (and its fuzzer)
 * stays one object file.
 */
#ifndef WEBGRES_HTTP_TOKENS_H
#define WEBGRES_HTTP_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* q=1 in thousandths: a qvalue has at most three decimals. */
#define HTTP_Q_ONE 1000

/* Whether c is optional whitespace (RFC 9110 5.6.3). */
static inline bool
http_is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Case-insensitive comparison of [s, s + len) with the lower-case word w. */
static inline bool
http_word_is(const char *s, size_t len, const char *w)
{
	if (strlen(w) != len)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		char		c = s[i];

		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c != w[i])
			return false;
	}
	return true;
}

/*
 * A qvalue ("0", "0.5", "1.000"; RFC 9110 12.4.2) in thousandths; 0 for
 * anything malformed ("nan", "1e0", "0.5x", "1.001"), so that a weight that
 * cannot be read never selects anything.
 */
static inline int
http_qvalue(const char *s, size_t len)
{
	int			q;
	int			scale = HTTP_Q_ONE / 10;

	if (len == 0 || len > 5 || (s[0] != '0' && s[0] != '1') || (len > 1 && s[1] != '.'))
		return 0;
	q = (s[0] - '0') * HTTP_Q_ONE;
	for (size_t i = 2; i < len; i++, scale /= 10)
	{
		if (s[i] < '0' || s[i] > '9')
			return 0;
		q += (s[i] - '0') * scale;
	}
	return q > HTTP_Q_ONE ? 0 : q;
}

#endif							/* WEBGRES_HTTP_TOKENS_H */
