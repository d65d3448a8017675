/*
 * handoff_frame.c
 *		Encodes and decodes the messages between HTTP workers and executors.
 *
 * Both ends run the same library build on the same machine, so integers go
 * in network byte order only for readability of captures; strings are a
 * 4-byte length and their bytes.  Decoding trusts nothing: parse/frame_decode.c
 * checks every length against what is left, and this file copies what it
 * accepted.
 */
#include "postgres.h"

#include <arpa/inet.h>

#include "port/pg_bitutils.h"
#include "utils/memutils.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exec/handoff_frame.h"
#include "message/response.h"
#include "parse/frame_decode.h"
#include "serve/pipeline_phases.h"

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

/*
 * Fills in the length of the frame started at at, whose last trailing
 * bytes are not in buf: the caller writes them after it.
 */
static void
end_frame(StringInfo buf, int at, size_t trailing)
{
	uint32		n = htonl((uint32) (buf->len - at - FRAME_HEADER_SIZE + trailing));

	memcpy(buf->data + at, &n, 4);
}

/* The bytes a length-prefixed string of len takes in a frame. */
#define STR_SIZE(len) (4 + (uint64) (len))

/* The most bytes a REQUEST frame's module states take: a count, then sections. */
#define MODULE_STATES_MAX_SIZE (1 + PHASE_MODULE_COUNT * (1 + STR_SIZE(PHASE_STATE_WIRE_MAX)))

/*
 * The size of req's REQUEST frame, header included, counted in 64 bits:
 * the caller makes sure it can hold the frame before writing it.
 */
uint64
frame_request_size(h2o_req_t *req)
{
	uint64		size = FRAME_HEADER_SIZE + 8 + 8 + 1 + MODULE_STATES_MAX_SIZE + 1 +
		STR_SIZE(req->authority.len) + STR_SIZE(req->method.len) +
		STR_SIZE(req->path.len) + 8 + 4 + 1 +
		STR_SIZE(req->entity.base != NULL ? req->entity.len : 0);

	for (size_t i = 0; i < req->headers.size; i++)
		size += STR_SIZE(req->headers.entries[i].name->len) +
			STR_SIZE(req->headers.entries[i].value.len);
	return size;
}

/*
 * Appends the begun module states of st: their count, then for each, by
 * increasing id, the id and what its module's state_encode writes as a
 * length-prefixed string.  Nothing but the count while none began.
 */
static void
put_module_states(StringInfo buf, const PhaseStates *st)
{
	appendStringInfoChar(buf, (char) pg_popcount32(st->begun));
	for (uint32 left = st->begun; left != 0; left &= left - 1)
	{
		int			id = pg_rightmost_one_pos32(left);
		int			at;
		uint32		n;

		appendStringInfoChar(buf, (char) id);
		at = buf->len;
		put_u32(buf, 0);
		pipeline_state_encode(buf, st, (PhaseModuleId) id);
		n = htonl((uint32) (buf->len - at - 4));
		memcpy(buf->data + at, &n, 4);
	}
}

/*
 * Appends a REQUEST frame for req to buf, all but its body's bytes: those
 * follow on the socket from where libh2o holds them (req->entity).
 */
void
frame_put_request_head(StringInfo buf, h2o_req_t *req, const HandoffMeta *meta)
{
	size_t		bodylen = req->entity.base != NULL ? req->entity.len : 0;
	int			at = begin_frame(buf, FRAME_REQUEST);

	put_u64(buf, (uint64) meta->head_at);
	put_u64(buf, (uint64) meta->route_id);
	appendStringInfoChar(buf, meta->rerun ? 1 : 0);
	put_module_states(buf, &meta->states);
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
	/* The body's length prefix ends the head; its bytes end the frame. */
	put_u32(buf, (uint32) bodylen);
	end_frame(buf, at, bodylen);
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
	end_frame(buf, at, 0);
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

	end_frame(buf, at, 0);
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
		end_frame(buf, at, 0);
	}
	frame_put_end(buf);
}

/* ---- reading ---- */

StaticAssertDecl(FRAME_DECODE_STATUS_MIN == HTTP_STATUS_MIN &&
				 FRAME_DECODE_STATUS_MAX == HTTP_STATUS_MAX &&
				 FRAME_DECODE_ROLE_MAX == NAMEDATALEN &&
				 FRAME_DECODE_LENGTH_UNKNOWN == FRAME_LENGTH_UNKNOWN &&
				 FRAME_MAX_MODULE_STATES >= PHASE_MODULE_COUNT &&
				 FRAME_MODULE_STATE_MAX == PHASE_STATE_WIRE_MAX,
				 "parse/frame_decode.h agrees with the server's limits");

