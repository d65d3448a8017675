/*
 * Fuzzes route patterns (src/pattern.c): the input is a pattern, a newline
 * and a request path.  Compiling, splitting, matching and decoding the
 * captures must never crash, and captures must lie inside the path.
 */
#include <assert.h>

#include "postgres.h"
#include "pattern.h"
#include "percent.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

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
	}
	else
		assert(error != NULL);
	shim_reset();
	return 0;
}
