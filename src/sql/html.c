/*
 * html.c
 *		HTML escaping, for handlers that render HTML from untrusted text.
 */
#include "postgres.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/*
 * The index of the first special byte of s at or after from, or len.  Where
 * the compiler targets SSE2 (every x86-64, with GCC or clang), sixteen bytes
 * are compared with the five special ones at a time: most text has none,
 * and a byte-by-byte test was most of what escaping a page cost.
 */
static inline size_t
next_special(const char *s, size_t from, size_t len)
{
	size_t		i = from;

#ifdef __SSE2__
	const __m128i amp = _mm_set1_epi8('&');
	const __m128i lt = _mm_set1_epi8('<');
	const __m128i gt = _mm_set1_epi8('>');
	const __m128i quot = _mm_set1_epi8('"');
	const __m128i apos = _mm_set1_epi8('\'');

	for (; i + sizeof(__m128i) <= len; i += sizeof(__m128i))
	{
		__m128i		v = _mm_loadu_si128((const __m128i *) (s + i));
		__m128i		hit;
		int			mask;

		hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, amp),
										_mm_cmpeq_epi8(v, lt)),
						   _mm_or_si128(_mm_cmpeq_epi8(v, gt),
										_mm_or_si128(_mm_cmpeq_epi8(v, quot),
													 _mm_cmpeq_epi8(v, apos))));
		mask = _mm_movemask_epi8(hit);
		if (mask != 0)
			return i + __builtin_ctz((unsigned int) mask);
	}
#endif
	for (; i < len; i++)
		if (is_special((unsigned char) s[i]))
			return i;
	return len;
}

/* True if s holds any character html_escape_append would change. */
bool
html_needs_escape(const char *s, size_t len)
{
	return next_special(s, 0, len) < len;
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
	for (size_t i = next_special(s, 0, len); i < len; i = next_special(s, run, len))
	{
		const char *entity;
		size_t		entity_len;

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
