/*
 * sse.c
 *		Server-sent event streams held open on a worker's event loop.
 *
 * h2o lets a response have one write outstanding at a time: a generator's
 * proceed callback says the last one went out.  Each stream therefore has
 * two buffers, the one h2o is writing and the one new events go into; when
 * h2o is done the two swap.  A stream costs its connection's file
 * descriptor and these buffers, nothing else: no backend, no worker slot.
 *
 * Bytes pushed from outside h2o's callbacks (the worker delivers
 * notifications between passes of its loop) are handed to h2o from the
 * loop's next pass, not at once: libh2o 2.2.5's evloop leaves a socket
 * polled for writing when a write started outside the loop completes at
 * once, and its next writable event then fails an assertion on a write
 * callback it has already called.
 *
 * A stream's backlog is what it holds that the client has not taken: the
 * write h2o has in flight and the bytes queued behind it.  A backlog over
 * webgres.sse_buffer_limit is allowed for SSE_STALL_GRACE_MS, the time a
 * client that reads gets to take its bytes: the write goes on meanwhile,
 * and events.c delivers no more notifications while any stream is over the
 * limit (sse_backlogged()), so backlogs stay near the limit.  A backlog
 * still over the limit when the grace ends belongs to a client that does
 * not read, and it is cut off: on HTTP/1.1 its connection is shut down; on
 * HTTP/2 only its stream is reset (RST_STREAM, CANCEL), and the
 * connection's other streams go on.
 */
#include "postgres.h"

#include "lib/ilist.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "events/sse.h"
#include "message/response_abort.h"

/* webgres.sse_heartbeat's default and most, in milliseconds. */
#define SSE_HEARTBEAT_DEFAULT_MS 15000
#define SSE_HEARTBEAT_MAX_MS (INT_MAX / 4)
/* webgres.sse_buffer_limit's default and bounds, in bytes. */
#define SSE_BUFFER_LIMIT_DEFAULT (1024 * 1024)
#define SSE_BUFFER_LIMIT_MIN 1024
#define SSE_BUFFER_LIMIT_MAX (INT_MAX / 2)

/* The event streams' settings (sse_define_settings); read elsewhere through sse_buffer_limit_bytes(). */
static int	webgres_sse_heartbeat = SSE_HEARTBEAT_DEFAULT_MS;
static int	webgres_sse_buffer_limit = SSE_BUFFER_LIMIT_DEFAULT;

/* The comment line sent as a heartbeat. */
#define SSE_HEARTBEAT ":\n\n"

/* How long a worker that is stopping waits for the ends of its streams to go out. */
#define SSE_END_WAIT_MS 1000

/*
 * How long a stream's backlog may stay over webgres.sse_buffer_limit, the
 * write in flight meanwhile, before its client is taken not to read.  A
 * reading client on a loaded machine takes a megabyte in milliseconds; the
 * grace is what a client that does not read holds up the delivery of
 * notifications to the worker's other streams for.
 */
#define SSE_STALL_GRACE_MS 1000

/* A stream's buffer starts at this many bytes, and doubles as it must. */
#define SSE_BUFFER_MIN 256

typedef struct SseBuffer
{
	char	   *data;
	size_t		len;
	size_t		cap;
} SseBuffer;

struct SseStream
{
	h2o_generator_t generator;	/* first: h2o hands it back to the callbacks */
	h2o_req_t  *req;
	dlist_node	node;			/* in all_streams */
	SseBuffer	writing;		/* h2o is sending this */
	SseBuffer	queued;			/* events waiting for the client */
	bool		in_flight;		/* writing was given to h2o, proceed not yet called */
	bool		ending;			/* end the response once writing is out */
	bool		dropped;		/* disconnected for not reading */
	h2o_timeout_entry_t heartbeat;
	h2o_timeout_entry_t stall;	/* linked while the backlog is over the limit */
	h2o_timeout_entry_t flush_due;	/* linked while queued bytes wait for the loop */
	ResponseAbort abort;		/* a client dropped for not reading */
	int64		expires_at;		/* 0, or when to end (sse_set_expiry) */
	Oid			auth_owner;		/* the route owner that let a role open it
								 * (sse_set_identity); invalid: none */
	Oid			auth_role;		/* that role */
	uint64		secret_generation;	/* of the HS secret that signed its token
									 * (sse_set_signer); 0: none */
	uint64		keys_generation;	/* of the keys file that verified it
									 * (sse_set_signer); 0: none */
	SseCloseCallback on_close;
	void	   *arg;
};

