/*
 * cors_syntax.c
 *		The syntax of CORS lists and origin matching with * patterns.
 */
#include "parse/cors_syntax.h"

#include <string.h>

/* Whether c is an ASCII letter, whatever the locale. */
static bool
is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether c is an ASCII digit. */
static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether c is an ASCII hexadecimal digit. */
static bool
is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether c is white space as isspace() has it in the C locale. */
static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* c in lower case, if it is an ASCII letter. */
static char
to_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* Whether c may stand in an origin's host or port, and so match a *. */
static bool
host_char(char c)
{
	return is_alpha(c) || is_digit(c) || c == '-' || c == '.';
}

/* Whether c is a token character (RFC 9110), as header names are made of. */
static bool
token_char(char c)
{
	return is_alpha(c) || is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/*
 * Whether s is "*" or an origin scheme://host[:port], host and port
 * possibly with * standing for a run of host characters.  No path, no
 * trailing slash: browsers send an origin without them.
 */
static bool
origin_ok(const char *s, size_t len)
{
	size_t		i = 0;
	size_t		start;
	int			stars = 0;

	if (len == 1 && s[0] == '*')
		return true;
	if (len == 0 || len > CORS_MAX_ITEM || !is_alpha(s[0]))
		return false;
	while (i < len && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	if (len - i < 3 || memcmp(s + i, "://", 3) != 0)
		return false;
	i += 3;
	start = i;
	if (i < len && s[i] == '[')
	{
		/* An IPv6 address, written as browsers write it. */
		while (++i < len && (is_xdigit(s[i]) || s[i] == ':' || s[i] == '.'))
			;
		if (i >= len || s[i] != ']' || i == start + 1)
			return false;
		i++;
	}
	else
		for (; i < len && (host_char(s[i]) || s[i] == '*'); i++)
			stars += (s[i] == '*');
	if (i == start)
		return false;
	if (i < len && s[i] == ':')
	{
		start = ++i;
		for (; i < len && (is_digit(s[i]) || s[i] == '*'); i++)
			stars += (s[i] == '*');
		if (i == start || i - start > 5)
			return false;
	}
	return i == len && stars <= CORS_MAX_STARS;
}

/* Whether item (len bytes) is well formed for a list of this kind. */
bool
cors_item_ok(CorsListKind kind, const char *item, size_t len)
{
	if (kind == CORS_LIST_ORIGINS)
		return origin_ok(item, len);
	if (len == 0 || len > CORS_MAX_ITEM || (len == 1 && item[0] == '*'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (kind == CORS_LIST_METHODS ? !(is_alpha(item[i]) || item[i] == '-' || item[i] == '_')
			: !token_char(item[i]))
			return false;
	return true;
}

/* The most entries a comma-separated value can hold. */
int
cors_split_max(const char *value)
{
	int			max = 1;

	for (const char *c = value ? value : ""; *c; c++)
		max += (*c == ',');
	return max;
}

/* Splits a comma-separated value into checked entries; -1 and *bad if one is bad. */
int
cors_split(const char *value, CorsListKind kind, CorsSpan *spans, CorsSpan *bad)
{
	const char *p = value ? value : "";
	int			n = 0;

	while (*p)
	{
		const char *end = strchr(p, ',');
		size_t		len = end ? (size_t) (end - p) : strlen(p);
		const char *item = p;

		while (len > 0 && is_space(*item))
			item++, len--;
		while (len > 0 && is_space(item[len - 1]))
			len--;
		if (len > 0)
		{
			if (!cors_item_ok(kind, item, len))
			{
				bad->base = item;
				bad->len = len;
				return -1;
			}
			spans[n].base = item;
			spans[n++].len = len;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return n;
}

/* Whether pattern matches s, ignoring case; row by row over the pattern. */
bool
cors_origin_matches(const char *pattern, const char *s, size_t slen)
{
	bool		row[CORS_MAX_ITEM + 1];
	bool		next[CORS_MAX_ITEM + 1];

	if (slen > CORS_MAX_ITEM)
		return false;
	row[0] = true;
	for (size_t j = 1; j <= slen; j++)
		row[j] = false;
	for (const char *p = pattern; *p; p++)
	{
		next[0] = false;
		for (size_t j = 1; j <= slen; j++)
			next[j] = (*p == '*') ?
				((row[j - 1] || next[j - 1]) && host_char(s[j - 1])) :
				(row[j - 1] && *p == to_lower(s[j - 1]));
		memcpy(row, next, sizeof(bool) * (slen + 1));
	}
	return row[slen];
}
