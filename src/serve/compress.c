/*
 * compress.c
 *		Which responses are gzipped, and the filter that gzips them.
 *
 * The compressing is libh2o 2.2.5's (h2o_compress_gzip_open): it gzips
 * chunk by chunk and flushes (Z_SYNC_FLUSH) at the end of every
 * h2o_send(), so a streamed export compresses batch by batch as it is
 * written and a slow reader holds the query, not memory.  Its filter
 * (h2o_compress_register) is not used, because of how it decides, which
 * this filter does instead, in the same place of the response:
 *
 *	- libh2o's filter reads Accept-Encoding without q-values: an element
 *	  with any parameter ("gzip;q=1.0") does not count as gzip at all.
 *	  parse/accept_encoding.c reads them (RFC 9110 12.5.3);
 *	- its switch and size threshold are fixed when it is registered;
 *	  here webgres.compress puts the filter on the path's list or takes it
 *	  off (http/response_phases.c), and webgres.compress_min_size is read
 *	  per response, so a reload changes both;
 *	- its compressible types are its MIME map's, in which NDJSON and CSV
 *	  exports are not compressible and event streams (text/...) would be;
 *	- it sets Vary only when the client named gzip; here every response
 *	  that could be compressed gets Vary: Accept-Encoding, so that a cache
 *	  never gives a gzipped answer to a client that did not ask for one;
 *	- it keeps a strong ETag on the gzipped body; RFC 9110 8.8.3 wants the
 *	  two representations told apart, so it is made weak here;
 *	- a route can opt out (the routes' compress column), and a response to
 *	  a request with credentials (Authorization, Cookie) is compressed only
 *	  where its route opted in (compress = true), against BREACH;
 *	  static files, the same for every client, are compressed whoever asks.
 *
 * Like libh2o's filter it leaves alone HEAD, HTTP/1.0, any status other
 * than 200 (so 206 and 304) and a response that has Content-Encoding.
 */
#include "postgres.h"

#include "utils/guc.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "parse/accept_encoding.h"
#include "serve/compress.h"
#include "serve/phase.h"

/* webgres.compress_min_size's default, in bytes. */
#define COMPRESS_MIN_SIZE_DEFAULT 1024

/* webgres.compress and webgres.compress_min_size (compress_define_settings). */
static bool webgres_compress = false;
static int	webgres_compress_min_size = COMPRESS_MIN_SIZE_DEFAULT;

/*
 * gzip level: 1, as h2o itself defaults to for on-the-fly compression.
 * Higher levels cost several times the CPU of the event loop for a few
 * percent fewer bytes; precompressed static files (.gz siblings) are the
 * place for the best compression.
 */
#define COMPRESS_GZIP_QUALITY 1

/* libh2o's gzip compressor works in buffers of this size (gzip.c). */
#define COMPRESS_CHUNK_SIZE 8192

/* One gzipped response's place in the output chain. */
typedef struct GzipStream
{
	h2o_ostream_t super;
	h2o_compress_context_t *compressor;
} GzipStream;

/* Whether [s, s + len) equals the lower-case word w, ignoring case. */
static bool
equals_lower(const char *s, size_t len, const char *w)
{
	return strlen(w) == len && pg_strncasecmp(s, w, len) == 0;
}

/* Whether [s, s + len) ends with the lower-case suffix w, ignoring case. */
static bool
ends_with_lower(const char *s, size_t len, const char *w)
{
	size_t		wlen = strlen(w);

	return len >= wlen && pg_strncasecmp(s + len - wlen, w, wlen) == 0;
}

/*
 * Text, JSON, XML, JavaScript, CSV, NDJSON, SVG and WebAssembly; not event
 * streams (each event must reach the client as it is sent, and gzip would
 * hold them back and cost every open stream a compressor), and not the
 * image, audio, video and archive types that are compressed already.
 */
bool
compress_type_is_compressible(const char *type, size_t len)
{
	size_t		end = 0;

	while (end < len && type[end] != ';' && type[end] != ' ' && type[end] != '\t')
		end++;
	if (equals_lower(type, end, "text/event-stream"))
		return false;
	if (end > 5 && pg_strncasecmp(type, "text/", 5) == 0)
		return true;
	return equals_lower(type, end, "application/json") ||
		equals_lower(type, end, "application/x-ndjson") ||
		equals_lower(type, end, "application/javascript") ||
		equals_lower(type, end, "application/ecmascript") ||
		equals_lower(type, end, "application/xml") ||
		equals_lower(type, end, "application/wasm") ||
		equals_lower(type, end, "image/svg+xml") ||
		ends_with_lower(type, end, "+json") ||
		ends_with_lower(type, end, "+xml");
}

/* The client's verdict on gzip over all its Accept-Encoding fields. */
static bool
client_takes_gzip(h2o_req_t *req)
{
	bool		yes = false;
	ssize_t		i = -1;

	while ((i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT_ENCODING, i)) != -1)
	{
		h2o_iovec_t v = req->headers.entries[i].value;

		switch (accept_encoding_gzip(v.base, v.len))
		{
			case ACCEPT_GZIP_NO:
				return false;
			case ACCEPT_GZIP_YES:
				yes = true;
				break;
			case ACCEPT_GZIP_UNSAID:
				break;
		}
	}
	return yes;
}

