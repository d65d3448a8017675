/*
 * byte_ranges.c
 *		Reading a Range header field for a static file (RFC 9110 14.1.1,
 *		14.2): which byte ranges to send, merged, and how many at most.
 *
 *	ranges-specifier = range-unit "=" range-set
 *	range-set        = 1#range-spec
 *	range-spec       = int-range / suffix-range / other-range
 *	int-range        = first-pos "-" [ last-pos ]
 *	suffix-range     = "-" suffix-length
 *
 * A value that does not read this way, or whose unit is not "bytes", is
 * ignored (RFC 9110 14.2: a server MAY ignore an invalid ranges-specifier
 * and MUST ignore a unit it does not understand), and the whole file goes
 * out.  So do requests for more ranges than the setting allows, as nginx
 * (max_ranges) and Apache (MaxRanges) do.
 */
#include <string.h>

#include "parse/byte_ranges.h"

/* True for an ASCII digit. */
static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Skips optional whitespace (RFC 9110 5.6.3) at *p. */
static void
skip_ows(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/*
 * Reads 1*DIGIT at *p into *n, saturating at UINT64_MAX (a position that
 * large lies past any file); false if there is no digit.
 */
static bool
read_number(const char **p, const char *end, uint64_t *n)
{
	const char *start = *p;
	uint64_t	v = 0;

	for (; *p < end && is_digit(**p); (*p)++)
	{
		unsigned	d = (unsigned) (**p - '0');

		v = (v > (UINT64_MAX - d) / 10) ? UINT64_MAX : v * 10 + d;
	}
	*n = v;
	return *p > start;
}

/* Whether two ranges overlap or lie within BYTE_RANGES_MERGE_GAP of each other. */
static bool
close_together(const ByteRange *a, const ByteRange *b)
{
	const ByteRange *lo = a->first <= b->first ? a : b;
	const ByteRange *hi = lo == a ? b : a;

	return hi->first <= lo->last || hi->first - lo->last <= 1 + BYTE_RANGES_MERGE_GAP;
}

/* Sorts r[0..n) by first byte (n is small: insertion sort). */
static void
sort_by_first(ByteRange *r, int n)
{
	for (int i = 1; i < n; i++)
	{
		ByteRange	v = r[i];
		int			j = i;

		for (; j > 0 && r[j - 1].first > v.first; j--)
			r[j] = r[j - 1];
		r[j] = v;
	}
}

/*
 * Merges the ranges of r[0..n) that are close together; returns how many
 * are left.  Keeps the client's order when nothing needs merging.
 */
static int
coalesce(ByteRange *r, int n)
{
	bool		any = false;
	int			kept = 0;

	for (int i = 0; i < n && !any; i++)
		for (int j = i + 1; j < n && !any; j++)
			any = close_together(&r[i], &r[j]);
	if (!any)
		return n;
	sort_by_first(r, n);
	for (int i = 1; i < n; i++)
	{
		if (close_together(&r[kept], &r[i]))
		{
			if (r[i].last > r[kept].last)
				r[kept].last = r[i].last;
		}
		else
			r[++kept] = r[i];
	}
	return kept + 1;
}

/*
 * Reads one range-spec at *p and resolves it against size: true with
 * *satisfiable and *r set, false if it is malformed.
 */
static bool
read_spec(const char **p, const char *end, uint64_t size, bool *satisfiable, ByteRange *r)
{
	uint64_t	first,
				last;

	*satisfiable = false;
	if (*p < end && **p == '-')
	{
		uint64_t	suffix;

		(*p)++;
		if (!read_number(p, end, &suffix))
			return false;
		/* The last suffix bytes; a zero-length suffix is unsatisfiable. */
		if (suffix > 0 && size > 0)
		{
			r->first = suffix >= size ? 0 : size - suffix;
			r->last = size - 1;
			*satisfiable = true;
		}
		return true;
	}
	if (!read_number(p, end, &first) || *p >= end || **p != '-')
		return false;
	(*p)++;
	if (read_number(p, end, &last))
	{
		if (last < first)
			return false;
	}
	else
		last = UINT64_MAX;
	if (first < size)
	{
		r->first = first;
		r->last = last < size - 1 ? last : size - 1;
		*satisfiable = true;
	}
	return true;
}

/* Reads a Range value for a file of size bytes: see byte_ranges.h. */
ByteRangesVerdict
byte_ranges_plan(const char *value, size_t len, uint64_t size, int max_ranges,
				 ByteRange *out, int *nout)
{
	const char *p = value;
	const char *end = value + len;
	int			specs = 0;
	int			n = 0;

	*nout = 0;
	if (max_ranges < 1 || max_ranges > BYTE_RANGES_LIMIT)
		return BYTE_RANGES_WHOLE;
	skip_ows(&p, end);
	if (end - p < 6)
		return BYTE_RANGES_WHOLE;
	for (int i = 0; i < 5; i++)
		if ((p[i] | 0x20) != "bytes"[i])
			return BYTE_RANGES_WHOLE;
	if (p[5] != '=')
		return BYTE_RANGES_WHOLE;
	p += 6;

	/* 1#range-spec: elements between commas, empty ones allowed (RFC 9110 5.6.1). */
	for (;;)
	{
		skip_ows(&p, end);
		if (p < end && *p != ',')
		{
			bool		satisfiable;
			ByteRange	r;

			if (!read_spec(&p, end, size, &satisfiable, &r) || ++specs > max_ranges)
				return BYTE_RANGES_WHOLE;
			if (satisfiable)
				out[n++] = r;
			skip_ows(&p, end);
		}
		if (p == end)
			break;
		if (*p != ',')
			return BYTE_RANGES_WHOLE;
		p++;
	}
	if (specs == 0)
		return BYTE_RANGES_WHOLE;
	if (n == 0)
		return BYTE_RANGES_UNSATISFIABLE;
	*nout = coalesce(out, n);
	return BYTE_RANGES_PARTIAL;
}
