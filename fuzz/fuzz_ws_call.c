/*
 * Fuzzes the decoder of a WebSocket call (src/parse/ws_call_decode.c), the
 * payload a worker sends an executor to run a socket's handler.  Decoding
 * must never read outside the input, and what it accepts must hold
 * together: every string lies inside the payload, the settings are within
 * their bound, the kind is one of three, and the strings account for the
 * whole payload.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "parse/ws_call_decode.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* A string lies inside [p, p + len); its bytes are touched for ASan. */
static size_t
check_inside(WsCallString s, const char *p, size_t len)
{
	if (s.base == NULL)
		return 0;
	assert(s.base >= p && s.len <= len && (size_t) (s.base - p) <= len - s.len);
	for (uint32_t i = 0; i < s.len; i++)
		(void) *(volatile const char *) (s.base + i);
	return s.len;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *p = (const char *) data;
	WsCallFields f;
	size_t		strings = 0;
	size_t		prefixes;

	if (!ws_call_decode(p, size, &f))
		return 0;
	assert(f.kind == 'T' || f.kind == 'B' || f.kind == 'C');
	assert(f.nsettings <= WS_CALL_MAX_SETTINGS);
	assert(f.sql.base != NULL && f.data.base != NULL);
	strings += check_inside(f.search_path, p, size);
	strings += check_inside(f.sql, p, size);
	strings += check_inside(f.data, p, size);
	for (uint32_t i = 0; i < f.nsettings; i++)
	{
		assert(f.names[i].base != NULL && f.values[i].base != NULL);
		strings += check_inside(f.names[i], p, size);
		strings += check_inside(f.values[i], p, size);
	}
	/* kind, 5 integers, the count, and a length before each string */
	prefixes = 1 + 5 * 4 + 4 + 4 * (3 + 2 * (size_t) f.nsettings);
	assert(strings + prefixes == size);
	return 0;
}