static MemoryContext stream_cxt;
static dlist_head all_streams = DLIST_STATIC_INIT(all_streams);
static int	nstreams = 0;
static int	nover = 0;			/* streams whose backlog is over the limit */
static int	nidentified = 0;	/* streams opened as a role (sse_set_identity) */
static h2o_context_t *loop_ctx;
static h2o_timeout_t heartbeat_timeout;
static h2o_timeout_t flush_timeout;	/* 0: the loop's next pass */
static h2o_timeout_t stall_timeout;	/* SSE_STALL_GRACE_MS */

/* Streams that expire are looked at this often, by one timer for all. */
#define SSE_EXPIRY_SWEEP_MS 1000
static h2o_timeout_t expiry_timeout;
static h2o_timeout_entry_t expiry_sweep;

/* Appends bytes to a buffer, growing it in the streams' context. */
static void
buffer_append(SseBuffer *b, const char *bytes, size_t len)
{
	if (b->len + len > b->cap)
	{
		size_t		cap = Max(b->cap * 2, Max(b->len + len, SSE_BUFFER_MIN));

		b->data = b->data ? repalloc(b->data, cap) : MemoryContextAlloc(stream_cxt, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, bytes, len);
	b->len += len;
}

/* Gives back a buffer's memory. */
static void
buffer_free(SseBuffer *b)
{
	if (b->data)
		pfree(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* (Re)starts the stream's heartbeat clock: silence is counted from now. */
static void
arm_heartbeat(SseStream *s)
{
	if (h2o_timeout_is_linked(&s->heartbeat))
		h2o_timeout_unlink(&s->heartbeat);
	if (webgres_sse_heartbeat > 0 && !s->dropped)
	{
		heartbeat_timeout.timeout = webgres_sse_heartbeat;
		h2o_timeout_link(loop_ctx->loop, &heartbeat_timeout, &s->heartbeat);
	}
}

/* Bytes the stream holds that its client has not taken. */
static size_t
backlog(SseStream *s)
{
	return (s->in_flight ? s->writing.len : 0) + s->queued.len;
}

/* The stream's backlog is no longer counted as over the limit. */
static void
unmark_over(SseStream *s)
{
	if (h2o_timeout_is_linked(&s->stall))
	{
		h2o_timeout_unlink(&s->stall);
		nover--;
	}
}

/*
 * Starts the grace of a stream whose backlog went over the limit, or ends
 * it when the backlog is back under.
 */
static void
check_backlog(SseStream *s)
{
	if (s->dropped || backlog(s) <= (size_t) webgres_sse_buffer_limit)
		unmark_over(s);
	else if (!h2o_timeout_is_linked(&s->stall))
	{
		h2o_timeout_link(loop_ctx->loop, &stall_timeout, &s->stall);
		nover++;
	}
}

/* Forgets the stream: its owner is told, its memory given back. */
static void
release(SseStream *s)
{
	if (h2o_timeout_is_linked(&s->heartbeat))
		h2o_timeout_unlink(&s->heartbeat);
	response_abort_forget(&s->abort);
	unmark_over(s);
	if (h2o_timeout_is_linked(&s->flush_due))
		h2o_timeout_unlink(&s->flush_due);
	dlist_delete(&s->node);
	nstreams--;
	if (OidIsValid(s->auth_owner))
		nidentified--;
	if (s->on_close)
		s->on_close(s, s->arg);
	buffer_free(&s->writing);
	buffer_free(&s->queued);
	pfree(s);
}

/* Ends the response cleanly (the last chunk, or END_STREAM) and forgets the stream. */
static void
finish(SseStream *s)
{
	h2o_req_t  *req = s->req;

	release(s);
	h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
}

/* Hands what is queued to h2o, if it is not busy with the previous bytes. */
static void
flush(SseStream *s)
{
	SseBuffer	tmp;
	h2o_iovec_t buf;

	if (s->in_flight || s->dropped)
		return;
	/* An ending stream sends what was queued before it ended, then its end. */
	if (s->ending && s->queued.len == 0)
	{
		finish(s);
		return;
	}
	if (s->queued.len == 0)
		return;
	tmp = s->writing;
	s->writing = s->queued;
	s->queued = tmp;
	s->queued.len = 0;
	s->in_flight = true;
	buf = h2o_iovec_init(s->writing.data, s->writing.len);
	arm_heartbeat(s);
	h2o_send(s->req, &buf, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/*
 * Disconnects a client that does not read (message/response_abort.h): on
 * HTTP/1.1 its connection, on HTTP/2 its stream alone.  h2o then ends the
 * request, which calls on_stop.
 */
static void
drop(SseStream *s)
{
	ereport(LOG,
			(errmsg("webgres disconnects an event-stream client that is not reading"),
			 errdetail("%zu bytes were waiting for it, more than webgres.sse_buffer_limit (%d bytes), for %d ms.",
					   backlog(s), webgres_sse_buffer_limit, SSE_STALL_GRACE_MS)));
	unmark_over(s);
	s->dropped = true;
	buffer_free(&s->queued);
	if (h2o_timeout_is_linked(&s->heartbeat))
		h2o_timeout_unlink(&s->heartbeat);
	response_abort(&s->abort, s->req);
}

/* Hands h2o what is queued: the end of an ending stream, or bytes once the backlog is checked. */
static void
go_on(SseStream *s)
{
	if (s->ending)
	{
		/* Its end goes out, and the stream is forgotten. */
		flush(s);
		return;
	}
	/* Before the flush, which moves bytes between buffers but not the backlog. */
	check_backlog(s);
	flush(s);
}

/* h2o: the last bytes went out. */
static void
on_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
	SseStream  *s = (SseStream *) generator;

	s->in_flight = false;
	s->writing.len = 0;
	go_on(s);
}

/* h2o: the connection ended before the response did. */
static void
on_stop(h2o_generator_t *generator, h2o_req_t *req)
{
	release((SseStream *) generator);
}

/* Has what is queued handed to h2o on the loop's next pass. */
static void
flush_soon(SseStream *s)
{
	if (!h2o_timeout_is_linked(&s->flush_due))
		h2o_timeout_link(loop_ctx->loop, &flush_timeout, &s->flush_due);
}

/* The loop's pass after a push: what is queued goes to h2o. */
static void
on_flush_due(h2o_timeout_entry_t *entry)
{
	SseStream  *s = H2O_STRUCT_FROM_MEMBER(SseStream, flush_due, entry);

	go_on(s);
}

/* A backlog stayed over the limit for the whole grace: the client does not read. */
static void
on_stall(h2o_timeout_entry_t *entry)
{
	SseStream  *s = H2O_STRUCT_FROM_MEMBER(SseStream, stall, entry);

	nover--;
	drop(s);
}

/* The heartbeat timer ran out: nothing was sent for a whole interval. */
static void
on_heartbeat(h2o_timeout_entry_t *entry)
{
	SseStream  *s = H2O_STRUCT_FROM_MEMBER(SseStream, heartbeat, entry);

	sse_push(s, SSE_HEARTBEAT, sizeof(SSE_HEARTBEAT) - 1);
	arm_heartbeat(s);
}

/* Ends the stream cleanly, as sse_end_all() does, once what it holds went out. */
static void
end_cleanly(SseStream *s)
{
	s->ending = true;
	if (!s->in_flight)
		flush_soon(s);
}

/*
 * The expiry timer: ends the streams whose token has expired, and looks
 * again later while any remain.
 */
static void
on_expiry_sweep(h2o_timeout_entry_t *entry)
{
	dlist_mutable_iter iter;
	int64		now = (int64) time(NULL);
	bool		more = false;

	dlist_foreach_modify(iter, &all_streams)
	{
		SseStream  *s = dlist_container(SseStream, node, iter.cur);

		if (s->expires_at == 0 || s->dropped || s->ending)
			continue;
		if (s->expires_at <= now)
			end_cleanly(s);
		else
			more = true;
	}
	if (more)
		h2o_timeout_link(loop_ctx->loop, &expiry_timeout, &expiry_sweep);
}

/* Ends the stream cleanly once the token it was opened with expires. */
void
sse_set_expiry(SseStream *s, int64 expires_at)
{
	s->expires_at = expires_at;
	if (!h2o_timeout_is_linked(&expiry_sweep))
		h2o_timeout_link(loop_ctx->loop, &expiry_timeout, &expiry_sweep);
}

/* Notes the route owner and role the stream was opened as. */
void
sse_set_identity(SseStream *s, Oid owner, Oid role)
{
	if (!OidIsValid(s->auth_owner))
		nidentified++;
	s->auth_owner = owner;
	s->auth_role = role;
}

/* Notes what verified the stream's token: see sse.h. */
void
sse_set_signer(SseStream *s, uint64 secret_generation, uint64 keys_generation)
{
	s->secret_generation = secret_generation;
	s->keys_generation = keys_generation;
}

/*
 * Ends, cleanly, the streams opened with a token signed by an HS secret
 * other than the current one, or verified with keys of a keys file whose
 * content has changed since; how many.
 */
int
sse_end_signer_changed(uint64 secret_current, uint64 keys_current)
{
	dlist_mutable_iter iter;
	int			ended = 0;

	dlist_foreach_modify(iter, &all_streams)
	{
		SseStream  *s = dlist_container(SseStream, node, iter.cur);

		if (s->dropped || s->ending)
			continue;
		if ((s->secret_generation != 0 && s->secret_generation != secret_current) ||
			(s->keys_generation != 0 && s->keys_generation != keys_current))
		{
			end_cleanly(s);
			ended++;
		}
	}
	return ended;
}

/* How many open streams were opened as a role. */
int
sse_identified_streams(void)
{
	return nidentified;
}

/* Ends, cleanly, the streams whose role allowed() no longer allows; how many. */
int
sse_end_unauthorised(bool (*allowed) (Oid owner, Oid role))
{
	dlist_mutable_iter iter;
	int			ended = 0;

	dlist_foreach_modify(iter, &all_streams)
	{
		SseStream  *s = dlist_container(SseStream, node, iter.cur);

		if (!OidIsValid(s->auth_owner) || s->dropped || s->ending)
			continue;
		if (!allowed(s->auth_owner, s->auth_role))
		{
			end_cleanly(s);
			ended++;
		}
	}
	return ended;
}

/* Sets up heartbeats on the worker's loop. */
void
sse_init(h2o_context_t *ctx)
{
	loop_ctx = ctx;
	stream_cxt = AllocSetContextCreate(TopMemoryContext, "webgres event streams",
									   ALLOCSET_DEFAULT_SIZES);
	h2o_timeout_init(ctx->loop, &heartbeat_timeout, Max(webgres_sse_heartbeat, 1));
	h2o_timeout_init(ctx->loop, &stall_timeout, SSE_STALL_GRACE_MS);
	h2o_timeout_init(ctx->loop, &flush_timeout, 0);
	h2o_timeout_init(ctx->loop, &expiry_timeout, SSE_EXPIRY_SWEEP_MS);
	expiry_sweep.cb = on_expiry_sweep;
}

/* Starts an event stream as the response to req, sending its first bytes. */
SseStream *
sse_start(h2o_req_t *req, const char *first, size_t firstlen,
		  SseCloseCallback on_close, void *arg)
{
	SseStream  *s = MemoryContextAllocZero(stream_cxt, sizeof(SseStream));

	s->generator.proceed = on_proceed;
	s->generator.stop = on_stop;
	s->req = req;
	s->heartbeat.cb = on_heartbeat;
	s->stall.cb = on_stall;
	s->flush_due.cb = on_flush_due;
	s->on_close = on_close;
	s->arg = arg;
	dlist_push_tail(&all_streams, &s->node);
	nstreams++;

	req->res.status = 200;
	req->res.reason = "OK";
	req->res.content_length = SIZE_MAX;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
				   H2O_STRLIT("text/event-stream"));
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
				   H2O_STRLIT("no-cache"));
	/*
	 * A stream is sent here, not by the exit's whole-body send: libh2o
	 * takes it write by write through the generator.  The worker counts it
	 * at the exit once (respond_stream_head and respond_stream_end).
	 */
	h2o_start_response(req, &s->generator);

	/*
	 * The headers go out now, with the first events, or else a comment:
	 * h2o turns an empty write into a mere call to proceed (the chunked
	 * encoder passes nothing on), so the head would wait for the first
	 * event, and a client learns that the stream is open from it.
	 */
	if (firstlen > 0)
		buffer_append(&s->writing, first, firstlen);
	else
		buffer_append(&s->writing, SSE_HEARTBEAT, sizeof(SSE_HEARTBEAT) - 1);
	s->in_flight = true;
	arm_heartbeat(s);
	{
		h2o_iovec_t buf = h2o_iovec_init(s->writing.data, s->writing.len);

		h2o_send(req, &buf, 1, H2O_SEND_STATE_IN_PROGRESS);
	}
	check_backlog(s);
	return s;
}

/* Queues bytes for the stream's client. */
void
sse_push(SseStream *s, const char *bytes, size_t len)
{
	if (s->dropped || s->ending)
		return;
	buffer_append(&s->queued, bytes, len);
	if (!s->in_flight)
		flush_soon(s);
	check_backlog(s);
}

/* Ends the stream cleanly once what is queued for it has gone out. */
void
sse_end(SseStream *s)
{
	if (s->dropped || s->ending)
		return;
	s->ending = true;
	if (!s->in_flight)
		flush_soon(s);
}

/* webgres.sse_buffer_limit in bytes. */
size_t
sse_buffer_limit_bytes(void)
{
	return (size_t) webgres_sse_buffer_limit;
}

/* True while some stream holds more than webgres.sse_buffer_limit its client has not taken. */
bool
sse_backlogged(void)
{
	return nover > 0;
}

/* Ends every stream with a clean end of response. */
void
sse_end_all(void)
{
	dlist_mutable_iter iter;
	TimestampTz deadline;

	dlist_foreach_modify(iter, &all_streams)
	{
		SseStream  *s = dlist_container(SseStream, node, iter.cur);

		s->req->http1_is_persistent = 0;
		if (s->dropped)
			continue;
		s->ending = true;
		if (!s->in_flight)
			flush_soon(s);
	}

	/* Streams still writing end when their last bytes are out. */
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SSE_END_WAIT_MS);
	while (nstreams > 0 && GetCurrentTimestamp() < deadline)
		h2o_evloop_run(loop_ctx->loop, 50);

	/*
	 * An HTTP/2 connection writes what its streams sent (their END_STREAM)
	 * on the loop's next pass, after the stream is forgotten here.
	 */
	h2o_evloop_run(loop_ctx->loop, 0);
}


/* Appends one event in the text/event-stream format (parse/sse_format.c). */
void
sse_format_event(StringInfo buf, const char *id, const char *event,
				 const char *data, size_t datalen)
{
	size_t		len = sse_event_length(id, event, data, datalen);

	if (len >= (size_t) (MaxAllocSize - buf->len))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("an event of %zu bytes is too long to send", len)));
	enlargeStringInfo(buf, (int) len);
	buf->len += (int) sse_event_write(buf->data + buf->len, id, event, data, datalen);
	buf->data[buf->len] = '\0';
}

/* Defines webgres.sse_heartbeat and webgres.sse_buffer_limit; from _PG_init. */
void
sse_define_settings(void)
{
	DefineCustomIntVariable("webgres.sse_heartbeat",
							"Longest silence on an event stream before a heartbeat is sent.",
							"An event stream on which nothing was sent for this long gets "
							"an SSE comment line, which keeps proxies from closing it and "
							"shows a client that has gone. 0 sends none.",
							&webgres_sse_heartbeat,
							SSE_HEARTBEAT_DEFAULT_MS,
							0, SSE_HEARTBEAT_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.sse_buffer_limit",
							"Most bytes an event stream may hold that its client has not taken.",
							"Events wait in the worker's memory until the client takes "
							"them; a client that leaves more than this waiting for a "
							"second while the worker offers it is disconnected, so that "
							"it costs the others nothing.",
							&webgres_sse_buffer_limit,
							SSE_BUFFER_LIMIT_DEFAULT,
							SSE_BUFFER_LIMIT_MIN, SSE_BUFFER_LIMIT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}
