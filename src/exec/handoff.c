/*
 * handoff.c
 *		The HTTP worker's side of running a request on an executor.
 *
 * A handed-off request is a Handoff.  It waits in the worker's queue until
 * its route admits one more running request (route_placement.c counts across
 * workers), then gets its own connection to the executors' socket: the
 * request goes out as one frame, written by h2o as the socket takes it, and
 * the response comes back as frames read by h2o's event loop, so nothing
 * here ever blocks.  Waiting requests are looked at again whenever one of
 * this worker's hand-offs ends and every QUEUE_RETRY_MS.  The request's
 * body is written from libh2o's buffer, not copied into the frame.
 *
 * The h2o request and the Handoff can each end first.  h2o frees a request
 * whose client went away (an HTTP/2 stream reset, a closed connection)
 * together with its memory pool; a small object in that pool points back
 * to the Handoff and its dispose callback ends the hand-off (CLIENT_GONE).
 * An HTTP/1 connection is not read while its request is served, so a
 * client that hangs up is noticed by looking at its socket (POLLRDHUP)
 * every CLIENT_CHECK_MS, as Postgres' client_connection_check_interval
 * does (ABANDONED).
 *
 * Each hand-off is in one HandoffState, and every way it ends is one too:
 * handoff_enter() moves it along the edges of one table, and entering an
 * end gives back what it held and frees it, after which handoff_end() does
 * that end's one thing to the request.
 *
 * A HEAD frame whose length is unknown starts a streamed response: each
 * BODY frame goes to h2o_send() as it arrives, and the executor socket is
 * not read while h2o has a piece in flight; the generator's proceed
 * callback reads on.  So a client that reads slowly stops the worker
 * reading, the socket's buffers fill, and the executor's writes block.  END
 * ends the response; an executor that closes without END (an error after
 * the head, or its death) cuts it: h2o_send() with H2O_SEND_STATE_ERROR,
 * which closes an HTTP/1.1 connection without the last chunk and resets an
 * HTTP/2 stream, or, while a piece is in flight, response_abort().  The
 * socket of an executor not read for that reason is looked at by the
 * client watch too: one that hung up (finished, failed or died) is read
 * out, which its socket's buffer bounds, so that a stream cut short is cut
 * at once, not when its client reads again.  A stream's h2o_send() calls
 * stay here rather than in the exit's respond_send(), which sends a whole
 * body at once: libh2o takes a stream piece by piece through the
 * generator.  The exit still counts it once, its head (stream_head) and
 * its end or cut (stream_end).
 */
#include "postgres.h"

#include <poll.h>
#include <sys/socket.h>

#include "lib/ilist.h"
#include "lib/stringinfo.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/socket/evloop.h>

#include "message/errors.h"
#include "exec/exec_socket.h"
#include "exec/handoff.h"
#include "exec/handoff_frame.h"
#include "message/response.h"
#include "message/response_abort.h"
#include "serve/access_log.h"
#include "serve/pipeline.h"
#include "serve/pipeline_phases.h"
#include "routes/route_placement.h"
#include "routes/route_stats.h"
#include "core/h2o_mirror.h"
#include "core/settings.h"

/* webgres.max_queue's default and most. */
#define MAX_QUEUE_DEFAULT 64
#define MAX_QUEUE_MAX 100000

/* webgres.max_queue (handoff_define_settings). */
static int	webgres_max_queue = MAX_QUEUE_DEFAULT;

/* How often requests waiting for their route's cap try again. */
#define QUEUE_RETRY_MS 5
/* How often the clients of handed-off HTTP/1 requests are checked. */
#define CLIENT_CHECK_MS 100
/*
 * How long past its handler_timeout a request sent to the executors may go
 * unanswered: the executor answers 504 itself at the deadline, so this only
 * fires when no executor took the request (none running, all stuck).
 */
#define SENT_GRACE_MS 1000
/* What a 503 for a full queue tells the client to wait, in seconds. */
#define RETRY_AFTER_SECONDS "1"
/* The most of a request's path a log message quotes. */
#define LOG_PATH_MAX 200

/*
 * The life of a hand-off, one state at a time; handoff_enter() makes every
 * change, and only along these edges (handoff_may_enter()):
 *
 *	NEW → QUEUED			its route is at its cap: it waits, holding a queue place
 *	NEW, QUEUED → SENT		admitted: it holds a running place, goes to an executor
 *	SENT → WHOLE			the executor's HEAD gave a length: BODY frames are kept
 *	SENT → STREAMING		HEAD without a length: BODY frames go out as they come
 *	STREAMING → DRAINING	the executor hung up while h2o holds a piece: what
 *							it left is read in
 *	DRAINING → DRAINED		... and it ends with END: the rest goes out as the
 *							client reads
 *
 * and into the ends, from which nothing moves on:
 *
 *	NEW → REFUSED					the route's queue is full too
 *	WHOLE, STREAMING, DRAINING,
 *	  DRAINED → DONE				END: answered
 *	SENT, WHOLE → FAILED			no answer from the executor: it could not be
 *									reached or went away, or broke the protocol
 *	STREAMING, DRAINING,
 *	  DRAINED → CUT					the same after a stream's head went out
 *	QUEUED, SENT → TIMED_OUT		the deadline passed before a HEAD
 *	QUEUED ... DRAINED → ABANDONED	the client's socket hung up
 *	QUEUED ... DRAINED → CLIENT_GONE	h2o freed the request
 *
 * Entering an end is handoff_end()'s: it gives back what the hand-off held
 * (release()), frees it, and answers or cuts the request as the end says.
 * A hand-off in any other state is in exactly one of the lists queued and
 * sent (or, inside admit_queued() and on_client_timeout(), a local one).
 */
