/*
 * Fuzzes what authentication reads from a request's headers
 * (src/parse/auth_headers.c): the input, as one header value, is read as a
 * Cookie header, as an Authorization header, as a Referer and as a list of
 * trusted origins.  Nothing may read outside the input, and what is found
 * must hold together: cookie names are non-empty and hold no "=" or ";",
 * values no ";", both lie inside the input in order; a Bearer token has no
 * blank at either end; a Referer's origin is a head of the value holding
 * "://" and no "/", "?" or "#" after it; origin_equals is symmetric and
 * reflexive.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse/auth_headers.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* True if [p, p + len) lies inside [base, base + size). */
static bool
inside(const char *base, size_t size, const char *p, size_t len)
{
	return p >= base && len <= size && (size_t) (p - base) <= size - len;
}

/* The cookie pairs hold together, and come in the order of the input. */
static void
check_cookies(const char *s, size_t size)
{
	CookieScan	scan;
	const char *name;
	const char *value;
	size_t		namelen;
	size_t		valuelen;
	const char *after = s;

	cookie_scan_begin(&scan, s, size);
	while (cookie_scan_next(&scan, &name, &namelen, &value, &valuelen))
	{
		assert(namelen > 0 && inside(s, size, name, namelen) && name >= after);
		assert(memchr(name, '=', namelen) == NULL && memchr(name, ';', namelen) == NULL);
		assert(value == name + namelen + 1 && inside(s, size, value, valuelen));
		assert(memchr(value, ';', valuelen) == NULL);
		assert(valuelen == 0 || (value[valuelen - 1] != ' ' && value[valuelen - 1] != '\t'));
		cookie_value_unquote(&value, &valuelen);
		assert(inside(s, size, value, valuelen));
		after = value + valuelen;
	}
}

/* A Bearer token lies inside the input, without blanks at its ends. */
static void
check_bearer(const char *s, size_t size)
{
	const char *token;
	size_t		len;

	if (!bearer_token(s, size, &token, &len))
		return;
	assert(size > 6 && strncasecmp(s, "bearer", 6) == 0 && (s[6] == ' ' || s[6] == '\t'));
	assert(inside(s, size, token, len));
	assert(len == 0 || (token[0] != ' ' && token[0] != '\t' &&
						token[len - 1] != ' ' && token[len - 1] != '\t'));
}

/* A Referer's origin is a head of the value with "://" and no path after it. */
static void
check_referer(const char *s, size_t size)
{
	size_t		len;
	const char *sep = NULL;

	if (!referer_origin(s, size, &len))
		return;
	assert(len <= size);
	for (size_t i = 0; i + 3 <= len && sep == NULL; i++)
		if (memcmp(s + i, "://", 3) == 0)
			sep = s + i;
	assert(sep != NULL);
	for (const char *p = sep + 3; p < s + len; p++)
		assert(*p != '/' && *p != '?' && *p != '#');
	assert(origin_equals(s, len, s, len));
}

/* The list's items lie inside it, without blanks at their ends, and compare as origins. */
static void
check_list(const char *s, size_t size)
{
	const char *list = s;
	const char *item;
	const char *prev = NULL;
	size_t		len;
	size_t		prevlen = 0;

	while (list_next_item(&list, &item, &len))
	{
		assert(len > 0 && inside(s, size, item, len));
		assert(memchr(item, ',', len) == NULL);
		assert(item[0] != ' ' && item[0] != '\t' && item[len - 1] != ' ' && item[len - 1] != '\t');
		if (prev != NULL)
			assert(origin_equals(prev, prevlen, item, len) == origin_equals(item, len, prev, prevlen));
		prev = item;
		prevlen = len;
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* Exact-size copies, so that ASan sees any read past the end. */
	char	   *s = malloc(size ? size : 1);
	char	   *z = malloc(size + 1);

	memcpy(s, data, size);
	check_cookies(s, size);
	check_bearer(s, size);
	check_referer(s, size);
	/* The list is a setting's value: a C string, up to any NUL. */
	memcpy(z, data, size);
	z[size] = '\0';
	check_list(z, strlen(z));
	free(s);
	free(z);
	return 0;
}
