/*
 * Fuzzes route patterns (src/parse/pattern.c): the input is a pattern, a newline
 * and a request path.  Compiling, splitting, matching and decoding the
 * captures must never crash, and captures must lie inside the path.
 * The path, read as a pattern too, checks pattern_overlaps: two patterns
 * that match one path overlap, and the path an overlap names matches both.
 */
#include <assert.h>

#include "postgres.h"
#include "parse/pattern.h"
#include "parse/percent.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* True if pattern matches the path witness. */
static bool
matches(const PathPattern *pattern, const char *path)
{
	PathSegments segs;
	PathCapture caps[MAX_PATH_SEGMENTS + 1];

	return path_split(path, strlen(path), &segs) && pattern_match(pattern, &segs, caps) >= 0;
}

/* pattern_overlaps(pp, the path as a pattern) agrees with matching. */
static void
check_overlap(const PathPattern *pp, const char *path, size_t pathlen)
{
	PathPattern other;
	char	   *error;
	char	   *witness;
	char	   *p;
	bool		overlap;

	if (memchr(path, '\0', pathlen) != NULL)
		return;
	p = pnstrdup(path, pathlen);
	if (!pattern_compile(p, &other, &error))
		return;
	overlap = pattern_overlaps(pp, &other, &witness);
	assert(overlap == pattern_overlaps(&other, pp, NULL));
	if (overlap)
	{
		assert(witness != NULL);
		assert(matches(pp, witness) && matches(&other, witness));
	}
	else
	{
		assert(witness == NULL);
		/* The literal path matches the pattern made of it, so not pp. */
		assert(!matches(pp, p) || !matches(&other, p));
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t		plen = nl ? (size_t) (nl - (const char *) data) : size;
	char	   *pattern = pnstrdup((const char *) data, plen);
	size_t		pathlen = nl ? size - plen - 1 : 0;
	char	   *path = palloc(pathlen ? pathlen : 1);
	PathPattern pp;
	PathSegments segs;
	char	   *error;

	memcpy(path, nl ? nl + 1 : "", pathlen);
	if (pattern_compile(pattern, &pp, &error))
	{
		PathCapture caps[MAX_PATH_SEGMENTS + 1];

		assert(pp.nsegs <= MAX_PATH_SEGMENTS);
		if (path_split(path, pathlen, &segs))
		{
			int			n = pattern_match(&pp, &segs, caps);

			assert(n <= pp.nsegs);
			for (int i = 0; i < n; i++)
			{
				char	   *out = palloc(caps[i].valuelen + 1);
				long		dlen;

				assert(caps[i].value == path + pathlen || caps[i].valuelen == 0 ||
					   (caps[i].value >= path && caps[i].value + caps[i].valuelen <= path + pathlen));
				dlen = percent_decode(caps[i].value, caps[i].valuelen, out, caps[i].rest);
				assert(dlen <= (long) caps[i].valuelen);
			}
		}
		(void) pattern_compare(&pp, &pp);
		check_overlap(&pp, path, pathlen);
	}
	else
		assert(error != NULL);
	shim_reset();
	return 0;
}
