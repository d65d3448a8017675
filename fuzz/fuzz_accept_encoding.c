/*
 * Fuzzes the Accept-Encoding reader (src/parse/accept_encoding.c): any
 * input gives one of the three verdicts without reading past its end, the
 * verdict does not depend on bytes after a NUL-free copy's end, and a
 * value that names gzip nowhere is never read as taking it.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/accept_encoding.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* An exact-size copy, so that ASan sees any read past the end. */
	char	   *s = malloc(size ? size : 1);
	AcceptGzip	v;
	bool		names_gzip = false;

	memcpy(s, data, size);
	v = accept_encoding_gzip(s, size);
	assert(v == ACCEPT_GZIP_UNSAID || v == ACCEPT_GZIP_YES || v == ACCEPT_GZIP_NO);
	for (size_t i = 0; i + 4 <= size && !names_gzip; i++)
		names_gzip = strncasecmp(s + i, "gzip", 4) == 0;
	assert(names_gzip || v == ACCEPT_GZIP_UNSAID);
	free(s);
	return 0;
}
