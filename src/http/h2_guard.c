/*
 * h2_guard.c
 *		Cleartext HTTP/2 (h2c) behind webgres.http2, screened by h2_screen.
 *
 * libh2o 2.2.5 parses HTTP/2 in static functions that webgres cannot call
 * or replace.  What it can do is stand between the socket and h2o's HTTP/2
 * read callback: h2o reads a chunk into sock->input and calls
 * sock->_cb.read, which parses the chunk frame by frame and runs each
 * request inline while the frames after it are still unparsed.  webgres
 * swaps that callback for its own, which hands each new chunk to
 * h2_screen_feed() first; the screening learns which streams the chunk
 * resets before h2o runs their requests, and a connection that overspends
 * a budget is ended before h2o sees the chunk.
 *
 * h2o's HTTP/2 connection sets its read callback when it starts
 * (h2o_http2_accept), after an Upgrade (never, here), and, in Debian's
 * build with the 2019 fixes (as in h2o 2.2.6), when it resumes reading:
 * h2o_http2_conn_request_write() stops reading while 512 kB
 * (H2O_HTTP2_DEFAULT_OUTBUF_SOFT_MAX_SIZE) or more of output wait, and
 * h2o's static on_write_complete() starts it again, with its own read
 * callback, once a write has brought them below.  That completion runs
 * only as the socket's write callback (sock->_cb.write), so webgres stands
 * in front of that callback too, and puts the screening back the moment
 * h2o's completion returns, in the same call, before the event loop can
 * deliver another read.  h2o starts the writes of an HTTP/2 connection in
 * three places only: at the end of its read callback (run by h2_read), in
 * a write completion, and from the connection's write timer entry
 * (conn->_write.timeout_entry, whose callback h2o sets once); webgres
 * wraps the write callback h2o has set after each, so every completion of
 * every write passes through it, however many writes reading takes to
 * restart.  The other ways were worse: the event loop delivers reads from
 * a static function straight to sock->_cb.read, and a sweep of all
 * connections, periodic or after each pass of the loop, costs a delay or
 * work for every idle connection; this costs one call per write.
 *
 * h2o's HTTP/2 starts inside its HTTP/1 code, which on seeing the
 * prior-knowledge preface hands the socket over and parses whatever
 * followed the preface at once.  So h2o's own switch to HTTP/2 is kept
 * off (http1.upgrade_to_http2 = 0), and webgres watches the first bytes of
 * each connection itself: on a preface it lets h2o switch, for that one
 * call, with only the preface in the buffer, then installs its callbacks
 * and feeds the rest through h2_read.  An HTTP/1.1 request with "Upgrade:
 * h2c" is served as HTTP/1.1: RFC 9113 deprecates that upgrade.
 *
 * Over TLS, ALPN chooses HTTP/2 and h2o's accept would start its HTTP/2
 * connection and parse at once; tls.c ends the handshake itself and calls
 * h2_guard_accepted_tls(), which starts h2o's connection with an empty
 * buffer, waits for the preface as first_read does, lets h2o read the
 * preface alone, and puts the same screening in front.
 *
 * The screening state of a connection hangs off its socket's on_close
 * hook, which h2o leaves unused for server connections and which frees it.
 */
#include "postgres.h"

#include <sys/socket.h>

#include "utils/guc.h"
#include "utils/memutils.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/http2.h>
#include <h2o/http2_internal.h>

#include "http/h2_guard.h"
#include "parse/h2_screen.h"
#include "message/response.h"
#include "message/response_abort.h"

/* webgres.http2_max_resets: its default and most. */
#define H2_MAX_RESETS_DEFAULT 100
#define H2_MAX_RESETS_MAX 1000

/* webgres.http2 and webgres.http2_max_resets (h2_guard_define_settings). */
static bool webgres_http2 = false;
static int	webgres_http2_max_resets = H2_MAX_RESETS_DEFAULT;

/* RFC 9113 section 3.4: the client connection preface. */
static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof(preface) - 1)

