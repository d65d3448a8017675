/*
 * Fuzzes query-string and form decoding: the span scanner
 * (src/parse/formscan.c) and percent_decode (src/parse/percent.c) as querystring.c
 * uses them.  Spans lie inside the input, cover every byte that is not a
 * separator, and decode to no more bytes than they hold.
 */
#include <assert.h>

#include "postgres.h"
#include "parse/formscan.h"
#include "parse/percent.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char	   *s = palloc(size ? size : 1);
	size_t		pos = 0,
				covered = 0,
				amps = 0;
	FormSpan	span;

	memcpy(s, data, size);
	for (size_t i = 0; i < size; i++)
		amps += (s[i] == '&');
	while (form_next(s, size, &pos, &span))
	{
		char	   *out = palloc(span.keylen + span.valuelen + 1);

		assert(span.key >= s && span.key + span.keylen <= s + size);
		assert(span.keylen > 0 || span.value != NULL);
		assert(memchr(span.key, '&', span.keylen) == NULL);
		assert(percent_decode(span.key, span.keylen, out, true) <= (long) span.keylen);
		covered += span.keylen;
		if (span.value)
		{
			assert(span.value == span.key + span.keylen + 1 && span.value[-1] == '=');
			assert(span.value + span.valuelen <= s + size);
			assert(memchr(span.value, '&', span.valuelen) == NULL);
			assert(percent_decode(span.value, span.valuelen, out, true) <= (long) span.valuelen);
			covered += span.valuelen + 1;
		}
	}
	assert(pos == size);
	assert(covered + amps == size);
	shim_reset();
	return 0;
}
