/*
 * formscan.c
 *		Splits application/x-www-form-urlencoded text into key/value spans.
 */
#include <string.h>

#include "parse/formscan.h"

/* Finds the next non-empty '&'-separated pair at or after *pos. */
bool
form_next(const char *s, size_t len, size_t *pos, FormSpan *out)
{
	while (*pos < len)
	{
		const char *part = s + *pos;
		const char *amp = memchr(part, '&', len - *pos);
		size_t		partlen = amp ? (size_t) (amp - part) : len - *pos;
		const char *eq;

		*pos += partlen + (amp ? 1 : 0);
		if (partlen == 0)
			continue;
		eq = memchr(part, '=', partlen);
		out->key = part;
		out->keylen = eq ? (size_t) (eq - part) : partlen;
		out->value = eq ? eq + 1 : NULL;
		out->valuelen = eq ? partlen - (eq + 1 - part) : 0;
		return true;
	}
	return false;
}
