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

/*
 * Makes room in out for n more bytes and the terminating NUL, testing the
 * room inline: the appends below are of a few bytes each, and a call to
 * appendBinaryStringInfo for each cost more than the bytes.
 */
static inline void
reserve(StringInfo out, size_t n)
{
	if ((size_t) (out->maxlen - out->len) <= n)
		enlargeStringInfo(out, (int) n);
}

/* Appends n bytes of s to out, which has room for them. */
static inline void
put_bytes(StringInfo out, const char *s, size_t n)
{
	memcpy(out->data + out->len, s, n);
	out->len += n;
}

/*
 * Appends s with & < > " ' escaped as entities.  The room for s as it is
 * is made once; an entity makes room again for itself and the rest.
 */
void
html_escape_append(StringInfo out, const char *s, size_t len)
{
	size_t		run = 0;

	reserve(out, len);
	for (size_t i = 0; i < len; i++)
	{
		const char *entity;
		size_t		entity_len;

		if (!is_special((unsigned char) s[i]))
			continue;
		entity = entity_for(s[i], &entity_len);
		/* the run before it, the entity, and the rest as it is */
		reserve(out, (i - run) + entity_len + (len - i - 1));
		put_bytes(out, s + run, i - run);
		put_bytes(out, entity, entity_len);
		run = i + 1;
	}
	put_bytes(out, s + run, len - run);
	out->data[out->len] = '\0';
}
