/*
 * handoff_frame.c
 *		Encodes and decodes the messages between HTTP workers and executors.
 *
 * Both ends run the same library build on the same machine, so integers go
 * in network byte order only for readability of captures; strings are a
 * 4-byte length and their bytes.  Decoding trusts nothing: every length is
 * checked against what is left.
 */
#include "postgres.h"

#include <arpa/inet.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exec/handoff_frame.h"
#include "message/response.h"

/* ---- writing ---- */

/* Appends v in network byte order. */
static void
put_u32(StringInfo buf, uint32 v)
{
	uint32		n = htonl(v);

	appendBinaryStringInfo(buf, (char *) &n, 4);
}

/* Appends v in network byte order. */
static void
put_u64(StringInfo buf, uint64 v)
{
	put_u32(buf, (uint32) (v >> 32));
	put_u32(buf, (uint32) v);
}

/* Appends a length-prefixed string. */
static void
put_str(StringInfo buf, const char *s, size_t len)
{
	put_u32(buf, (uint32) len);
	if (len > 0)
		appendBinaryStringInfo(buf, s, (int) len);
}

/* Starts a frame; returns where its length goes, for end_frame. */
static int
begin_frame(StringInfo buf, FrameType type)
{
	int			at = buf->len;

	put_u32(buf, 0);
	appendStringInfoChar(buf, (char) type);
	return at;
}

/* Fills in the length of the frame started at at. */
static void
end_frame(StringInfo buf, int at)
{
	uint32		n = htonl((uint32) (buf->len - at - FRAME_HEADER_SIZE));

	memcpy(buf->data + at, &n, 4);
}

/* Appends a REQUEST frame for req to buf. */
void
frame_put_request(StringInfo buf, h2o_req_t *req, const HandoffMeta *meta)
{
	int			at = begin_frame(buf, FRAME_REQUEST);

	put_u64(buf, (uint64) meta->head_at);
	put_u64(buf, (uint64) meta->route_id);
	appendStringInfoChar(buf, meta->rerun ? 1 : 0);
	appendStringInfoChar(buf, req->scheme == &H2O_URL_SCHEME_HTTPS ? 1 : 0);
	/* HTTP/2 carries the host in :authority, not in a header: send it apart. */
	put_str(buf, req->authority.base, req->authority.len);
	put_str(buf, req->method.base, req->method.len);
	put_str(buf, req->path.base, req->path.len);
	put_u64(buf, req->query_at == SIZE_MAX ? PG_UINT64_MAX : (uint64) req->query_at);
	put_u32(buf, (uint32) req->headers.size);
	for (size_t i = 0; i < req->headers.size; i++)
	{
		h2o_header_t *h = &req->headers.entries[i];

		put_str(buf, h->name->base, h->name->len);
		put_str(buf, h->value.base, h->value.len);
	}
	appendStringInfoChar(buf, req->entity.base != NULL ? 1 : 0);
	put_str(buf, req->entity.base, req->entity.base != NULL ? req->entity.len : 0);
	end_frame(buf, at);
}

/* Appends a HEAD frame for req->res with the given content length. */
void
frame_put_head(StringInfo buf, h2o_req_t *req, uint64 content_length,
			   const HandoffAnswerMeta *meta)
{
	int			at = begin_frame(buf, FRAME_HEAD);

	put_u32(buf, (uint32) req->res.status);
	put_u64(buf, content_length);
	/* The answering route's compress column, for the worker's compressor. */
	appendStringInfoChar(buf, (char) req->compress_hint);
	/* An empty role is none: a role's name is never empty. */
	put_str(buf, meta->role != NULL ? meta->role : "", meta->role != NULL ? strlen(meta->role) : 0);
	put_u64(buf, (uint64) Max(meta->plan_us, 0));
	put_u32(buf, (uint32) req->res.headers.size);
	for (size_t i = 0; i < req->res.headers.size; i++)
	{
		h2o_header_t *h = &req->res.headers.entries[i];

		put_str(buf, h->name->base, h->name->len);
		put_str(buf, h->value.base, h->value.len);
	}
	end_frame(buf, at);
}

/* Writes the header of a BODY frame of len bytes into out. */
void
frame_put_body_header(char *out, size_t len)
{
	uint32		n = htonl((uint32) len);

	memcpy(out, &n, 4);
	out[4] = (char) FRAME_BODY;
}

/* Appends an END frame. */
void
frame_put_end(StringInfo buf)
{
	int			at = begin_frame(buf, FRAME_END);

	end_frame(buf, at);
}

/* Appends HEAD, one BODY (if any) and END frames for req->res. */
void
frame_put_response(StringInfo buf, h2o_req_t *req, const char *body, size_t bodylen,
				   const HandoffAnswerMeta *meta)
{
	frame_put_head(buf, req, (uint64) bodylen, meta);
	if (bodylen > 0)
	{
		int			at = begin_frame(buf, FRAME_BODY);

		appendBinaryStringInfo(buf, body, (int) bodylen);
		end_frame(buf, at);
	}
	frame_put_end(buf);
}

/* ---- reading ---- */