typedef enum HandoffState
{
	/* Made by handoff_start(); holds nothing, in no list.  handoff_start(). */
	HANDOFF_NEW,
	/*
	 * Holds a place in its route's queue, in the list queued; no socket.
	 * admit_queued() sends it or times it out, the client watch or h2o's
	 * dispose ends it.
	 */
	HANDOFF_QUEUED,
	/*
	 * Holds a running place, in the list sent; its frame goes out on its
	 * socket (or the connect failed), no HEAD yet.  The executor's frames
	 * (take_frame()), its socket's errors, the client watch (and its
	 * deadline) and h2o's dispose move it on.
	 */
	HANDOFF_SENT,
	/*
	 * The HEAD gave a length: req->res holds the executor's status and
	 * headers, BODY frames are gathered in body.  Nothing has gone to the
	 * client.  Moved on as SENT, but for the deadline (the executor's).
	 */
	HANDOFF_WHOLE,
	/*
	 * The HEAD gave no length: the response's head went out to the client
	 * (counted by the exit's stream_head), each BODY goes to h2o_send() as
	 * it arrives.  Moved on as WHOLE, and by the client watch when the
	 * executor's socket, unread while h2o holds a piece, hung up.
	 */
	HANDOFF_STREAMING,
	/*
	 * STREAMING whose executor hung up while h2o holds a piece: the socket
	 * is read again to see how it ended (its buffer bounds what it left).
	 * on_executor_read() and on_proceed() move it on.
	 */
	HANDOFF_DRAINING,
	/*
	 * DRAINING whose executor's last frame is END: the socket is no longer
	 * read, the frames left in its buffer go out as the client takes them
	 * (on_proceed()).
	 */
	HANDOFF_DRAINED,

	/* The ends: the Handoff is given back and freed as it enters one. */

	/* The route's queue was full: answered 503 with Retry-After. */
	HANDOFF_REFUSED,
	/* END came: the whole answer, or a stream's end, went through the exit. */
	HANDOFF_DONE,
	/*
	 * Before any answer went out, the executor could not be reached, went
	 * away, broke the protocol, or the request could not be framed: answered
	 * 502, 503 (with Retry-After) or 413 through the exit.
	 */
	HANDOFF_FAILED,
	/*
	 * As FAILED, after a stream's head went out: the stream is cut (an
	 * HTTP/1.1 connection closed without its last chunk, an HTTP/2 stream
	 * reset) and counted with what it sent.
	 */
	HANDOFF_CUT,
	/*
	 * handler_timeout passed while it waited (QUEUED) or while no executor
	 * answered it (SENT, SENT_GRACE_MS after): answered 504.
	 */
	HANDOFF_TIMED_OUT,
	/*
	 * The client's socket hung up (the client watch) while h2o still holds
	 * the request: answered 503, or a streamed one cut, so that h2o finds
	 * the closed connection and frees it.
	 */
	HANDOFF_ABANDONED,
	/*
	 * h2o freed the request (an HTTP/2 stream reset, a connection closed):
	 * nothing may touch req any more; a stream is counted with what it sent.
	 */
	HANDOFF_CLIENT_GONE
} HandoffState;

/* The states' names, for the log. */
static const char *const handoff_state_names[] = {
	[HANDOFF_NEW] = "new",
	[HANDOFF_QUEUED] = "queued",
	[HANDOFF_SENT] = "sent",
	[HANDOFF_WHOLE] = "whole",
	[HANDOFF_STREAMING] = "streaming",
	[HANDOFF_DRAINING] = "draining",
	[HANDOFF_DRAINED] = "drained",
	[HANDOFF_REFUSED] = "refused",
	[HANDOFF_DONE] = "done",
	[HANDOFF_FAILED] = "failed",
	[HANDOFF_CUT] = "cut",
	[HANDOFF_TIMED_OUT] = "timed out",
	[HANDOFF_ABANDONED] = "abandoned",
	[HANDOFF_CLIENT_GONE] = "client gone"
};

typedef struct HandoffLink HandoffLink;

typedef struct Handoff
{
	dlist_node	node;			/* in queued or sent */
	HandoffState state;
	h2o_req_t  *req;			/* h2o's as long as h lives: its dispose ends h
								 * (CLIENT_GONE) */
	HandoffLink *link;			/* in req's pool */
	h2o_socket_t *sock;			/* the executor connection, once sent */
	RoutePlacement *limits;
	int			cap;
	TimestampTz deadline;		/* handler_timeout from head_at; 0: none */
	TimestampTz started;		/* when the pipeline began routing it */
	HandoffMeta meta;
	HandoffAnswerMeta answer;	/* from the HEAD frame; role in req's pool */
	StringInfoData frame;		/* the request but its body's bytes, until
								 * written */
	bool		reading;		/* take_input() is running (not a state: it
								 * guards against re-entry from h2o) */
	char	   *body;			/* the response body, in req's pool */
	size_t		bodylen;
	size_t		bodycap;		/* the length the HEAD frame gave */
	size_t		bodyalloc;		/* what body has room for */
	uint64		streamed;		/* bytes of a streamed body passed to h2o */
} Handoff;