/* RFC 7541 section 4.1: what each header field costs beyond its octets. */
#define HEADER_FIELD_OVERHEAD 32

typedef struct H2Guard
{
	H2Screen	screen;
	size_t		seen;			/* bytes at the start of sock->input already fed */
	bool		ending;			/* GOAWAY sent: the connection is being closed */
	bool		resync;			/* h2o read without the screening: start afresh */
	h2o_socket_cb h2o_write_done;	/* h2o's callback for the write in flight */
	void		(*prev_close) (void *);	/* the socket's on_close hook before ours */
	void	   *prev_close_data;
} H2Guard;

static h2o_context_t *guarded;
static MemoryContext guard_cxt;

/* h2o's callbacks, learnt from the first sockets and connections they are set on. */
static h2o_socket_cb http1_on_read;
static h2o_socket_cb http2_on_read;
static h2o_timeout_cb http2_emit_write;	/* conn->_write.timeout_entry's */

static void h2_read(h2o_socket_t *sock, const char *err);
static void stay_in_front(h2o_socket_t *sock, H2Guard *g);

/* Sets up the HTTP/2 guard; once per worker, after h2o_context_init. */
void
h2_guard_init(h2o_context_t *ctx)
{
	guarded = ctx;
	ctx->globalconf->http1.upgrade_to_http2 = 0;
	guard_cxt = AllocSetContextCreate(TopMemoryContext, "webgres http2",
									  ALLOCSET_SMALL_SIZES);
}

/* Frees a connection's screening state when h2o closes its socket. */
static void
guard_closed(void *data)
{
	H2Guard    *g = (H2Guard *) data;
	void		(*prev_close) (void *) = g->prev_close;
	void	   *prev_close_data = g->prev_close_data;

	pfree(g);
	/* The hook that was there first (capacity.c counts connections with it). */
	if (prev_close != NULL)
		prev_close(prev_close_data);
}

/* The screening state of a socket webgres switched to HTTP/2, or NULL. */
static H2Guard *
guard_of(h2o_socket_t *sock)
{
	if (sock == NULL || sock->on_close.cb != guard_closed)
		return NULL;
	return (H2Guard *) sock->on_close.data;
}

/*
 * Queues GOAWAY (ENHANCE_YOUR_CALM) and stops h2o from opening streams, as
 * h2o does for its own connection errors.
 */
static void
send_goaway(h2o_http2_conn_t *conn, H2Guard *g, H2Verdict verdict)
{
	const char *why = h2_screen_reason(verdict);

	if (g->ending || conn->state >= H2O_HTTP2_CONN_STATE_IS_CLOSING)
		return;
	g->ending = true;
	ereport(LOG,
			(errmsg("webgres ended an HTTP/2 connection: %s", why),
			 errdetail("The client sent %llu frames, %llu of them RST_STREAM and %llu control frames.",
					   (unsigned long long) g->screen.frames,
					   (unsigned long long) g->screen.reset_frames,
					   (unsigned long long) g->screen.control_frames)));
	h2o_http2_encode_goaway_frame(&conn->_write.buf, conn->pull_stream_ids.max_open,
								  H2O_HTTP2_ERROR_ENHANCE_YOUR_CALM,
								  h2o_iovec_init(why, strlen(why)));
	h2o_http2_conn_request_write(conn);
	conn->state = H2O_HTTP2_CONN_STATE_HALF_CLOSED;
}

/*
 * Ends a connection from its read callback: GOAWAY, unread input dropped,
 * and h2o told the peer is gone, so that it closes once the GOAWAY is
 * written.  The socket and g may be freed on return.
 */
static void
end_connection(h2o_socket_t *sock, H2Guard *g, H2Verdict verdict)
{
	send_goaway((h2o_http2_conn_t *) sock->data, g, verdict);
	h2o_buffer_consume(&sock->input, sock->input->size);
	g->seen = 0;
	http2_on_read(sock, h2o_socket_error_closed);
}