typedef struct Reader
{
	const char *p;
	size_t		left;
	bool		ok;
} Reader;

/* Reads a u32 in network byte order; on a short read, 0 and r->ok false. */
static uint32
get_u32(Reader *r)
{
	uint32		n;

	if (r->left < 4)
	{
		r->ok = false;
		return 0;
	}
	memcpy(&n, r->p, 4);
	r->p += 4;
	r->left -= 4;
	return ntohl(n);
}

/* Reads a u64 in network byte order; on a short read, r->ok false. */
static uint64
get_u64(Reader *r)
{
	uint64		hi = get_u32(r);

	return (hi << 32) | get_u32(r);
}

/* Reads one byte; on a short read, 0 and r->ok false. */
static uint8
get_u8(Reader *r)
{
	if (r->left < 1)
	{
		r->ok = false;
		return 0;
	}
	r->left--;
	return (uint8) *r->p++;
}

/* A string copied into pool, NUL-terminated for convenience. */
static h2o_iovec_t
get_str(Reader *r, h2o_mem_pool_t *pool)
{
	uint32		len = get_u32(r);
	h2o_iovec_t v = {NULL, 0};

	if (!r->ok || len > r->left)
	{
		r->ok = false;
		return v;
	}
	v.base = h2o_mem_alloc_pool(pool, len + 1);
	memcpy(v.base, r->p, len);
	v.base[len] = '\0';
	v.len = len;
	r->p += len;
	r->left -= len;
	return v;
}

/* Reads a frame header. */
void
frame_get_header(const char *data, uint32 *len, char *type)
{
	uint32		n;

	memcpy(&n, data, 4);
	*len = ntohl(n);
	*type = data[4];
}

/* Fills a zeroed h2o request from a REQUEST payload. */
bool
frame_get_request(const char *data, size_t len, h2o_req_t *req, HandoffMeta *meta)
{
	Reader		r = {data, len, true};
	uint64		query_at;
	uint32		nheaders;
	bool		has_body;
	h2o_iovec_t body;

	meta->head_at = (TimestampTz) get_u64(&r);
	meta->route_id = (int64) get_u64(&r);
	meta->rerun = get_u8(&r) != 0;
	/* Whether the client's connection is TLS (the request relation's tls). */
	req->scheme = get_u8(&r) != 0 ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP;
	/* The host the client named: the CSRF rule's own origin (serve/auth.c). */
	req->authority = get_str(&r, &req->pool);
	req->method = get_str(&r, &req->pool);
	req->path = get_str(&r, &req->pool);
	query_at = get_u64(&r);
	req->query_at = (query_at == PG_UINT64_MAX) ? SIZE_MAX : (size_t) query_at;
	if (req->query_at != SIZE_MAX && req->query_at >= req->path.len)
		return false;
	nheaders = get_u32(&r);
	if (!r.ok || nheaders > r.left / 8)
		return false;
	for (uint32 i = 0; i < nheaders && r.ok; i++)
	{
		h2o_iovec_t name = get_str(&r, &req->pool);
		h2o_iovec_t value = get_str(&r, &req->pool);

		if (r.ok)
			h2o_add_header_by_str(&req->pool, &req->headers, name.base, name.len, 1,
								  NULL, value.base, value.len);
	}
	has_body = get_u8(&r) != 0;
	body = get_str(&r, &req->pool);
	if (has_body)
		req->entity = body;
	return r.ok && r.left == 0;
}

/* Sets req->res from a HEAD payload, copying into req's pool. */
bool
frame_get_head(const char *data, size_t len, h2o_req_t *req, HandoffAnswerMeta *meta)
{
	Reader		r = {data, len, true};
	uint32		status = get_u32(&r);
	uint64		content_length = get_u64(&r);
	uint8		compress_hint = get_u8(&r);
	h2o_iovec_t role = get_str(&r, &req->pool);
	uint64		plan_us = get_u64(&r);
	uint32		nheaders = get_u32(&r);

	if (!r.ok || status < HTTP_STATUS_MIN || status > HTTP_STATUS_MAX || nheaders > r.left / 8 ||
		role.len >= NAMEDATALEN || plan_us > PG_INT64_MAX ||
		(compress_hint != H2O_COMPRESS_HINT_AUTO && compress_hint != H2O_COMPRESS_HINT_DISABLE))
		return false;
	for (uint32 i = 0; i < nheaders && r.ok; i++)
	{
		h2o_iovec_t name = get_str(&r, &req->pool);
		h2o_iovec_t value = get_str(&r, &req->pool);

		if (r.ok)
			h2o_add_header_by_str(&req->pool, &req->res.headers, name.base, name.len, 1,
								  NULL, value.base, value.len);
	}
	if (!r.ok || r.left != 0)
		return false;
	req->res.status = (int) status;
	req->compress_hint = (char) compress_hint;
	meta->role = role.len > 0 ? role.base : NULL;
	meta->plan_us = (int64) plan_us;
	req->res.content_length = (content_length == FRAME_LENGTH_UNKNOWN) ?
		SIZE_MAX : (size_t) content_length;
	return true;
}
