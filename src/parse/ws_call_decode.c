/*
 * ws_call_decode.c
 *		Reads the payload of a WebSocket call (ws_call_decode.h).
 *
 * The payload crosses a process boundary (a worker to an executor), so it
 * is read as frame_decode.c reads the hand-off's frames: every length
 * against what is left, nothing trusted.  Built by fuzz/fuzz_ws_call.c.
 */
#include "parse/ws_call_decode.h"

#include <string.h>

/* Where the payload is read from; ok turns false at the first short read. */
typedef struct Reader
{
	const char *p;
	size_t		left;
	bool		ok;
} Reader;

/* Reads a big-endian 32-bit integer; 0 (and !ok) past the end. */
static uint32_t
get_u32(Reader *r)
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

/* Reads a length-prefixed string; base NULL for NULL (or past the end). */
static WsCallString
get_str(Reader *r)
{
	WsCallString s = {NULL, 0};
	uint32_t	n = get_u32(r);

	if (!r->ok || n == WS_CALL_NULL_STRING)
		return s;
	if (n > r->left)
	{
		r->ok = false;
		return s;
	}
	s.base = r->p;
	s.len = n;
	r->p += n;
	r->left -= n;
	return s;
}

/* Reads a call's payload into f (ws_call_decode.h). */
bool
ws_call_decode(const char *payload, size_t len, WsCallFields *f)
{
	Reader		r = {payload, len, true};
	uint64_t	hi;

	memset(f, 0, sizeof(*f));
	if (len < 1)
		return false;
	f->kind = *r.p++;
	r.left--;
	if (f->kind != 'T' && f->kind != 'B' && f->kind != 'C')
		return false;
	hi = get_u32(&r);
	f->conn_id = (int64_t) ((hi << 32) | get_u32(&r));
	f->close_code = (int32_t) get_u32(&r);
	f->role = get_u32(&r);
	f->timeout_ms = (int32_t) get_u32(&r);
	f->search_path = get_str(&r);
	f->sql = get_str(&r);
	f->nsettings = get_u32(&r);
	if (!r.ok || f->sql.base == NULL || f->nsettings > WS_CALL_MAX_SETTINGS)
		return false;
	for (uint32_t i = 0; i < f->nsettings; i++)
	{
		f->names[i] = get_str(&r);
		f->values[i] = get_str(&r);
		if (f->names[i].base == NULL || f->values[i].base == NULL)
			return false;
	}
	f->data = get_str(&r);
	return r.ok && f->data.base != NULL && r.left == 0;
}
