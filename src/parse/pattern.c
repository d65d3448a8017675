/*
 * pattern.c
 *		Route path patterns: compiling, ordering and matching.
 *
 * Matching works on the raw request path split once per request; a segment
 * is decoded only when it holds a '%', which most paths never do.
 */
#include "postgres.h"

#include "parse/pattern.h"
#include "parse/percent.h"

/* True for a character of a parameter's name. */
static bool
is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_';
}

/* Compiles a route's path pattern; false with *error if it is bad. */
bool
pattern_compile(const char *pattern, PathPattern *out, char **error)
{
	const char *p;
	int			cap = 8;
	size_t		len = strlen(pattern);

	if (len == 0 || pattern[0] != '/')
	{
		*error = psprintf("route path \"%s\" does not start with \"/\"", pattern);
		return false;
	}

	out->nsegs = 0;
	out->segs = palloc(sizeof(PatternSegment) * cap);
	if (len == 1)
		return true;			/* "/" has no segments */

	p = pattern + 1;
	for (;;)
	{
		const char *end = strchr(p, '/');
		size_t		seglen = end ? (size_t) (end - p) : strlen(p);
		PatternSegment *seg;

		if (out->nsegs == cap)
		{
			cap *= 2;
			out->segs = repalloc(out->segs, sizeof(PatternSegment) * cap);
		}
		if (out->nsegs >= MAX_PATH_SEGMENTS)
		{
			*error = psprintf("route path \"%s\" has more than %d segments", pattern, MAX_PATH_SEGMENTS);
			return false;
		}
		seg = &out->segs[out->nsegs++];

		if (seglen > 0 && (p[0] == ':' || p[0] == '*'))
		{
			size_t		i;

			seg->kind = (p[0] == ':') ? SEG_PARAM : SEG_REST;
			seg->text = pnstrdup(p + 1, seglen - 1);
			seg->len = seglen - 1;
			if (seg->kind == SEG_PARAM && seg->len == 0)
			{
				*error = psprintf("route path \"%s\" has a parameter without a name", pattern);
				return false;
			}
			if (seg->kind == SEG_REST && seg->len == 0)
			{
				seg->text = "*";
				seg->len = 1;
			}
			else
				for (i = 0; i < seg->len; i++)
					if (!is_name_char(seg->text[i]))
					{
						*error = psprintf("route path \"%s\": parameter names may hold only letters, digits and underscores", pattern);
						return false;
					}
			if (seg->kind == SEG_REST && end != NULL)
			{
				*error = psprintf("route path \"%s\": \"*\" may only be the last segment", pattern);
				return false;
			}
		}
		else
		{
			seg->kind = SEG_LITERAL;
			seg->text = pnstrdup(p, seglen);
			seg->len = seglen;
			if (memchr(p, '%', seglen) || memchr(p, '?', seglen) || memchr(p, '#', seglen))
			{
				*error = psprintf("route path \"%s\": write literal segments unencoded, without \"%%\", \"?\" or \"#\"", pattern);
				return false;
			}
		}

		if (end == NULL)
			break;
		p = end + 1;
	}

	/* Parameter names must be distinct: they become keys of request.params. */
	for (int i = 0; i < out->nsegs; i++)
		for (int j = i + 1; j < out->nsegs; j++)
			if (out->segs[i].kind != SEG_LITERAL && out->segs[j].kind != SEG_LITERAL &&
				out->segs[i].len == out->segs[j].len &&
				memcmp(out->segs[i].text, out->segs[j].text, out->segs[i].len) == 0)
			{
				*error = psprintf("route path \"%s\" names parameter \"%s\" twice", pattern, out->segs[i].text);
				return false;
			}
	return true;
}

/* < 0 if a should be tried before b: the more specific pattern first. */
int
pattern_compare(const PathPattern *a, const PathPattern *b)
{
	int			n = Min(a->nsegs, b->nsegs);

	for (int i = 0; i < n; i++)
		if (a->segs[i].kind != b->segs[i].kind)
			return (int) b->segs[i].kind - (int) a->segs[i].kind;
	/* Same shape as far as both go: the longer one is more specific. */
	return b->nsegs - a->nsegs;
}

/* Splits path[0..len) on '/'; false if it does not start with '/' or has too many segments. */
bool
path_split(const char *path, size_t len, PathSegments *out)
{
	size_t		start;

	out->n = 0;
	out->base = path;
	out->len = len;
	if (len == 0 || path[0] != '/')
		return false;
	if (len == 1)
		return true;

	start = 1;
	for (size_t i = 1; i <= len; i++)
	{
		if (i == len || path[i] == '/')
		{
			if (out->n == MAX_PATH_SEGMENTS)
				return false;
			out->seg[out->n] = path + start;
			out->seglen[out->n] = i - start;
			out->encoded[out->n] = memchr(path + start, '%', i - start) != NULL;
			out->n++;
			start = i + 1;
		}
	}
	return true;
}