/* The read callback of a screened HTTP/2 connection. */
static void
h2_read(h2o_socket_t *sock, const char *err)
{
	H2Guard    *g = guard_of(sock);

	if (err != NULL || g == NULL)
	{
		http2_on_read(sock, err);
		return;
	}
	if (g->resync)
	{
		/* h2o's input starts at a frame: feed it all again from there. */
		h2_screen_resync(&g->screen);
		g->seen = 0;
		g->resync = false;
	}
	if (g->ending)
	{
		/* Whatever arrives after GOAWAY is not read. */
		h2o_buffer_consume(&sock->input, sock->input->size);
		g->seen = 0;
		return;
	}
	if (sock->input->size > g->seen &&
		h2_screen_feed(&g->screen, (const uint8_t *) sock->input->bytes + g->seen,
					   sock->input->size - g->seen) != H2_OK)
	{
		end_connection(sock, g, g->screen.verdict);
		return;
	}

	http2_on_read(sock, NULL);

	/* A closed socket's memory lasts until the loop comes round; g does not. */
	if (h2o_socket_get_fd(sock) == -1 || sock->input == NULL)
		return;
	h2_screen_processed(&g->screen);
	g->seen = sock->input->size;
	/* h2o writes at the end of its read callback what the chunk called for. */
	stay_in_front(sock, g);
	/* A request's header list may have overspent a budget meanwhile. */
	if (g->screen.verdict != H2_OK)
		end_connection(sock, g, g->screen.verdict);
}

/*
 * Puts the screening back in front of h2o's read callback if h2o has just
 * set its own again, from its write completion.  Nothing can have been read
 * since h2_read last ran, so the screening goes on where it was; should the
 * input have changed all the same, it starts afresh at h2o's next frame.
 */
static void
keep_screened(h2o_socket_t *sock, H2Guard *g)
{
	if (sock->_cb.read != http2_on_read)
		return;
	sock->_cb.read = h2_read;
	if (sock->input->size != g->seen)
		g->resync = true;
}

/*
 * The write callback of a screened connection: runs h2o's own, which may
 * restart reading, then stands in front of what it left behind.
 */
static void
write_done(h2o_socket_t *sock, const char *err)
{
	H2Guard    *g = guard_of(sock);
	h2o_socket_cb cb;

	Assert(g != NULL && g->h2o_write_done != NULL);
	cb = g->h2o_write_done;
	g->h2o_write_done = NULL;
	cb(sock, err);
	/* h2o may have closed the connection, and g with it. */
	if (h2o_socket_get_fd(sock) == -1)
		return;
	stay_in_front(sock, g);
}

/*
 * The callback of a screened connection's write timer entry, which h2o
 * links when it has output and no write in flight: runs h2o's own, which
 * starts the write, then wraps the write's callback.
 */
static void
emit_write(h2o_timeout_entry_t *entry)
{
	h2o_http2_conn_t *conn = H2O_STRUCT_FROM_MEMBER(h2o_http2_conn_t, _write.timeout_entry, entry);
	h2o_socket_t *sock = conn->sock;
	H2Guard    *g;

	http2_emit_write(entry);
	/* conn is freed if h2o closed the connection; the socket lasts the pass. */
	if (h2o_socket_get_fd(sock) == -1 || (g = guard_of(sock)) == NULL)
		return;
	stay_in_front(sock, g);
}

/*
 * After h2o has run on a screened connection: puts the screening back if h2o
 * restarted reading, and wraps the callback of any write h2o has started,
 * so that its completion, where h2o restarts reading, runs through
 * write_done().
 */
static void
stay_in_front(h2o_socket_t *sock, H2Guard *g)
{
	keep_screened(sock, g);
	if (sock->_cb.write != NULL && sock->_cb.write != write_done)
	{
		g->h2o_write_done = sock->_cb.write;
		sock->_cb.write = write_done;
	}
}

/*
 * True if h2o has switched sock to HTTP/2 with the callbacks webgres stands
 * in front of (those it met on the first connection switched, if any).
 */
