/*
 * pattern.h
 *		Route path patterns: compiling, ordering and matching.
 *
 * A pattern is a '/'-separated list of segments: a literal ("users"), a
 * parameter (":handle", which matches one non-empty segment), or, last only,
 * a rest capture ("*" or "*name", which matches the remaining segments,
 * possibly none).  Literal segments are compared with the percent-decoded
 * request path, so "/caf%C3%A9" matches the pattern "/café".
 */
#ifndef WEBGRES_PATTERN_H
#define WEBGRES_PATTERN_H

#include <stddef.h>
#include <stdbool.h>

typedef enum SegmentKind
{
	SEG_REST = 1,				/* ordered: higher is more specific */
	SEG_PARAM = 2,
	SEG_LITERAL = 3
} SegmentKind;

typedef struct PatternSegment
{
	SegmentKind kind;
	const char *text;			/* literal text, or the capture's name */
	size_t		len;
} PatternSegment;

typedef struct PathPattern
{
	int			nsegs;
	PatternSegment *segs;
} PathPattern;

/* A request path split into raw (still percent-encoded) segments. */
#define MAX_PATH_SEGMENTS 64

typedef struct PathSegments
{
	int			n;
	const char *base;			/* the path, without the query */
	size_t		len;
	const char *seg[MAX_PATH_SEGMENTS];
	size_t		seglen[MAX_PATH_SEGMENTS];
	bool		encoded[MAX_PATH_SEGMENTS]; /* contains '%' */
} PathSegments;

/* What a parameter or rest segment captured, as a raw slice of the path. */
typedef struct PathCapture
{
	const char *name;
	size_t		namelen;
	const char *value;
	size_t		valuelen;
	bool		rest;			/* slashes in it are separators, not data */
} PathCapture;

/* palloc'd results; on failure returns false with *error set. */
extern bool pattern_compile(const char *pattern, PathPattern *out, char **error);

/* < 0 if a should be tried before b. */
extern int	pattern_compare(const PathPattern *a, const PathPattern *b);

/*
 * True if some request path matches both patterns: literal segments must
 * be equal, a parameter matches any non-empty segment, a rest capture
 * matches whatever follows.  If witness is not NULL it is set to one such
 * path (palloc'd), or NULL when they do not overlap.
 */
extern bool pattern_overlaps(const PathPattern *a, const PathPattern *b, char **witness);

/* Splits path[0..len) on '/'; false if it does not start with '/' or has too many segments. */
extern bool path_split(const char *path, size_t len, PathSegments *out);

/*
 * Matches; captures (at most nsegs of them) are written to caps.  Returns
 * the number of captures, or -1 if the path does not match.
 */
extern int	pattern_match(const PathPattern *pattern, const PathSegments *path,
						  PathCapture *caps);

#endif