/*
 * Lives in the request's pool: its dispose tells the Handoff the request is
 * gone.  A streamed response's generator and the piece h2o is sending live
 * here too, since they must outlive a Handoff that ends (its executor gone)
 * while h2o still writes.
 */
struct HandoffLink
{
	Handoff    *handoff;
	h2o_generator_t generator;
	char	   *piece;			/* the BODY in flight, in TopMemoryContext */
	size_t		piececap;
	bool		in_flight;		/* h2o has not called proceed for it yet */
	ResponseAbort abort;		/* a stream cut while a piece was in flight */
};

/* Whether state is an end, from which a hand-off moves no more. */
static inline bool
handoff_is_end(HandoffState state)
{
	return state >= HANDOFF_REFUSED;
}

/* Whether a hand-off may go from state from to state to (see HandoffState). */
static bool
handoff_may_enter(HandoffState from, HandoffState to)
{
	switch (from)
	{
		case HANDOFF_NEW:
			return to == HANDOFF_QUEUED || to == HANDOFF_SENT || to == HANDOFF_REFUSED;
		case HANDOFF_QUEUED:
			return to == HANDOFF_SENT || to == HANDOFF_TIMED_OUT ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_SENT:
			return to == HANDOFF_WHOLE || to == HANDOFF_STREAMING ||
				to == HANDOFF_FAILED || to == HANDOFF_TIMED_OUT ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_WHOLE:
			return to == HANDOFF_DONE || to == HANDOFF_FAILED ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_STREAMING:
			return to == HANDOFF_DRAINING || to == HANDOFF_DONE || to == HANDOFF_CUT ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_DRAINING:
			return to == HANDOFF_DRAINED || to == HANDOFF_DONE || to == HANDOFF_CUT ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_DRAINED:
			return to == HANDOFF_DONE || to == HANDOFF_CUT ||
				to == HANDOFF_ABANDONED || to == HANDOFF_CLIENT_GONE;
		case HANDOFF_REFUSED:
		case HANDOFF_DONE:
		case HANDOFF_FAILED:
		case HANDOFF_CUT:
		case HANDOFF_TIMED_OUT:
		case HANDOFF_ABANDONED:
		case HANDOFF_CLIENT_GONE:
			break;
	}
	return false;
}

static void release(Handoff *h, HandoffState from);

/*
 * The one transition function: moves h to state next.  Entering an end
 * gives back and frees h (release()), which is why only handoff_end() names
 * one.  An edge the table does not have is a bug: on the event loop, where
 * nothing catches an ERROR, it ends the worker, whose exit gives back the
 * places it holds (release_all()).
 */
static void
handoff_enter(Handoff *h, HandoffState next)
{
	HandoffState from = h->state;

	if (!handoff_may_enter(from, next))
		elog(ERROR, "webgres hand-off cannot go from state \"%s\" to \"%s\"",
			 handoff_state_names[from], handoff_state_names[next]);
	h->state = next;
	if (handoff_is_end(next))
		release(h, from);
}

/* Whether h's response is a stream whose head went out. */
static inline bool
streaming(const Handoff *h)
{
	return h->state == HANDOFF_STREAMING || h->state == HANDOFF_DRAINING ||
		h->state == HANDOFF_DRAINED;
}

/* Whether h's executor sent its HEAD. */
static inline bool
head_seen(const Handoff *h)
{
	return h->state == HANDOFF_WHOLE || streaming(h);
}

static h2o_evloop_t *loop = NULL;
static const PhaseExit *exit_to = NULL;	/* the worker's one exit */
static dlist_head queued = DLIST_STATIC_INIT(queued);
static dlist_head sent = DLIST_STATIC_INIT(sent);
static h2o_timeout_t queue_timeout;
static h2o_timeout_entry_t queue_entry;
static h2o_timeout_t client_timeout;
static h2o_timeout_entry_t client_entry;

static void admit_queued(void);
static void on_executor_read(h2o_socket_t *sock, const char *err);

/* The moment a request's head was complete, from h2o's timestamps. */
TimestampTz
handoff_head_complete_at(h2o_req_t *req)
{
	const struct timeval *tv = h2o_timeval_is_null(&req->timestamps.request_body_begin_at) ?
		&req->processed_at.at : &req->timestamps.request_body_begin_at;

	if (tv->tv_sec == 0)
		return GetCurrentTimestamp();
	return (TimestampTz) (tv->tv_sec -
						  ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)) *
		USECS_PER_SEC + tv->tv_usec;
}

/* True if requests can be handed off: there are executors. */
bool
handoff_enabled(void)
{
	return loop != NULL && webgres_executors > 0 && exec_socket_listener() >= 0;
}