static bool
switched_as_expected(h2o_socket_t *sock)
{
	h2o_http2_conn_t *conn;

	if (sock->_cb.read == NULL || sock->_cb.read == http1_on_read ||
		(http2_on_read != NULL && sock->_cb.read != http2_on_read))
		return false;
	conn = (h2o_http2_conn_t *) sock->data;
	if (conn == NULL || conn->sock != sock || conn->_write.timeout_entry.cb == NULL ||
		(http2_emit_write != NULL && conn->_write.timeout_entry.cb != http2_emit_write))
		return false;
	return true;
}

/*
 * After h2o switched sock to HTTP/2: notes the read and write callbacks the
 * screening stands in front of.  False if the switch is not the one this
 * libh2o makes, which cannot be screened: the connection is then ended and
 * stash freed.
 */
static bool
take_over_http2(h2o_socket_t *sock, char *stash)
{
	if (!switched_as_expected(sock))
	{
		ereport(WARNING,
				(errmsg("webgres could not screen an HTTP/2 connection with this libh2o build")));
		pfree(stash);
		response_abort_reset_on_close(h2o_socket_get_fd(sock));
		shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
		return false;
	}
	http2_on_read = sock->_cb.read;
	http2_emit_write = ((h2o_http2_conn_t *) sock->data)->_write.timeout_entry.cb;
	return true;
}

/*
 * Puts the n bytes of stash back at the end of sock's input for h2o's
 * HTTP/2 to read, and frees stash.  False if there was no room: the
 * connection was then failed for want of memory.
 */
static bool
unstash(h2o_socket_t *sock, char *stash, size_t n)
{
	if (n > 0)
	{
		h2o_iovec_t room = h2o_buffer_reserve(&sock->input, n);

		if (room.base == NULL)
		{
			pfree(stash);
			http2_on_read(sock, h2o_socket_error_out_of_memory);
			return false;
		}
		memcpy(room.base, stash, n);
		sock->input->size += n;
	}
	pfree(stash);
	return true;
}

/*
 * Puts the screening in front of h2o's HTTP/2 read and write callbacks of
 * a connection h2o has just switched to HTTP/2 with only the preface in
 * its buffer, and feeds it the rest bytes of stash that followed the
 * preface.  Takes stash (allocated in guard_cxt).
 */
static void
attach_guard(h2o_socket_t *sock, char *stash, size_t rest)
{
	H2Guard    *g;
	h2o_http2_conn_t *conn;

	if (h2o_socket_get_fd(sock) == -1)
	{
		pfree(stash);
		return;
	}
	if (!take_over_http2(sock, stash))
		return;
	conn = (h2o_http2_conn_t *) sock->data;

	g = MemoryContextAllocZero(guard_cxt, sizeof(H2Guard));
	h2_screen_init(&g->screen, webgres_http2_max_resets);
	g->prev_close = sock->on_close.cb;
	g->prev_close_data = sock->on_close.data;
	sock->on_close.cb = guard_closed;
	sock->on_close.data = g;
	sock->_cb.read = h2_read;
	g->seen = sock->input->size;	/* nothing: h2o consumed the preface */
	/* h2o sets this callback once, when it creates the connection. */
	conn->_write.timeout_entry.cb = emit_write;
	/* Its SETTINGS frame may be on its way already. */
	stay_in_front(sock, g);

	if (!unstash(sock, stash, rest))
		return;
	if (rest > 0)
		h2_read(sock, NULL);
}

/* Sets aside what follows the preface in sock's input; returns its length. */
static size_t
stash_after_preface(h2o_socket_t *sock, char **stash)
{
	size_t		rest = sock->input->size - PREFACE_LEN;

	*stash = MemoryContextAlloc(guard_cxt, Max(rest, 1));
	memcpy(*stash, sock->input->bytes + PREFACE_LEN, rest);
	sock->input->size = PREFACE_LEN;
	return rest;
}

/*
 * Lets h2o's HTTP/1 code switch the connection to HTTP/2 with only the
 * preface in its buffer, then puts the screening in front.
 */
