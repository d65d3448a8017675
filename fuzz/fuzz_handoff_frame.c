/*
 * Fuzzes the decoders of the frames between HTTP workers and executors
 * (src/parse/frame_decode.c), the only decoders whose input crosses a
 * process boundary.  The input is a stream of frames as a worker or an
 * executor reads it off the socket: each whole frame is decoded by its
 * type; the whole input is also decoded as one REQUEST and as one HEAD
 * payload.  Decoding must never read outside the input, and what it accepts
 * must hold together: every string lies inside the payload, the headers
 * walk to where the decoder said, a known content length is within the
 * bound given, the module states name known modules in increasing order
 * and lie inside the payload within their bound.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "parse/frame_decode.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The bound a worker gives (FRAME_MAX_PAYLOAD), and the compress hints. */
#define MAX_LENGTH ((uint64_t) 0x3fffffff - 5)
#define HINT_AUTO 0
#define HINT_DISABLE 1
/* The pipeline modules a decoder is told of (serve/phase_list.h's count, about). */
#define NMODULES 4

/* A string lies inside [p, p + len). */
static void
check_inside(FrameString s, const char *p, size_t len)
{
	assert(s.len == 0 || (s.base >= p && s.len <= len && s.base - p <= (ptrdiff_t) (len - s.len)));
	/* Touch its bytes: ASan reports a read outside the input. */
	for (size_t i = 0; i < s.len; i++)
		(void) *(volatile const char *) (s.base + i);
}

/* Walks n headers from r, checking each; returns where the walk ended. */
static FrameReader
walk_headers(FrameReader r, uint32_t n, const char *p, size_t len)
{
	for (uint32_t i = 0; i < n; i++)
	{
		FrameString name;
		FrameString value;

		frame_decode_header(&r, &name, &value);
		assert(r.ok);
		check_inside(name, p, len);
		check_inside(value, p, len);
	}
	return r;
}

/* Decodes p as a REQUEST payload and checks what it accepts. */
static void
try_request(const char *p, size_t len)
{
	FrameRequest fr;
	FrameReader end;

	if (!frame_decode_request(p, len, NMODULES, &fr))
		return;
	assert(fr.nstates <= FRAME_MAX_MODULE_STATES);
	for (int i = 0; i < fr.nstates; i++)
	{
		assert(fr.states[i].module < NMODULES);
		assert(i == 0 || fr.states[i].module > fr.states[i - 1].module);
		assert(fr.states[i].bytes.len <= FRAME_MODULE_STATE_MAX);
		check_inside(fr.states[i].bytes, p, len);
	}
	check_inside(fr.authority, p, len);
	check_inside(fr.method, p, len);
	check_inside(fr.path, p, len);
	check_inside(fr.body, p, len);
	assert(fr.query_at == UINT64_MAX || fr.query_at < fr.path.len);
	assert(fr.nheaders <= len / FRAME_DECODE_MIN_HEADER);
	end = walk_headers(fr.headers, fr.nheaders, p, len);
	/* After the headers come the body flag and the body, then nothing. */
	assert(end.left == 1 + 4 + fr.body.len);
}

/* Decodes p as a HEAD payload and checks what it accepts. */
static void
try_head(const char *p, size_t len)
{
	FrameHead	fh;
	FrameReader end;

	if (!frame_decode_head(p, len, MAX_LENGTH, HINT_AUTO, HINT_DISABLE, &fh))
		return;
	assert(fh.status >= FRAME_DECODE_STATUS_MIN && fh.status <= FRAME_DECODE_STATUS_MAX);
	assert(fh.content_length == FRAME_DECODE_LENGTH_UNKNOWN || fh.content_length <= MAX_LENGTH);
	assert(fh.compress_hint == HINT_AUTO || fh.compress_hint == HINT_DISABLE);
	assert(fh.role.len < FRAME_DECODE_ROLE_MAX);
	assert(fh.plan_us <= (uint64_t) INT64_MAX);
	check_inside(fh.role, p, len);
	end = walk_headers(fh.headers, fh.nheaders, p, len);
	assert(end.left == 0);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *in = (const char *) data;
	size_t		at = 0;

	try_request(in, size);
	try_head(in, size);
	/* As a stream of frames: decode each whole one by its type. */
	while (size - at >= 5)
	{
		uint32_t	len;
		char		type;

		frame_decode_frame_header(in + at, &len, &type);
		if (size - at - 5 < len)
			break;
		if (type == 'Q')
			try_request(in + at + 5, len);
		else if (type == 'H')
			try_head(in + at + 5, len);
		at += 5 + (size_t) len;
	}
	return 0;
}