/*
 * Gives back what h held in state from (its queue or running place, its
 * place in a list, the executor's socket) and frees it; the request's link
 * no longer points to it.  Only handoff_enter() calls it, as h enters an
 * end.
 */
static void
release(Handoff *h, HandoffState from)
{
	if (from == HANDOFF_QUEUED)
		route_placement_leave_queue(h->limits);
	else if (from != HANDOFF_NEW)
		route_placement_end_run(h->limits);
	if (from != HANDOFF_NEW)
		dlist_delete(&h->node);
	if (h->sock != NULL)
	{
		h->sock->data = NULL;
		h2o_socket_close(h->sock);
		h->sock = NULL;
	}
	if (h->link != NULL)
		h->link->handoff = NULL;
	if (h->frame.data != NULL)
		pfree(h->frame.data);
	pfree(h);
}

/*
 * Notes, for the access and slow-request logs, that req's answer is ready;
 * meta: what the executor's head told of it, or NULL for an answer of the
 * worker's own.
 */
static void
note_answered(h2o_req_t *req, const HandoffAnswerMeta *meta)
{
	AccessNote *note = access_log_note(req);

	if (note == NULL)
		return;
	note->answered = GetCurrentTimestamp();
	if (meta != NULL)
	{
		note->role = meta->role;
		note->plan_us = meta->plan_us;
	}
}

/* Answers the request with a plain-text error and counts it for its route. */
static void
answer_simple(h2o_req_t *req, int status, const char *message, bool retry_after,
			  int64 route_id, TimestampTz started)
{
	char	   *body;
	size_t		bodylen;

	req->res.headers = (h2o_headers_t) {NULL};
	response_simple(req, status, message, &body, &bodylen);
	note_answered(req, NULL);
	if (retry_after)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
					   H2O_STRLIT(RETRY_AFTER_SECONDS));
	/* PHASE_FILTER: the route's headers (CORS), so that a page can read the error. */
	phase_filter_route_id(req, route_id);
	exit_to->send(req, body, bodylen, route_id, started);
}

/*
 * Ends a streamed response whose head went out without its end: h2o closes
 * an HTTP/1.1 connection without the last chunk, resets an HTTP/2 stream.
 * If h2o is still sending a piece, h2o_send() may not be called until it
 * is done, which a client that reads nothing never lets happen: the
 * response is cut under h2o instead (message/response_abort.h).
 */
static void
cut_stream(h2o_req_t *req, HandoffLink *link, const char *why)
{
	ereport(LOG,
			(errmsg("webgres cut the streamed response to \"%.*s %.*s\": %s",
					(int) req->method.len, req->method.base,
					(int) Min(req->path.len, LOG_PATH_MAX), req->path.base, why)));
	if (link->in_flight)
		response_abort(&link->abort, req);
	else
		h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
}

/*
 * Moves h into the end end, which gives it back and frees it, and does to
 * its request what that end says (see HandoffState); then admits what
 * waits, if h held a running place.  status, message and retry_after are
 * the answer of REFUSED, FAILED and TIMED_OUT; message is why a CUT stream
 * was cut.
 */
static void
handoff_end(Handoff *h, HandoffState end, int status, const char *message,
			bool retry_after)
{
	h2o_req_t  *req = h->req;
	HandoffLink *link = h->link;
	bool		was_streaming = streaming(h);
	bool		was_running = h->state != HANDOFF_NEW && h->state != HANDOFF_QUEUED;
	int64		route_id = h->meta.route_id;
	TimestampTz started = h->started;
	HandoffAnswerMeta answer = h->answer;
	char	   *body = h->body;
	size_t		bodylen = h->bodylen;
	uint64		streamed = h->streamed;

	ereport(DEBUG2,
			(errmsg_internal("webgres hand-off of route %lld: \"%s\" to \"%s\"",
							 (long long) route_id, handoff_state_names[h->state],
							 handoff_state_names[end])));
	handoff_enter(h, end);
	/* h is freed. */
	switch (end)
	{
		case HANDOFF_DONE:
			if (was_streaming)
			{
				exit_to->stream_end(req->res.status, route_id, streamed, started);
				h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
			}
			else
			{
				note_answered(req, &answer);
				exit_to->send(req, body, bodylen, route_id, started);
			}
			break;
		case HANDOFF_REFUSED:
		case HANDOFF_FAILED:
		case HANDOFF_TIMED_OUT:
			answer_simple(req, status, message, retry_after, route_id, started);
			break;
		case HANDOFF_CUT:
			/* Counted with what it sent (the executor counts its error). */
			exit_to->stream_end(req->res.status, route_id, streamed, started);
			cut_stream(req, link, message);
			break;
		case HANDOFF_ABANDONED:
			/* Answering lets h2o find the closed connection and free it. */
			if (was_streaming)
			{
				exit_to->stream_end(req->res.status, route_id, streamed, started);
				cut_stream(req, link, "the client went away");
			}
			else
				answer_simple(req, 503, "Service Unavailable", false, route_id, started);
			break;
		case HANDOFF_CLIENT_GONE:
			/* req is being freed: a stream is only counted. */
			if (was_streaming)
				exit_to->stream_end(0, route_id, streamed, started);
			break;
		default:
			elog(ERROR, "webgres hand-off state \"%s\" is not an end",
				 handoff_state_names[end]);
	}
	if (was_running)
		admit_queued();
}

