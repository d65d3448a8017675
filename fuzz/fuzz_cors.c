/*
 * Fuzzes the CORS list syntax and origin matching (src/parse/cors_syntax.c).
 * The input's first byte picks the kind of list, the rest up to a newline
 * is a setting's value and what follows it an Origin.  Splitting never
 * reads past the value, and gives entries that are inside it, trimmed,
 * free of commas and well formed.  Each origin entry is matched against
 * the Origin: a pattern without * matches exactly what equals it ignoring
 * case, and a pattern matches itself with each * written as "a".
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse/cors_syntax.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Checks one origin entry (lower-cased here, as lists keep them) against origin. */
static void
check_origin(const char *entry, size_t len, const char *origin, size_t olen)
{
	char		pattern[CORS_MAX_ITEM + 1];
	char		self[CORS_MAX_ITEM + 1];
	bool		stars = false;

	if (len == 1 && entry[0] == '*')
		return;
	assert(len <= CORS_MAX_ITEM);
	for (size_t i = 0; i < len; i++)
	{
		char		c = entry[i];

		pattern[i] = (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
		self[i] = c == '*' ? 'a' : c;
		stars = stars || c == '*';
	}
	pattern[len] = '\0';
	assert(cors_origin_matches(pattern, self, len));
	if (!stars)
		assert(cors_origin_matches(pattern, origin, olen) ==
			   (olen == len && strncasecmp(origin, entry, len) == 0));
	else
		(void) cors_origin_matches(pattern, origin, olen);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	CorsListKind kind;
	const unsigned char *nl;
	size_t		vlen;
	char	   *value;
	char	   *origin;
	size_t		olen;
	CorsSpan   *spans;
	CorsSpan	bad;
	int			n;

	if (size == 0)
		return 0;
	kind = (CorsListKind) (data[0] % 3);
	data++, size--;
	nl = memchr(data, '\n', size);
	vlen = nl ? (size_t) (nl - data) : size;
	value = malloc(vlen + 1);
	memcpy(value, data, vlen);
	value[vlen] = '\0';
	olen = nl ? size - vlen - 1 : 0;
	/* An exact-size copy, so that ASan sees any read past the end. */
	origin = malloc(olen ? olen : 1);
	memcpy(origin, nl ? nl + 1 : data, olen);

	spans = malloc(sizeof(CorsSpan) * cors_split_max(value));
	n = cors_split(value, kind, spans, &bad);
	if (n < 0)
		assert(bad.base >= value && bad.base + bad.len <= value + strlen(value) &&
			   !cors_item_ok(kind, bad.base, bad.len));
	for (int i = 0; i < n; i++)
	{
		const CorsSpan *sp = &spans[i];

		assert(sp->len > 0 && sp->base >= value && sp->base + sp->len <= value + strlen(value));
		assert(memchr(sp->base, ',', sp->len) == NULL);
		assert(sp->base[0] != ' ' && sp->base[sp->len - 1] != ' ');
		assert(cors_item_ok(kind, sp->base, sp->len));
		if (kind == CORS_LIST_ORIGINS)
			check_origin(sp->base, sp->len, origin, olen);
	}
	free(spans);
	free(origin);
	free(value);
	return 0;
}
