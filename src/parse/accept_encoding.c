/*
 * accept_encoding.c
 *		Reading an Accept-Encoding header's q-values (RFC 9110 12.5.3).
 *
 * libh2o 2.2.5 splits the header on commas only, so that "gzip;q=0.5"
 * does not count as gzip for it; this parser reads the q-values, for the
 * compression filter (serve/compress.c).
 */
#include "parse/accept_encoding.h"

#include <string.h>

#include "parse/http_tokens.h"

/*
 * Reads one list element [s, s + len): a coding and its parameters.
 * Returns whether its coding is gzip and sets *positive to its q-value's
 * verdict (q defaults to 1).
 */
static bool
element_is_gzip(const char *s, size_t len, bool *positive)
{
	size_t		i = 0;
	size_t		start;

	*positive = true;
	while (i < len && http_is_ows(s[i]))
		i++;
	start = i;
	while (i < len && s[i] != ';' && !http_is_ows(s[i]))
		i++;
	if (!http_word_is(s + start, i - start, "gzip"))
		return false;
	while (i < len)
	{
		size_t		pstart;
		size_t		eq;

		while (i < len && (http_is_ows(s[i]) || s[i] == ';'))
			i++;
		pstart = i;
		while (i < len && s[i] != ';')
			i++;
		/* A parameter: name=value, with no whitespace around '='. */
		for (eq = pstart; eq < i && s[eq] != '='; eq++)
			;
		if (eq < i && http_word_is(s + pstart, eq - pstart, "q"))
		{
			size_t		vend = i;

			while (vend > eq + 1 && http_is_ows(s[vend - 1]))
				vend--;
			*positive = http_qvalue(s + eq + 1, vend - eq - 1) > 0;
		}
	}
	return true;
}

/* The verdict on gzip of one Accept-Encoding value. */
AcceptGzip
accept_encoding_gzip(const char *value, size_t len)
{
	AcceptGzip	verdict = ACCEPT_GZIP_UNSAID;
	size_t		i = 0;

	while (i <= len)
	{
		size_t		start = i;
		bool		positive;

		while (i < len && value[i] != ',')
			i++;
		if (element_is_gzip(value + start, i - start, &positive))
		{
			/* Named twice: a refusal stands. */
			if (!positive)
				return ACCEPT_GZIP_NO;
			verdict = ACCEPT_GZIP_YES;
		}
		i++;
	}
	return verdict;
}