/* Whether this response may be compressed, whoever the client. */
static bool
response_is_candidate(h2o_req_t *req)
{
	ssize_t		ct;

	if (req->res.status != 200)
		return false;
	if (h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_ENCODING, -1) != -1)
		return false;
	if (req->res.content_length != SIZE_MAX &&
		req->res.content_length < (size_t) webgres_compress_min_size)
		return false;
	ct = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
	if (ct == -1)
		return false;
	return compress_type_is_compressible(req->res.headers.entries[ct].value.base,
										 req->res.headers.entries[ct].value.len);
}

/* Turns a strong ETag of the response into a weak one. */
static void
weaken_etag(h2o_req_t *req)
{
	ssize_t		i = h2o_find_header(&req->res.headers, H2O_TOKEN_ETAG, -1);
	h2o_iovec_t *v;

	if (i == -1)
		return;
	v = &req->res.headers.entries[i].value;
	if (v->len > 0 && v->base[0] == '"')
		*v = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("W/")), *v);
}

/* Whether to gzip this response for this client; adds Vary if it could. */
static bool
decide(h2o_req_t *req)
{
	if (!webgres_compress || req->compress_hint == H2O_COMPRESS_HINT_DISABLE ||
		!response_is_candidate(req))
		return false;
	/* HEAD too: its headers are the GET's. */
	h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY,
						 H2O_STRLIT("accept-encoding"));
	return req->version >= 0x101 &&
		!h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")) &&
		client_takes_gzip(req);
}

/* Passes what the generator sends through the compressor. */
static void
gzip_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *inbufs, size_t inbufcnt,
		  h2o_send_state_t state)
{
	GzipStream *stream = (GzipStream *) self;
	h2o_iovec_t *outbufs;
	size_t		outbufcnt;

	stream->compressor->transform(stream->compressor, inbufs, inbufcnt, state,
								  &outbufs, &outbufcnt);
	h2o_ostream_send_next(&stream->super, req, outbufs, outbufcnt, state);
}

/* Sets a response up to be gzipped: its headers, and the compressor in the chain. */
static h2o_ostream_t **
start_gzip(h2o_req_t *req, h2o_ostream_t **slot)
{
	GzipStream *stream;
	ssize_t		ranges;

	req->res.content_length = SIZE_MAX;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL,
				   H2O_STRLIT("gzip"));
	/* Byte ranges of the gzipped body are not offered. */
	ranges = h2o_find_header(&req->res.headers, H2O_TOKEN_ACCEPT_RANGES, -1);
	if (ranges != -1)
		req->res.headers.entries[ranges].value = h2o_iovec_init(H2O_STRLIT("none"));
	weaken_etag(req);

	stream = (GzipStream *) h2o_add_ostream(req, sizeof(GzipStream), slot);
	stream->super.do_send = gzip_send;
	stream->compressor = h2o_compress_gzip_open(&req->pool, COMPRESS_GZIP_QUALITY);
	/* Compress in pieces of the compressor's buffer size, as libh2o does. */
	if (req->preferred_chunk_size > COMPRESS_CHUNK_SIZE)
		req->preferred_chunk_size = COMPRESS_CHUNK_SIZE;
	return &stream->super.next;
}

/* The filter: decides per response, then hands on down the chain. */
static void
on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
	if (decide(req))
		slot = start_gzip(req, slot);
	h2o_setup_next_ostream(req, slot);
}

/* Whether the filter is on the path's list: webgres.compress. */
static bool
compress_enabled(void)
{
	return webgres_compress;
}

/* The module: a filter on the path that serves routes (http/response_phase_list.h). */
const FilterModule compress_filter = {
	"compress", compress_enabled, false, on_setup_ostream
};

/*
 * Whether req carries credentials a browser sends by itself or a client
 * names the user with: a Cookie or an Authorization header.
 */
static bool
carries_credentials(h2o_req_t *req)
{
	return h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1) != -1 ||
		h2o_find_header(&req->headers, H2O_TOKEN_COOKIE, -1) != -1;
}

/*
 * Records whether the answering route lets its response be compressed.  A
 * response to a credentialed request is the one that may hold a secret
 * (a token, a CSRF token, a user's data) next to what the page reflects of
 * the request; compressed, its length would tell an attacker who can make
 * the victim's browser send requests (BREACH) the secret byte by byte.  So
 * such a response is compressed only where the route opted in.
 */
void
compress_for_route(h2o_req_t *req, RouteCompress mode)
{
	bool		allowed;

	if (!webgres_compress || mode == ROUTE_COMPRESS_NEVER)
		allowed = false;
	else if (mode == ROUTE_COMPRESS_ALWAYS)
		allowed = true;
	else
		allowed = !carries_credentials(req);
	req->compress_hint = allowed ? H2O_COMPRESS_HINT_AUTO : H2O_COMPRESS_HINT_DISABLE;
}

/* Defines webgres.compress and webgres.compress_min_size; from _PG_init. */
void
compress_define_settings(void)
{
	DefineCustomBoolVariable("webgres.compress",
							 "Compresses responses with gzip for clients that accept it.",
							 "Applies to responses of a compressible content type (text, JSON, "
							 "XML, JavaScript, CSV) of at least webgres.compress_min_size bytes, "
							 "streamed ones included, from routes whose compress column is not "
							 "false and from static files; to requests with credentials only "
							 "where the column is true. Never to HEAD, 206 or event streams.",
							 &webgres_compress,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.compress_min_size",
							"Smallest response body that is compressed.",
							"Smaller responses go out as they are: compressing them saves "
							"too little to pay for itself. A streamed response, whose size "
							"is not known in advance, is always compressed.",
							&webgres_compress_min_size,
							COMPRESS_MIN_SIZE_DEFAULT,
							0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}
