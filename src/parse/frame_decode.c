/*
 * frame_decode.c
 *		Reading the payloads of the frames between HTTP workers and executors.
 *
 * Integers are big-endian; strings are a 4-byte length and their bytes.
 * A REQUEST's module states are a count, then for each a module id byte
 * and its bytes as a string: sliced here, read by their modules.
 * Headers are walked once here to check that they fit the payload exactly,
 * so that the caller's second walk, which copies them, cannot fail.
 */
#include "parse/frame_decode.h"

#include <string.h>

/* Reads a big-endian u32; on a short read, 0 and r->ok false. */
static uint32_t
get_u32(FrameReader *r)
{
	const unsigned char *b = (const unsigned char *) r->p;
	uint32_t	v;

	if (!r->ok || r->left < 4)
	{
		r->ok = false;
		return 0;
	}
	v = ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16) | ((uint32_t) b[2] << 8) | b[3];
	r->p += 4;
	r->left -= 4;
	return v;
}

/* Reads a big-endian u64; on a short read, r->ok false. */
static uint64_t
get_u64(FrameReader *r)
{
	uint64_t	hi = get_u32(r);

	return (hi << 32) | get_u32(r);
}

/* Reads one byte; on a short read, 0 and r->ok false. */
static uint8_t
get_u8(FrameReader *r)
{
	if (!r->ok || r->left < 1)
	{
		r->ok = false;
		return 0;
	}
	r->left--;
	return (uint8_t) *r->p++;
}

/* Reads a length-prefixed string; on a short read, empty and r->ok false. */
static FrameString
get_str(FrameReader *r)
{
	uint32_t	len = get_u32(r);
	FrameString s = {"", 0};

	if (!r->ok || len > r->left)
	{
		r->ok = false;
		return s;
	}
	s.base = r->p;
	s.len = len;
	r->p += len;
	r->left -= len;
	return s;
}

/* Skips n headers; false if they do not fit. */
static bool
skip_headers(FrameReader *r, uint32_t n)
{
	for (uint32_t i = 0; i < n && r->ok; i++)
	{
		(void) get_str(r);
		(void) get_str(r);
	}
	return r->ok;
}

/* Reads a frame header: the payload's length and the frame's type. */
void
frame_decode_frame_header(const char *data, uint32_t *len, char *type)
{
	FrameReader r = {data, 5, true};

	*len = get_u32(&r);
	*type = data[4];
}

/* Reads the next header of a reader a successful decode positioned. */
void
frame_decode_header(FrameReader *r, FrameString *name, FrameString *value)
{
	*name = get_str(r);
	*value = get_str(r);
}

/*
 * Reads a REQUEST's module states: each of a module below nmodules, after
 * the one before it, at most FRAME_MODULE_STATE_MAX bytes.  False if not.
 */
static bool
get_module_states(FrameReader *r, unsigned nmodules, FrameRequest *out)
{
	out->nstates = get_u8(r);
	if (!r->ok || out->nstates > FRAME_MAX_MODULE_STATES)
		return false;
	for (int i = 0; i < out->nstates; i++)
	{
		FrameModuleState *ms = &out->states[i];

		ms->module = get_u8(r);
		ms->bytes = get_str(r);
		if (!r->ok || ms->module >= nmodules ||
			(i > 0 && ms->module <= out->states[i - 1].module) ||
			ms->bytes.len > FRAME_MODULE_STATE_MAX)
			return false;
	}
	return true;
}

/* Decodes a REQUEST payload; false if it is malformed. */
bool
frame_decode_request(const char *data, size_t len, unsigned nmodules, FrameRequest *out)
{
	FrameReader r = {data, len, true};

	memset(out, 0, sizeof(*out));
	out->head_at = get_u64(&r);
	out->route_id = get_u64(&r);
	out->rerun = get_u8(&r) != 0;
	if (!get_module_states(&r, nmodules, out))
		return false;
	out->tls = get_u8(&r) != 0;
	out->authority = get_str(&r);
	out->method = get_str(&r);
	out->path = get_str(&r);
	out->query_at = get_u64(&r);
	if (!r.ok || (out->query_at != UINT64_MAX && out->query_at >= out->path.len))
		return false;
	out->nheaders = get_u32(&r);
	if (!r.ok || out->nheaders > r.left / FRAME_DECODE_MIN_HEADER)
		return false;
	out->headers = r;
	if (!skip_headers(&r, out->nheaders))
		return false;
	out->has_body = get_u8(&r) != 0;
	out->body = get_str(&r);
	return r.ok && r.left == 0;
}

/* Decodes a HEAD payload; false if it is malformed. */
bool
frame_decode_head(const char *data, size_t len, uint64_t max_length,
				  uint8_t hint_a, uint8_t hint_b, FrameHead *out)
{
	FrameReader r = {data, len, true};

	memset(out, 0, sizeof(*out));
	out->status = get_u32(&r);
	out->content_length = get_u64(&r);
	out->compress_hint = get_u8(&r);
	out->role = get_str(&r);
	out->plan_us = get_u64(&r);
	out->nheaders = get_u32(&r);
	if (!r.ok ||
		out->status < FRAME_DECODE_STATUS_MIN || out->status > FRAME_DECODE_STATUS_MAX ||
		(out->content_length != FRAME_DECODE_LENGTH_UNKNOWN && out->content_length > max_length) ||
		(out->compress_hint != hint_a && out->compress_hint != hint_b) ||
		out->role.len >= FRAME_DECODE_ROLE_MAX ||
		out->plan_us > (uint64_t) INT64_MAX ||
		out->nheaders > r.left / FRAME_DECODE_MIN_HEADER)
		return false;
	out->headers = r;
	return skip_headers(&r, out->nheaders) && r.left == 0;
}