static void
start_http2(h2o_socket_t *sock)
{
	char	   *stash;
	size_t		rest = stash_after_preface(sock, &stash);

	guarded->globalconf->http1.upgrade_to_http2 = 1;
	http1_on_read(sock, NULL);
	guarded->globalconf->http1.upgrade_to_http2 = 0;
	attach_guard(sock, stash, rest);
}

/*
 * The read callback of a new connection while webgres.http2 is on: waits
 * until the first bytes show whether they are the HTTP/2 preface, then
 * gives the connection back to h2o's HTTP/1 code or starts HTTP/2.
 */
static void
first_read(h2o_socket_t *sock, const char *err)
{
	h2o_buffer_t *in = sock->input;

	if (err == NULL && in->size < PREFACE_LEN &&
		(in->size == 0 || memcmp(in->bytes, preface, in->size) == 0))
		return;					/* maybe a preface: wait for the rest */

	sock->_cb.read = http1_on_read;
	if (err == NULL && in->size >= PREFACE_LEN && memcmp(in->bytes, preface, PREFACE_LEN) == 0)
		start_http2(sock);
	else
		http1_on_read(sock, err);
}

/* Starts guarding a connection h2o just accepted. */
void
h2_guard_accepted(h2o_socket_t *sock)
{
	if (!webgres_http2 || sock->_cb.read == NULL)
		return;
	if (http1_on_read == NULL)
		http1_on_read = sock->_cb.read;
	else if (sock->_cb.read != http1_on_read)
		return;
	sock->_cb.read = first_read;
}

/*
 * The read callback of an HTTP/2 connection negotiated by ALPN, until its
 * preface is in: h2o's own connection reads the preface alone, as after
 * the h2c switch, and the screening then takes what followed.  A client
 * that sends something else is left to h2o, which closes the connection.
 */
static void
tls_first_read(h2o_socket_t *sock, const char *err)
{
	h2o_buffer_t *in = sock->input;
	char	   *stash;
	size_t		rest;

	if (err == NULL && in->size < PREFACE_LEN &&
		(in->size == 0 || memcmp(in->bytes, preface, in->size) == 0))
		return;					/* maybe a preface: wait for the rest */

	sock->_cb.read = http2_on_read;
	if (err != NULL || in->size < PREFACE_LEN || memcmp(in->bytes, preface, PREFACE_LEN) != 0)
	{
		http2_on_read(sock, err);
		return;
	}
	rest = stash_after_preface(sock, &stash);
	http2_on_read(sock, NULL);
	attach_guard(sock, stash, rest);
}

/* Starts h2o's HTTP/2, screened as h2c, on a TLS connection that chose "h2". */
void
h2_guard_accepted_tls(h2o_accept_ctx_t *actx, h2o_socket_t *sock, struct timeval connected_at)
{
	size_t		held = sock->input->size;
	char	   *stash = MemoryContextAlloc(guard_cxt, Max(held, 1));

	/* h2o would parse at once what it finds in the buffer: none yet. */
	memcpy(stash, sock->input->bytes, held);
	sock->input->size = 0;
	h2o_http2_accept(actx, sock, connected_at);
	if (!take_over_http2(sock, stash))
		return;
	sock->_cb.read = tls_first_read;

	if (!unstash(sock, stash, held))
		return;
	if (held > 0)
		tls_first_read(sock, NULL);
}

/* The decoded size of a request's header list, as RFC 7541 counts it. */
static size_t
header_list_size(h2o_req_t *req)
{
	/* :method, :scheme, :authority and :path, each with its name */
	size_t		size = 4 * HEADER_FIELD_OVERHEAD + sizeof(":method:scheme:authority:path") - 1 +
		req->input.method.len + req->input.authority.len + req->input.path.len +
		(req->input.scheme ? req->input.scheme->name.len : 0);

	for (size_t i = 0; i < req->headers.size; i++)
		size += req->headers.entries[i].name->len + req->headers.entries[i].value.len +
			HEADER_FIELD_OVERHEAD;
	return size;
}