/*
 * The executor failed h (it could not be reached or went away, a frame was
 * malformed, the request could not be framed): a response not begun is
 * answered status, a stream whose head went out is cut.
 */
static void
executor_failed(Handoff *h, int status, const char *message, bool retry_after)
{
	if (streaming(h))
		handoff_end(h, HANDOFF_CUT, 0,
					status == 503 ? "the executor ended it before its end (see its log)" :
					"the executor sent a malformed frame", false);
	else
		handoff_end(h, HANDOFF_FAILED, status, message, retry_after);
}

/* The request's pool is being freed: the client is gone. */
static void
on_request_disposed(void *p)
{
	HandoffLink *link = p;
	Handoff    *h = link->handoff;

	response_abort_forget(&link->abort);
	if (link->piece != NULL)
		pfree(link->piece);
	link->piece = NULL;
	if (h == NULL)
		return;
	/* Nothing may touch them from here on. */
	h->link = NULL;
	h->req = NULL;
	handoff_end(h, HANDOFF_CLIENT_GONE, 0, NULL, false);
}

/*
 * Makes room for need bytes of a whole response's body, which the BODY
 * frames in hand already hold: what is reserved follows what the executor
 * sent, never only the length its head claimed.  An executor sends a body
 * of known length as one BODY frame, so this is one allocation; more frames
 * grow it by doubling, up to the length the head gave.
 */
static void
grow_body(Handoff *h, size_t need)
{
	size_t		cap;
	char	   *body;

	if (need <= h->bodyalloc)
		return;
	cap = Min(h->bodycap, Max(need, h->bodyalloc * 2));
	body = h2o_mem_alloc_pool(&h->req->pool, cap);
	if (h->bodylen > 0)
		memcpy(body, h->body, h->bodylen);
	h->body = body;
	h->bodyalloc = cap;
}

/* Takes one frame from the executor; false if it was malformed. */
static bool
take_frame(Handoff *h, char type, const char *payload, uint32 len, bool *done)
{
	h2o_req_t  *req = h->req;

	*done = false;
	switch (type)
	{
		case FRAME_HEAD:
			if (head_seen(h) || !frame_get_head(payload, len, req, &h->answer))
				return false;
			req->res.reason = http_reason(req->res.status);
			if (req->res.content_length != SIZE_MAX)
			{
				/* Reserved as BODY frames come, not on the head's word. */
				h->bodycap = req->res.content_length;
				handoff_enter(h, HANDOFF_WHOLE);
			}
			else
			{
				/* The head goes out with the first piece. */
				handoff_enter(h, HANDOFF_STREAMING);
				note_answered(req, &h->answer);
				exit_to->stream_head(req);
				h2o_start_response(req, &h->link->generator);
			}
			return true;
		case FRAME_BODY:
			if (h->state != HANDOFF_WHOLE || h->bodylen + len > h->bodycap)
				return false;
			grow_body(h, h->bodylen + len);
			memcpy(h->body + h->bodylen, payload, len);
			h->bodylen += len;
			return true;
		case FRAME_END:
			if (!head_seen(h) || (h->state == HANDOFF_WHOLE && h->bodylen != h->bodycap))
				return false;
			if (h->state == HANDOFF_WHOLE && h->body == NULL)
				h->body = h2o_mem_alloc_pool(&req->pool, 1);
			*done = true;
			return true;
		default:
			return false;
	}
}

/*
 * Passes one BODY frame of a streamed response to h2o.  The payload is
 * copied out of the socket's buffer, which closes with the Handoff, into
 * the link, which lives as long as the request.
 */
