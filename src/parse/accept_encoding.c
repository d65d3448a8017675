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

/* Whether c is optional whitespace (RFC 9110 5.6.3). */
static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Case-insensitive comparison of [s, s + len) with the lower-case word w. */
static bool
word_is(const char *s, size_t len, const char *w)
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
 * Whether a qvalue ("0", "0.000" .. "1", "1.000") is above zero; false for
 * anything malformed.
 */
static bool
qvalue_positive(const char *s, size_t len)
{
	if (len == 0 || len > 5 || (s[0] != '0' && s[0] != '1'))
		return false;
	if (len > 1 && s[1] != '.')
		return false;
	for (size_t i = 2; i < len; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (s[0] == '1' && s[i] != '0')
			return false;
		if (s[i] != '0')
			return true;
	}
	return s[0] == '1';
}

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
	while (i < len && is_ows(s[i]))
		i++;
	start = i;
	while (i < len && s[i] != ';' && !is_ows(s[i]))
		i++;
	if (!word_is(s + start, i - start, "gzip"))
		return false;
	while (i < len)
	{
		size_t		pstart;
		size_t		eq;

		while (i < len && (is_ows(s[i]) || s[i] == ';'))
			i++;
		pstart = i;
		while (i < len && s[i] != ';')
			i++;
		/* A parameter: name=value, with no whitespace around '='. */
		for (eq = pstart; eq < i && s[eq] != '='; eq++)
			;
		if (eq < i && word_is(s + pstart, eq - pstart, "q"))
		{
			size_t		vend = i;

			while (vend > eq + 1 && is_ows(s[vend - 1]))
				vend--;
			*positive = qvalue_positive(s + eq + 1, vend - eq - 1);
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