/* True if a path segment, percent-decoded if need be, is the literal. */
static bool
literal_equals(const PatternSegment *lit, const char *seg, size_t seglen, bool encoded)
{
	char		buf[256];
	long		dlen;

	if (!encoded)
		return lit->len == seglen && memcmp(lit->text, seg, seglen) == 0;
	/* Decoding never grows a segment; one too long for buf cannot match. */
	if (seglen > sizeof(buf) || lit->len > seglen)
		return false;
	dlen = percent_decode(seg, seglen, buf, false);
	return dlen >= 0 && (size_t) dlen == lit->len && memcmp(lit->text, buf, dlen) == 0;
}

/* Matches a split path against a pattern; the number of captures, or -1. */
int
pattern_match(const PathPattern *pattern, const PathSegments *path, PathCapture *caps)
{
	int			ncaps = 0;
	int			i;

	for (i = 0; i < pattern->nsegs; i++)
	{
		const PatternSegment *ps = &pattern->segs[i];

		if (ps->kind == SEG_REST)
		{
			caps[ncaps].name = ps->text;
			caps[ncaps].namelen = ps->len;
			caps[ncaps].rest = true;
			if (i < path->n)
			{
				caps[ncaps].value = path->seg[i];
				caps[ncaps].valuelen = (path->base + path->len) - path->seg[i];
			}
			else
			{
				caps[ncaps].value = "";
				caps[ncaps].valuelen = 0;
			}
			return ncaps + 1;
		}
		if (i >= path->n)
			return -1;
		if (ps->kind == SEG_LITERAL)
		{
			if (!literal_equals(ps, path->seg[i], path->seglen[i], path->encoded[i]))
				return -1;
		}
		else
		{
			if (path->seglen[i] == 0)
				return -1;
			caps[ncaps].name = ps->text;
			caps[ncaps].namelen = ps->len;
			caps[ncaps].value = path->seg[i];
			caps[ncaps].valuelen = path->seglen[i];
			caps[ncaps].rest = false;
			ncaps++;
		}
	}
	return (i == path->n) ? ncaps : -1;
}

/*
 * Appends one segment of a witness path: a literal as written, a parameter
 * as "x" (any non-empty segment matches it).
 */
static char *
witness_append(char *w, const PatternSegment *seg)
{
	*w++ = '/';
	if (seg->kind == SEG_LITERAL)
	{
		memcpy(w, seg->text, seg->len);
		w += seg->len;
	}
	else
		*w++ = 'x';
	return w;
}

/* True if some request path matches both patterns; see pattern.h. */
bool
pattern_overlaps(const PathPattern *a, const PathPattern *b, char **witness)
{
	size_t		size = 2;
	char	   *buf,
			   *w;
	int			i;
	bool		overlap = false;

	for (i = 0; i < a->nsegs; i++)
		size += a->segs[i].len + 2;
	for (i = 0; i < b->nsegs; i++)
		size += b->segs[i].len + 2;
	w = buf = palloc(size);

	for (i = 0;; i++)
	{
		const PatternSegment *sa = i < a->nsegs ? &a->segs[i] : NULL;
		const PatternSegment *sb = i < b->nsegs ? &b->segs[i] : NULL;

		/*
		 * A rest capture matches whatever follows, so the other pattern's
		 * remaining segments decide alone, and each of them matches
		 * something.
		 */
		if ((sa && sa->kind == SEG_REST) || (sb && sb->kind == SEG_REST))
		{
			const PathPattern *other = (sa && sa->kind == SEG_REST) ? b : a;

			for (int j = i; j < other->nsegs && other->segs[j].kind != SEG_REST; j++)
				w = witness_append(w, &other->segs[j]);

			/*
			 * "/" splits into no segments, not one empty one: a second
			 * empty segment, which the rest capture takes, keeps "//"
			 * a path of two.
			 */
			if (w - buf == 1)
				*w++ = '/';
			overlap = true;
			break;
		}
		/* Both ended together: same length, every segment compatible. */
		if (sa == NULL && sb == NULL)
		{
			overlap = true;
			break;
		}
		/* Without a rest capture, a path has as many segments as the pattern. */
		if (sa == NULL || sb == NULL)
			break;
		if (sa->kind == SEG_LITERAL && sb->kind == SEG_LITERAL)
		{
			if (sa->len != sb->len || memcmp(sa->text, sb->text, sa->len) != 0)
				break;
			w = witness_append(w, sa);
		}
		else if (sa->kind == SEG_LITERAL || sb->kind == SEG_LITERAL)
		{
			const PatternSegment *lit = sa->kind == SEG_LITERAL ? sa : sb;

			/* A parameter matches only a non-empty segment. */
			if (lit->len == 0)
				break;
			w = witness_append(w, lit);
		}
		else
			w = witness_append(w, sa);
	}

	if (w == buf)
		*w++ = '/';
	*w = '\0';
	if (witness != NULL)
		*witness = overlap ? buf : NULL;
	return overlap;
}