static void
send_piece(Handoff *h, const char *payload, uint32 len)
{
	HandoffLink *link = h->link;
	h2o_iovec_t buf;

	if (link->piececap < len)
	{
		if (link->piece != NULL)
			pfree(link->piece);
		link->piece = MemoryContextAlloc(TopMemoryContext, len);
		link->piececap = len;
	}
	memcpy(link->piece, payload, len);
	h->streamed += len;
	buf = h2o_iovec_init(link->piece, len);
	link->in_flight = true;
	h2o_send(h->req, &buf, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/*
 * Takes the frames waiting in the executor socket's buffer; answers the
 * request at END.  While h2o sends a piece of a stream, stops there and
 * stops reading the socket: on_proceed() comes back.  False if h ended.
 */
static bool
take_input(Handoff *h)
{
	h2o_socket_t *sock = h->sock;

	h->reading = true;
	while (!h->link->in_flight && sock->input->size >= FRAME_HEADER_SIZE)
	{
		uint32		len;
		char		type;
		bool		done;

		frame_get_header(sock->input->bytes, &len, &type);
		if (len > FRAME_MAX_PAYLOAD ||
			(type == FRAME_BODY && h->state == HANDOFF_WHOLE &&
			 h->bodylen + len > h->bodycap))
		{
			executor_failed(h, 502, "Bad Gateway", false);
			return false;
		}
		if (sock->input->size < FRAME_HEADER_SIZE + (size_t) len)
			break;
		if (type == FRAME_BODY && streaming(h))
		{
			if (len > 0)
				send_piece(h, sock->input->bytes + FRAME_HEADER_SIZE, len);
			h2o_buffer_consume(&sock->input, FRAME_HEADER_SIZE + len);
			continue;
		}
		if (!take_frame(h, type, sock->input->bytes + FRAME_HEADER_SIZE, len, &done))
		{
			ereport(WARNING,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("webgres executor sent a malformed response")));
			executor_failed(h, 502, "Bad Gateway", false);
			return false;
		}
		h2o_buffer_consume(&sock->input, FRAME_HEADER_SIZE + len);
		if (done)
		{
			handoff_end(h, HANDOFF_DONE, 0, NULL, false);
			return false;
		}
	}
	h->reading = false;
	/*
	 * Backpressure: nothing more is read while h2o sends, unless the
	 * executor is gone (what it left is bounded by the socket's buffer).
	 */
	if (h->link->in_flight)
	{
		if (h->state != HANDOFF_DRAINING && h->state != HANDOFF_DRAINED)
			h2o_socket_read_stop(sock);
	}
	else if (!h2o_socket_is_reading(sock) && h->state != HANDOFF_DRAINED)
		h2o_socket_read_start(sock, on_executor_read);
	return true;
}

/* Whether buf holds whole frames only, the last of them END. */
static bool
ends_with_end(h2o_buffer_t *buf)
{
	size_t		at = 0;
	char		last = 0;

	while (buf->size - at >= FRAME_HEADER_SIZE)
	{
		uint32		len;

		frame_get_header(buf->bytes + at, &len, &last);
		if (buf->size - at - FRAME_HEADER_SIZE < len)
			return false;
		at += FRAME_HEADER_SIZE + len;
	}
	return at == buf->size && last == FRAME_END;
}

/* Reads what the executor sent. */
static void
on_executor_read(h2o_socket_t *sock, const char *err)
{
	Handoff    *h = sock->data;

	if (h == NULL)
		return;
	if (err != NULL && (h->state == HANDOFF_DRAINING || h->state == HANDOFF_DRAINED) &&
		ends_with_end(sock->input))
	{
		/* The stream is whole: its rest goes out as the client reads. */
		if (h->state == HANDOFF_DRAINING)
			handoff_enter(h, HANDOFF_DRAINED);
		h2o_socket_read_stop(sock);
		return;
	}
	if (err != NULL)
	{
		if (!streaming(h))
			ereport(LOG,
					(errmsg("webgres executor connection closed before the response was complete")));
		executor_failed(h, 503, "Service Unavailable", true);
		return;
	}
	(void) take_input(h);
}

/* h2o sent a piece of a stream: take the next. */
static void
on_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
	HandoffLink *link = H2O_STRUCT_FROM_MEMBER(HandoffLink, generator, generator);
	Handoff    *h = link->handoff;

	link->in_flight = false;
	/* A stream cut meanwhile is being ended by response_abort(). */
	if (h == NULL)
		return;
	if (!h->reading)
		(void) take_input(h);
}

/* The request frame is written: free it and wait for the answer. */
static void
on_request_written(h2o_socket_t *sock, const char *err)
{
	Handoff    *h = sock->data;

	if (h == NULL)
		return;
	pfree(h->frame.data);
	h->frame.data = NULL;
	if (err != NULL)
		executor_failed(h, 503, "Service Unavailable", true);
}

/* Starts checking clients, if it is not already. */
static void
watch_clients(void)
{
	if (!h2o_timeout_is_linked(&client_entry))
		h2o_timeout_link(loop, &client_timeout, &client_entry);
}

/*
 * Reserves h's request frame but its body's bytes whole, so that writing
 * it never grows (and never raises an error on the event loop, where
 * nothing would catch it).  A request too large to frame is answered 413,
 * one that finds no memory 503; false then, and h has ended.
 */
static bool
frame_alloc(Handoff *h)
{
	uint64		size = frame_request_size(h->req);
	uint64		head = size - (h->req->entity.base != NULL ? h->req->entity.len : 0);

	h->frame.data = NULL;
	/* The frame, its header and the StringInfo's NUL in one allocation. */
	if (size > FRAME_HEADER_SIZE + (uint64) FRAME_MAX_PAYLOAD || size + 1 > MaxAllocSize)
	{
		ereport(LOG,
				(errmsg("webgres cannot hand a request of %llu bytes to an executor",
						(unsigned long long) size),
				 errdetail("A frame carries at most %u bytes.", (unsigned) (MaxAllocSize - 1)),
				 errhint("Lower webgres.max_body_size.")));
		executor_failed(h, 413, "Payload Too Large", false);
		return false;
	}
	h->frame.data = MemoryContextAllocExtended(TopMemoryContext, (Size) head + 1,
											   MCXT_ALLOC_NO_OOM);
	if (h->frame.data == NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("webgres has no memory for a request of %llu bytes to an executor",
						(unsigned long long) size)));
		executor_failed(h, 503, "Service Unavailable", true);
		return false;
	}
	h->frame.maxlen = (int) head + 1;
	resetStringInfo(&h->frame);
	return true;
}

