/*
 * auth_headers.c
 *		Cookie pairs, Bearer credentials and origins, as authentication
 *		reads them from a request (serve/auth.c).
 *
 * Every byte here comes from a client that need not have a token, so the
 * parsers are kept apart from Postgres and h2o for the fuzzer; libh2o 2.2.5
 * has none of them (it only joins Cookie fields of HTTP/2 requests).
 */
#include "parse/auth_headers.h"

#include <string.h>

/* Whether c is a blank around a cookie pair or a credential (SP or HTAB). */
static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* c in lower case, for ASCII letters only (locale plays no part). */
static char
ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
}

/* Starts reading the pairs of one Cookie header value. */
void
cookie_scan_begin(CookieScan *scan, const char *value, size_t len)
{
	scan->p = value;
	scan->end = value + len;
}

/* The next name=value pair of the value, blanks dropped; false after the last. */
bool
cookie_scan_next(CookieScan *scan, const char **name, size_t *namelen,
				 const char **value, size_t *valuelen)
{
	while (scan->p < scan->end)
	{
		const char *semi = memchr(scan->p, ';', scan->end - scan->p);
		const char *stop = semi ? semi : scan->end;
		const char *start = scan->p;
		const char *eq;

		scan->p = semi ? semi + 1 : scan->end;
		while (start < stop && is_blank(*start))
			start++;
		eq = memchr(start, '=', stop - start);
		if (eq == NULL || eq == start)
			continue;
		*name = start;
		*namelen = eq - start;
		*value = eq + 1;
		*valuelen = stop - *value;
		while (*valuelen > 0 && is_blank((*value)[*valuelen - 1]))
			(*valuelen)--;
		return true;
	}
	return false;
}

/* Takes off a cookie value's double quotes, if it has both. */
void
cookie_value_unquote(const char **value, size_t *len)
{
	if (*len >= 2 && (*value)[0] == '"' && (*value)[*len - 1] == '"')
	{
		(*value)++;
		*len -= 2;
	}
}

/* The token of "Bearer <token>", blanks around it dropped; false for another scheme. */
bool
bearer_token(const char *value, size_t len, const char **token, size_t *tokenlen)
{
	static const char scheme[] = "bearer";
	const size_t schemelen = sizeof(scheme) - 1;

	if (len <= schemelen || !is_blank(value[schemelen]))
		return false;
	for (size_t i = 0; i < schemelen; i++)
		if (ascii_lower(value[i]) != scheme[i])
			return false;
	value += schemelen;
	len -= schemelen;
	while (len > 0 && is_blank(*value))
		value++, len--;
	while (len > 0 && is_blank(value[len - 1]))
		len--;
	*token = value;
	*tokenlen = len;
	return true;
}

/* The length of a Referer's head that is its origin; false without "://". */
bool
referer_origin(const char *value, size_t len, size_t *originlen)
{
	size_t		i = 0;

	while (i + 3 <= len && memcmp(value + i, "://", 3) != 0)
		i++;
	if (i + 3 > len)
		return false;
	/* The authority ends where the path, the query or the fragment begins. */
	for (i += 3; i < len; i++)
		if (value[i] == '/' || value[i] == '?' || value[i] == '#')
			break;
	*originlen = i;
	return true;
}

/* True if the two origins are the same, but for ASCII case and trailing slashes. */
bool
origin_equals(const char *a, size_t alen, const char *b, size_t blen)
{
	while (alen > 0 && a[alen - 1] == '/')
		alen--;
	while (blen > 0 && b[blen - 1] == '/')
		blen--;
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++)
		if (ascii_lower(a[i]) != ascii_lower(b[i]))
			return false;
	return true;
}

/* The next non-empty item of a comma-separated list, blanks dropped. */
bool
list_next_item(const char **list, const char **item, size_t *itemlen)
{
	while (*list != NULL && **list != '\0')
	{
		const char *start = *list;
		const char *comma = strchr(start, ',');
		const char *end = comma ? comma : start + strlen(start);

		*list = comma ? comma + 1 : end;
		while (start < end && is_blank(*start))
			start++;
		while (end > start && is_blank(end[-1]))
			end--;
		if (end > start)
		{
			*item = start;
			*itemlen = end - start;
			return true;
		}
	}
	return false;
}