/* A decoded string copied into pool, NUL-terminated for convenience. */
static h2o_iovec_t
copy_str(FrameString s, h2o_mem_pool_t *pool)
{
	h2o_iovec_t v;

	v.base = h2o_mem_alloc_pool(pool, s.len + 1);
	memcpy(v.base, s.base, s.len);
	v.base[s.len] = '\0';
	v.len = s.len;
	return v;
}

/* Adds the n headers r holds (a decode checked them) to headers. */
static void
copy_headers(FrameReader *r, uint32 n, h2o_mem_pool_t *pool, h2o_headers_t *headers)
{
	for (uint32 i = 0; i < n; i++)
	{
		FrameString name;
		FrameString value;
		h2o_iovec_t n_copy;
		h2o_iovec_t v_copy;

		frame_decode_header(r, &name, &value);
		n_copy = copy_str(name, pool);
		v_copy = copy_str(value, pool);
		h2o_add_header_by_str(pool, headers, n_copy.base, n_copy.len, 1,
							  NULL, v_copy.base, v_copy.len);
	}
}

/* Reads a frame header. */
void
frame_get_header(const char *data, uint32 *len, char *type)
{
	frame_decode_frame_header(data, len, type);
}

/*
 * Makes the body that ends a REQUEST payload a bytea where it lies, its
 * 4-byte length prefix becoming the varlena header: so the executor holds
 * a body once, not again for the request and again for the handler's body
 * column.  A varlena with a 4-byte header is aligned as an int; when the
 * prefix is not, the body moves down by up to 3 bytes, over the end of the
 * headers before it, which the caller has copied already.  data is
 * MAXALIGNed (palloc), so the header never lands before it.
 */
static bytea *
body_in_place(char *data, FrameString s)
{
	char	   *prefix = (char *) s.base - VARHDRSZ;
	bytea	   *b = (bytea *) TYPEALIGN_DOWN(ALIGNOF_INT, prefix);

	Assert(prefix >= data && (char *) b >= data);
	if ((char *) b != prefix)
		memmove(VARDATA(b), s.base, s.len);
	SET_VARSIZE(b, VARHDRSZ + s.len);
	return b;
}

/* Fills a zeroed h2o request from a REQUEST payload; the body stays in data. */
bool
frame_get_request(char *data, size_t len, h2o_req_t *req, HandoffMeta *meta, bytea **body)
{
	FrameRequest fr;

	*body = NULL;
	if (!frame_decode_request(data, len, PHASE_MODULE_COUNT, &fr))
		return false;
	meta->head_at = (TimestampTz) fr.head_at;
	meta->route_id = (int64) fr.route_id;
	meta->rerun = fr.rerun;
	/* Each module reads its own state's bytes, and may refuse them. */
	meta->states.begun = 0;
	for (int i = 0; i < fr.nstates; i++)
		if (!pipeline_state_decode(&meta->states, fr.states[i].module,
								   fr.states[i].bytes.base, fr.states[i].bytes.len))
			return false;
	/* Whether the client's connection is TLS (the request relation's tls). */
	req->scheme = fr.tls ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP;
	/* The host the client named: the CSRF rule's own origin (serve/auth.c). */
	req->authority = copy_str(fr.authority, &req->pool);
	req->method = copy_str(fr.method, &req->pool);
	req->path = copy_str(fr.path, &req->pool);
	req->query_at = (fr.query_at == PG_UINT64_MAX) ? SIZE_MAX : (size_t) fr.query_at;
	copy_headers(&fr.headers, fr.nheaders, &req->pool, &req->headers);
	/* Last: the body may move over the end of the headers just copied. */
	if (fr.has_body)
	{
		*body = body_in_place(data, fr.body);
		req->entity = h2o_iovec_init(VARDATA(*body), fr.body.len);
	}
	return true;
}

/*
 * Sets req->res from a HEAD payload, copying into req's pool.  A known
 * content length is at most what one BODY frame carries, which is how the
 * executor sends a body it knows the length of: the worker then never
 * reserves more for a body than an executor can send it.
 */
bool
frame_get_head(const char *data, size_t len, h2o_req_t *req, HandoffAnswerMeta *meta)
{
	FrameHead	fh;

	if (!frame_decode_head(data, len, FRAME_MAX_PAYLOAD,
						   H2O_COMPRESS_HINT_AUTO, H2O_COMPRESS_HINT_DISABLE, &fh))
		return false;
	copy_headers(&fh.headers, fh.nheaders, &req->pool, &req->res.headers);
	req->res.status = (int) fh.status;
	req->compress_hint = (char) fh.compress_hint;
	meta->role = fh.role.len > 0 ? copy_str(fh.role, &req->pool).base : NULL;
	meta->plan_us = (int64) fh.plan_us;
	req->res.content_length = (fh.content_length == FRAME_LENGTH_UNKNOWN) ?
		SIZE_MAX : (size_t) fh.content_length;
	return true;
}