/*
 * Screens a decoded request by the rules of the HTTP/1 screen: its
 * :method, :path and :authority, then each field.  False with the refusal
 * in res.
 */
static bool
screen_decoded(h2o_req_t *req, ScreenResult *res)
{
	/*
	 * A request without :authority has been given the host's own name by
	 * h2o (h2o_req_setup): the very same bytes, where a client's is a copy.
	 */
	bool		no_authority = req->hostconf != NULL &&
		req->input.authority.base == req->hostconf->authority.hostport.base;

	if (!h2_screen_request(req->input.method.base, req->input.method.len,
						   req->input.path.base, req->input.path.len,
						   no_authority ? NULL : req->input.authority.base,
						   req->input.authority.len, req->headers.size, res))
		return false;
	for (size_t i = 0; i < req->headers.size; i++)
	{
		const h2o_header_t *h = &req->headers.entries[i];

		if (!h2_screen_field(h->name->base, h->name->len, h->value.base, h->value.len, res))
			return false;
	}
	return true;
}

/* Screens an HTTP/2 request before it is routed. */
bool
h2_guard_check(h2o_req_t *req, char **body, size_t *bodylen)
{
	h2o_socket_t *sock = req->conn->callbacks->get_socket ?
		req->conn->callbacks->get_socket(req->conn) : NULL;
	H2Guard    *g = guard_of(sock);
	ScreenResult res;

	if (g != NULL)
	{
		h2o_http2_stream_t *stream = H2O_STRUCT_FROM_MEMBER(h2o_http2_stream_t, req, req);

		/* h2o discards the answer when it reads the reset, next. */
		if (h2_screen_was_reset(&g->screen, stream->stream_id))
		{
			response_simple(req, 400, "the stream was reset", body, bodylen);
			return false;
		}
		if (h2_screen_header_list(&g->screen, header_list_size(req)) != H2_OK)
		{
			send_goaway((h2o_http2_conn_t *) req->conn, g, g->screen.verdict);
			response_simple(req, 431, "Request Header Fields Too Large", body, bodylen);
			return false;
		}
	}
	/* The stream alone is refused: HTTP/2 frames each request itself. */
	if (!screen_decoded(req, &res))
	{
		ereport(DEBUG1,
				(errmsg_internal("webgres refused an HTTP/2 request with %d: %s",
								 res.status, res.reason)));
		response_simple(req, res.status, res.reason, body, bodylen);
		return false;
	}
	return true;
}

/* Notes that an HTTP/2 request was answered with bodylen bytes of body. */
void
h2_guard_answered(h2o_req_t *req, size_t bodylen)
{
	h2o_socket_t *sock;
	H2Guard    *g;

	if (req->version < 0x200)
		return;
	sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
	g = guard_of(sock);
	if (g == NULL || g->ending ||
		h2_screen_was_reset(&g->screen, H2O_STRUCT_FROM_MEMBER(h2o_http2_stream_t, req, req)->stream_id))
		return;
	h2_screen_answered(&g->screen, bodylen);
}

/* Defines webgres.http2 and webgres.http2_max_resets; from _PG_init. */
void
h2_guard_define_settings(void)
{
	DefineCustomBoolVariable("webgres.http2",
							 "Serves cleartext HTTP/2 (h2c) to clients that open with its preface.",
							 "When off, a connection that starts with the HTTP/2 preface is "
							 "answered 400 and closed. An HTTP/1.1 request asking to upgrade "
							 "to h2c is always served as HTTP/1.1. Applies to new connections.",
							 &webgres_http2,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.http2_max_resets",
							"Stream resets an HTTP/2 connection may send before it is closed.",
							"Each RST_STREAM from the client spends one; each request "
							"answered on the connection earns half of one back, up to this "
							"number. A connection that runs out is sent GOAWAY "
							"(ENHANCE_YOUR_CALM) and closed. Applies to new connections.",
							&webgres_http2_max_resets,
							H2_MAX_RESETS_DEFAULT,
							1, H2_MAX_RESETS_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}
