/*
 * Fuzzes the multipart/form-data reader (src/parse/multipart.c).  The input
 * is a Content-Type value, a newline, then the body.  Every span lies inside
 * its input, no part's content holds the delimiter, the scan ends (0 or -1)
 * and stays ended, and the value decoders write no more than they read.
 */
#include <assert.h>
#include <string.h>

#include "postgres.h"
#include "parse/multipart.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* True if [p, p+n) lies inside [base, base+len). */
static bool
inside(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && p + n <= base + len;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char	   *s = palloc(size ? size : 1);
	const char *nl;
	size_t		ctlen;
	const char *boundary;
	size_t		blen;
	const char *error;
	MultipartScan scan;
	MultipartPart part;
	int			rc;
	int			nparts = 0;

	memcpy(s, data, size);
	nl = memchr(s, '\n', size);
	ctlen = nl ? (size_t) (nl - s) : size;
	if (!multipart_boundary(s, ctlen, &boundary, &blen, &error))
	{
		assert(error != NULL);
		shim_reset();
		return 0;
	}
	assert(inside(boundary, blen, s, ctlen) && blen >= 1 && blen <= MULTIPART_MAX_BOUNDARY);
	if (nl == NULL)
	{
		shim_reset();
		return 0;
	}
	multipart_begin(&scan, nl + 1, size - ctlen - 1, boundary, blen);
	while ((rc = multipart_next(&scan, &part)) == 1)
	{
		char	   *out = palloc(size + 1);
		bool		latin1;
		char	   *delim = palloc(blen + 4);

		nparts++;
		assert(inside(part.data, part.datalen, scan.body, scan.len));
		assert(part.name.s != NULL && inside(part.name.s, part.name.len, scan.body, scan.len));
		assert(multipart_value_copy(&part.name, out) <= part.name.len);
		if (part.filename.s)
			assert(multipart_value_copy(&part.filename, out) <= part.filename.len);
		if (part.filename_ext.s)
			assert(multipart_ext_value_decode(&part.filename_ext, out, &latin1) <= (long) part.filename_ext.len);
		if (part.content_type)
			assert(inside(part.content_type, part.content_type_len, scan.body, scan.len));
		memcpy(delim, "\r\n--", 4);
		memcpy(delim + 4, boundary, blen);
		for (size_t i = 0; i + blen + 4 <= part.datalen; i++)
			assert(memcmp(part.data + i, delim, blen + 4) != 0);
		assert(nparts <= (int) size);
	}
	assert(rc == 0 || (rc == -1 && scan.error != NULL));
	assert(multipart_next(&scan, &part) == rc);
	shim_reset();
	return 0;
}