/*
 * Connects to the executors and writes the request; h is admitted.  The
 * body goes from libh2o's buffer, which lasts as long as the request: if
 * the request goes first, its dispose closes the socket, and with it the
 * write, before the event loop writes again.
 */
static void
send_to_executor(Handoff *h)
{
	int			fd = exec_socket_connect();
	h2o_iovec_t bufs[2];
	size_t		nbufs = 1;
	AccessNote *note;

	Assert(h->state == HANDOFF_SENT);
	dlist_push_tail(&sent, &h->node);
	note = access_log_note(h->req);
	if (note != NULL)
		note->admitted = GetCurrentTimestamp();
	if (fd < 0)
	{
		/* EAGAIN: the queue of requests waiting for an executor is full. */
		ereport(LOG,
				(errcode_for_socket_access(),
				 errmsg("could not hand a request to a webgres executor: %m")));
		executor_failed(h, 503, "Service Unavailable", true);
		return;
	}
	h->sock = h2o_evloop_socket_create(loop, fd, 0);
	h->sock->data = h;
	if (!frame_alloc(h))
		return;
	frame_put_request_head(&h->frame, h->req, &h->meta);
	bufs[0] = h2o_iovec_init(h->frame.data, h->frame.len);
	if (h->req->entity.base != NULL && h->req->entity.len > 0)
		bufs[nbufs++] = h->req->entity;
	h2o_socket_write(h->sock, bufs, nbufs, on_request_written);
	h2o_socket_read_start(h->sock, on_executor_read);
	watch_clients();
}

/*
 * Sends what waits and may run now, in order; answers what waited too long.
 *
 * Answering or sending runs code that may end other hand-offs and call this
 * again (a connect that fails answers 503 and frees a place): so the queue
 * is first sorted into local lists without running any of it, then those
 * lists are emptied from their heads, and a call made meanwhile only asks
 * for another pass once this one is done.
 */
static void
admit_queued(void)
{
	static bool admitting = false;
	static bool admit_again = false;

	if (admitting)
	{
		admit_again = true;
		return;
	}
	admitting = true;
	do
	{
		TimestampTz now = 0;
		dlist_mutable_iter iter;
		dlist_head	late;
		dlist_head	go;

		admit_again = false;
		dlist_init(&late);
		dlist_init(&go);
		dlist_foreach_modify(iter, &queued)
		{
			Handoff    *h = dlist_container(Handoff, node, iter.cur);

			if (h->deadline != 0)
			{
				if (now == 0)
					now = GetCurrentTimestamp();
				if (now >= h->deadline)
				{
					dlist_delete(&h->node);
					dlist_push_tail(&late, &h->node);
					continue;
				}
			}
			if (route_placement_try_run(h->limits, h->cap))
			{
				/* It holds a running place now: release() gives that back. */
				route_placement_leave_queue(h->limits);
				handoff_enter(h, HANDOFF_SENT);
				dlist_delete(&h->node);
				dlist_push_tail(&go, &h->node);
			}
		}
		/* A hand-off ended meanwhile (its client gone) leaves its list itself. */
		while (!dlist_is_empty(&late))
			handoff_end(dlist_container(Handoff, node, dlist_head_node(&late)),
						HANDOFF_TIMED_OUT, 504,
						pipeline_expose_errors() ? "handler timed out while queued" :
						"handler timed out", false);
		while (!dlist_is_empty(&go))
		{
			Handoff    *h = dlist_container(Handoff, node, dlist_head_node(&go));

			dlist_delete(&h->node);
			send_to_executor(h);
		}
	} while (admit_again);
	admitting = false;
	if (!dlist_is_empty(&queued) && !h2o_timeout_is_linked(&queue_entry))
		h2o_timeout_link(loop, &queue_timeout, &queue_entry);
}

/* Timer: looks again whether queued hand-offs may go. */
static void
on_queue_timeout(h2o_timeout_entry_t *entry)
{
	admit_queued();
}

/* The client's socket of an HTTP/1 request, or -1. */
static int
client_fd(h2o_req_t *req)
{
	h2o_socket_t *sock;

	if (req->conn == NULL || req->conn->callbacks->get_socket == NULL)
		return -1;
	sock = req->conn->callbacks->get_socket(req->conn);
	return sock != NULL ? h2o_mirror_socket_fd(sock) : -1;
}

