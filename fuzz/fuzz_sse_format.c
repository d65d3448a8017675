/*
 * Fuzzes the event-stream formatting (src/parse/sse_format.c): the input is
 * an id, a NUL, an event type, a NUL and the data.  The length measured
 * must be the length written, and a client reading the bytes as the WHATWG
 * event-stream parser does must get back the same id and type and the data
 * with every CR LF and CR turned into LF: no byte of the data can end a
 * field early or start another field or event.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/sse_format.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The data as a client reassembles it: CR LF and CR become LF. */
static char *
normalized(const char *d, size_t len, size_t *outlen)
{
	char	   *out = malloc(len + 1);
	size_t		n = 0;

	for (size_t i = 0; i < len; i++)
	{
		if (d[i] == '\r')
		{
			out[n++] = '\n';
			if (i + 1 < len && d[i + 1] == '\n')
				i++;
		}
		else
			out[n++] = d[i];
	}
	*outlen = n;
	return out;
}

/* Reads the bytes back as a client would and checks them against the event. */
static void
check_parse(const char *out, size_t len, const char *id, const char *event,
			const char *d, size_t dlen)
{
	size_t		want_len;
	char	   *want = normalized(d, dlen, &want_len);
	char	   *got = malloc(len + 1);
	size_t		got_len = 0;
	int			ndata = 0;
	int			nid = 0;
	int			nevent = 0;
	size_t		at = 0;

	/* An event ends with the one blank line that dispatches it. */
	assert(len >= 2 && out[len - 1] == '\n' && out[len - 2] == '\n');
	assert(memchr(out, '\r', len) == NULL);
	while (at < len - 1)
	{
		const char *nl = memchr(out + at, '\n', len - at);
		size_t		line = (size_t) (nl - (out + at));

		assert(nl != NULL && line > 0);
		if (line >= 6 && memcmp(out + at, "data: ", 6) == 0)
		{
			if (ndata++ > 0)
				got[got_len++] = '\n';
			memcpy(got + got_len, out + at + 6, line - 6);
			got_len += line - 6;
		}
		else if (line >= 4 && memcmp(out + at, "id: ", 4) == 0)
		{
			assert(id != NULL && ndata == 0 && nid++ == 0);
			assert(line - 4 == strlen(id) && memcmp(out + at + 4, id, line - 4) == 0);
		}
		else if (line >= 7 && memcmp(out + at, "event: ", 7) == 0)
		{
			assert(event != NULL && ndata == 0 && nevent++ == 0);
			assert(line - 7 == strlen(event) && memcmp(out + at + 7, event, line - 7) == 0);
		}
		else
			assert(!"a line that is no field of the event");
		at += line + 1;
	}
	assert(at == len - 1);
	assert(nid == (id != NULL));
	assert(nevent == (event != NULL && event[0] != '\0'));
	assert(ndata >= 1);
	assert(got_len == want_len && memcmp(got, want, want_len) == 0);
	free(got);
	free(want);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *in = (const char *) data;
	const char *nul1 = memchr(in, '\0', size);
	const char *nul2 = nul1 ? memchr(nul1 + 1, '\0', size - (size_t) (nul1 + 1 - in)) : NULL;
	char	   *id = NULL;
	char	   *event = NULL;
	const char *d = in;
	size_t		dlen = size;
	size_t		len;
	char	   *out;

	if (nul2 != NULL)
	{
		size_t		idlen = (size_t) (nul1 - in);
		size_t		evlen = (size_t) (nul2 - nul1 - 1);

		/* Fields with a line break are refused, as the callers refuse them. */
		if (sse_field_ok(in, idlen))
			id = strndup(in, idlen);
		else
			assert(memchr(in, '\r', idlen) || memchr(in, '\n', idlen));
		if (sse_field_ok(nul1 + 1, evlen))
			event = strndup(nul1 + 1, evlen);
		d = nul2 + 1;
		dlen = size - (size_t) (d - in);
	}
	len = sse_event_length(id, event, d, dlen);
	out = malloc(len);
	assert(sse_event_write(out, id, event, d, dlen) == len);
	check_parse(out, len, id, event, d, dlen);
	free(out);
	free(id);
	free(event);
	return 0;
}
