/*
 * html.c
 *		HTML escaping, for handlers that render HTML from untrusted text.
 */
#include "postgres.h"

#include "sql/html.h"

/*
 * The bytes escaping replaces, " & ' < >, as bits of one word: all five are
 * below 64, so a byte is tested with a compare and a shift instead of a
 * switch, which matters for long texts that need no escaping.
 */
#define HTML_SPECIAL_BITS \
	((UINT64CONST(1) << '"') | (UINT64CONST(1) << '&') | \
	 (UINT64CONST(1) << '\'') | (UINT64CONST(1) << '<') | \
	 (UINT64CONST(1) << '>'))

/* True if escaping replaces the byte c. */
static inline bool
is_special(unsigned char c)
{
	return c < 64 && ((HTML_SPECIAL_BITS >> c) & 1) != 0;
}

/* The entity that stands for c, one of the special bytes, and its length. */
static inline const char *
entity_for(char c, size_t *len)
{
	switch (c)
	{
		case '&':
			*len = 5;
			return "&amp;";
		case '<':
			*len = 4;
			return "&lt;";
		case '>':
			*len = 4;
			return "&gt;";
		case '"':
			*len = 6;
			return "&quot;";
		default:
			*len = 5;
			return "&#39;";
	}
}

/* True if s holds any character html_escape_append would change. */
bool
html_needs_escape(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (is_special((unsigned char) s[i]))
			return true;
	return false;
}

/* Appends s with & < > " ' escaped as entities. */
void
html_escape_append(StringInfo out, const char *s, size_t len)
{
	size_t		run = 0;

	for (size_t i = 0; i < len; i++)
	{
		const char *entity;
		size_t		entity_len;

		if (!is_special((unsigned char) s[i]))
			continue;
		entity = entity_for(s[i], &entity_len);
		appendBinaryStringInfo(out, s + run, i - run);
		appendBinaryStringInfo(out, entity, entity_len);
		run = i + 1;
	}
	appendBinaryStringInfo(out, s + run, len - run);
}