/* True if the peer of fd has hung up. */
static bool
hung_up(int fd)
{
	struct pollfd pfd = {fd, POLLRDHUP, 0};

	return fd >= 0 && poll(&pfd, 1, 0) > 0 &&
		(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/*
 * Drops the hand-offs whose client hung up (the executor then cancels the
 * handler; a waiting one gives back its place) and those no executor
 * answered in time.  A response whose head came is answered: a stream is
 * bounded by the executor (webgres.stream_timeout), not here.
 */
static void
on_client_timeout(h2o_timeout_entry_t *entry)
{
	dlist_mutable_iter iter;
	dlist_head	gone;
	dlist_head	late;
	TimestampTz now = GetCurrentTimestamp();

	/* Set aside first: answering may run h2o callbacks that change the lists. */
	dlist_init(&gone);
	dlist_init(&late);
	dlist_foreach_modify(iter, &sent)
	{
		Handoff    *h = dlist_container(Handoff, node, iter.cur);

		if (hung_up(client_fd(h->req)))
		{
			dlist_delete(&h->node);
			dlist_push_tail(&gone, &h->node);
		}
		else if (h->state == HANDOFF_STREAMING && h->link != NULL && h->link->in_flight &&
				 h->sock != NULL && hung_up(h2o_socket_get_fd(h->sock)))
		{
			/*
			 * The worker stopped reading this executor while h2o holds a
			 * piece its client has not taken; the executor has gone
			 * (finished, failed or died).  Read what it left: a stream cut
			 * short is cut now, not when the client reads again.
			 */
			handoff_enter(h, HANDOFF_DRAINING);
			h2o_socket_read_start(h->sock, on_executor_read);
		}
		else if (h->state == HANDOFF_SENT && h->deadline != 0 &&
				 now >= TimestampTzPlusMilliseconds(h->deadline, SENT_GRACE_MS))
		{
			dlist_delete(&h->node);
			dlist_push_tail(&late, &h->node);
		}
	}
	/* A waiting request whose client left would hold a place it never uses. */
	dlist_foreach_modify(iter, &queued)
	{
		Handoff    *h = dlist_container(Handoff, node, iter.cur);

		if (hung_up(client_fd(h->req)))
		{
			dlist_delete(&h->node);
			dlist_push_tail(&gone, &h->node);
		}
	}
	while (!dlist_is_empty(&gone))
		handoff_end(dlist_container(Handoff, node, dlist_head_node(&gone)),
					HANDOFF_ABANDONED, 0, NULL, false);
	while (!dlist_is_empty(&late))
		handoff_end(dlist_container(Handoff, node, dlist_head_node(&late)),
					HANDOFF_TIMED_OUT, 504, "handler timed out", false);
	/* Admitting what waited above may have started the watch again. */
	if (!dlist_is_empty(&sent) || !dlist_is_empty(&queued))
		watch_clients();
}

/* Hands req to an executor, queueing it behind its route's cap. */
void
handoff_start(h2o_req_t *req, int64 route_id, int max_concurrency,
			  TimestampTz head_at, TimestampTz started, bool rerun,
			  const PhaseStates *states)
{
	Handoff    *h = MemoryContextAllocZero(TopMemoryContext, sizeof(Handoff));

	h->req = req;
	h->link = h2o_mem_alloc_shared(&req->pool, sizeof(HandoffLink), on_request_disposed);
	memset(h->link, 0, sizeof(HandoffLink));
	h->link->handoff = h;
	h->link->generator.proceed = on_proceed;
	h->limits = route_placement_get(route_id);
	h->cap = max_concurrency > 0 ? max_concurrency : route_placement_default_cap();
	h->meta.head_at = head_at;
	h->started = started;
	h->meta.route_id = route_id;
	h->meta.rerun = rerun;
	h->meta.states = *states;
	h->deadline = pipeline_deadline_from(head_at);

	if (route_placement_try_run(h->limits, h->cap))
	{
		handoff_enter(h, HANDOFF_SENT);
		send_to_executor(h);
		return;
	}
	if (!route_placement_try_queue(h->limits, webgres_max_queue))
	{
		route_stats_count_event(route_id, ROUTE_EVENT_QUEUE_FULL);
		handoff_end(h, HANDOFF_REFUSED, 503, "Service Unavailable", true);
		return;
	}
	handoff_enter(h, HANDOFF_QUEUED);
	dlist_push_tail(&queued, &h->node);
	if (!h2o_timeout_is_linked(&queue_entry))
		h2o_timeout_link(loop, &queue_timeout, &queue_entry);
	watch_clients();
}

/* At exit: gives back the shared counts this worker holds. */
static void
release_all(int code, Datum arg)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &queued)
		route_placement_leave_queue(dlist_container(Handoff, node, iter.cur)->limits);
	dlist_foreach_modify(iter, &sent)
		route_placement_end_run(dlist_container(Handoff, node, iter.cur)->limits);
	dlist_init(&queued);
	dlist_init(&sent);
}

/* Sets up the hand-off on the worker's loop; once per worker. */
void
handoff_init(h2o_evloop_t *evloop, const PhaseExit *exit)
{
	loop = evloop;
	exit_to = exit;
	h2o_timeout_init(loop, &queue_timeout, QUEUE_RETRY_MS);
	queue_entry.cb = on_queue_timeout;
	h2o_timeout_init(loop, &client_timeout, CLIENT_CHECK_MS);
	client_entry.cb = on_client_timeout;
	on_shmem_exit(release_all, (Datum) 0);
}

/* Defines webgres.max_queue; from _PG_init. */
void
handoff_define_settings(void)
{
	DefineCustomIntVariable("webgres.max_queue",
							"Most requests of one route that may wait for an executor.",
							"A request of a route that already runs max_concurrency requests "
							"waits in a queue; when that queue holds this many requests, it "
							"is answered 503 with Retry-After at once.",
							&webgres_max_queue,
							MAX_QUEUE_DEFAULT,
							0, MAX_QUEUE_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}
