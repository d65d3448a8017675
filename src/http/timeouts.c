/*
 * timeouts.c
 *		Client timeouts: idle keep-alive, request head, request body, and
 *		the send timeout.
 *
 * libh2o 2.2.5 has one timer per connection, from the end of a response to
 * the end of the next request, and closes the connection silently when it
 * fires.  webgres wants three limits and a 408 for a client that started a
 * request and did not finish it, so it watches the connections itself: a
 * periodic sweep looks at each connection's state and how long it has been
 * in it.  h2o's timer stays as a backstop, set longer than the sum.
 *
 * A sweep visits every connection, so its cost grows with their number:
 * every 100 ms at 10,000 connections it was a few percent of a worker's
 * time, most of it cache misses on connections that are otherwise idle.
 * It therefore runs as often as the shortest timeout needs and no more: a
 * timeout fires at most a tenth of its length (and at least SWEEP_MIN_MS)
 * late.
 *
 * The send timeout (webgres.send_timeout) is the client's limit while it
 * is being answered: h2o waits for a write to complete for as long as the
 * client keeps its socket open, so a client that stops reading a large
 * response (HTTP/1 or HTTP/2) would hold its connection and the bytes
 * queued for it forever.  Progress is what the client acknowledges
 * (TCP_INFO's bytes acked), looked at only while bytes are queued for it
 * (SIOCOUTQ): a client that reads slowly but steadily acknowledges some
 * bytes between two sweeps, one whose receive window stays closed none.
 * Busy HTTP/1 connections and all HTTP/2 ones are looked at, and an idle
 * HTTP/1 connection once its idle limit is up: if its last response is
 * still on its way (h2o handed it all to the kernel), the client is not
 * idle but receiving, and only the send timeout may cut it.
 *
 * h2o does not export its HTTP/1 connection; its leading fields are
 * mirrored in core/h2o_mirror.h and checked when the worker starts.
 */
#include "postgres.h"

#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/http2.h>
#include <h2o/http2_internal.h>

#include "utils/guc.h"
#include "utils/memutils.h"

#include "core/h2o_mirror.h"
#include "http/body_early.h"
#include "http/timeouts.h"
#include "message/response_abort.h"

/*
 * The client timeouts' defaults and bounds, in milliseconds.  The most is
 * a quarter of INT_MAX so that timeouts_backstop_ms()'s sum of three
 * cannot overflow.
 */
#define TIMEOUT_MIN_MS 100
#define TIMEOUT_MAX_MS (INT_MAX / 4)
#define REQUEST_TIMEOUT_DEFAULT_MS 10000
#define HEADER_TIMEOUT_DEFAULT_MS 10000
#define BODY_TIMEOUT_DEFAULT_MS 30000
#define SEND_TIMEOUT_DEFAULT_MS 60000

/*
 * The client timeouts in milliseconds, read together by the sweep: the
 * settings (timeouts_define_settings) point into it.  tls.c reads the
 * header timeout through timeouts_header_ms().
 */
typedef struct TimeoutSettings
{
	int			request_ms;		/* webgres.request_timeout */
	int			header_ms;		/* webgres.header_timeout */
	int			body_ms;		/* webgres.body_timeout */
	int			send_ms;		/* webgres.send_timeout; 0: none */
} TimeoutSettings;

static TimeoutSettings timeouts = {
	.request_ms = REQUEST_TIMEOUT_DEFAULT_MS,
	.header_ms = HEADER_TIMEOUT_DEFAULT_MS,
	.body_ms = BODY_TIMEOUT_DEFAULT_MS,
	.send_ms = SEND_TIMEOUT_DEFAULT_MS
};

/* The sweep runs every SWEEP_SHARE-th of the shortest timeout, within these. */
#define SWEEP_SHARE 10
#define SWEEP_MIN_MS 100
#define SWEEP_MAX_MS 1000
/* h2o's own timer fires this long after webgres' three limits together. */
#define BACKSTOP_MARGIN_MS 1000

typedef enum ConnPhase
{
	PHASE_IDLE,					/* waiting for the first byte of a request */
	PHASE_HEAD,					/* part of a request head has arrived */
	PHASE_BODY,					/* reading a request body */
	PHASE_BUSY					/* being answered: not the client's time */
} ConnPhase;

typedef struct ConnWatch
{
	h2o_conn_t *conn;			/* an HTTP/1 or an HTTP/2 connection */
	struct timeval connected_at;	/* conn's memory is reused by later connections */
	uint64_t	req_index;
	ConnPhase	phase;
	uint64_t	since;
	bool		closing;
	bool		sending;		/* bytes were queued for the client at the last look */
	uint64_t	acked;			/* bytes the client had acknowledged then */
	uint64_t	stalled_since;	/* when it last acknowledged some (or the queue began) */
} ConnWatch;

static h2o_context_t *watched;
static h2o_timeout_t sweep_timeout;
static h2o_timeout_entry_t sweep_entry;
static ConnWatch *watches;
static int	nwatches;

/* webgres.header_timeout in milliseconds (timeouts.h). */
int
timeouts_header_ms(void)
{
	return timeouts.header_ms;
}

/* How long h2o's own timer waits: beyond the sum of webgres' three limits. */
unsigned long
timeouts_backstop_ms(void)
{
	return (unsigned long) timeouts.request_ms + timeouts.header_ms +
		timeouts.body_ms + BACKSTOP_MARGIN_MS;
}

/* How long from one sweep to the next, for the timeouts now in force. */
static uint64_t
sweep_interval_ms(void)
{
	int			shortest = Min(timeouts.request_ms,
							   Min(timeouts.header_ms, timeouts.body_ms));

	if (timeouts.send_ms > 0)
		shortest = Min(shortest, timeouts.send_ms);

	return Max(SWEEP_MIN_MS, Min(SWEEP_MAX_MS, shortest / SWEEP_SHARE));
}

/* qsort and bsearch comparator: watches by their connection's address. */
static int
watch_cmp(const void *a, const void *b)
{
	const ConnWatch *wa = a;
	const ConnWatch *wb = b;

	return (wa->conn > wb->conn) - (wa->conn < wb->conn);
}

/* Which of the client's limits, if any, runs for connection c now. */
static ConnPhase
phase_of(Http1ConnHead *c)
{
	if (c->_req_entity_reader != NULL)
		return PHASE_BODY;
	if (c->_timeout != &watched->http1.req_timeout)
		return PHASE_BUSY;
	return (c->sock->input != NULL && c->sock->input->size > 0) ? PHASE_HEAD : PHASE_IDLE;
}

/* Bytes written to fd that the peer has not acknowledged yet; 0 if unknown. */
static int
queued_for_peer(int fd)
{
	int			unacked = 0;

	return ioctl(fd, SIOCOUTQ, &unacked) == 0 ? unacked : 0;
}

/* True if bytes sent on fd are still waiting for the peer to take them. */
static bool
peer_behind(int fd)
{
	return queued_for_peer(fd) > 0;
}

/* Sets *acked to the bytes of fd's output the peer has acknowledged; false if unknown. */
static bool
acked_by_peer(int fd, uint64_t *acked)
{
	struct tcp_info info;
	socklen_t	len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
		len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(info.tcpi_bytes_acked))
		return false;
	*acked = info.tcpi_bytes_acked;
	return true;
}

/*
 * Notes in w whether the client of fd takes what is sent to it, from old
 * (its last look, or NULL); true if bytes have waited for it, none of them
 * acknowledged, for webgres.send_timeout.  *queued is set to the bytes
 * waiting.  Cheap (one ioctl) when nothing is queued.
 */
static bool
send_stalled(ConnWatch *w, const ConnWatch *old, int fd, uint64_t now, int *queued)
{
	*queued = queued_for_peer(fd);
	w->sending = *queued > 0;
	if (!w->sending)
		return false;
	if (!acked_by_peer(fd, &w->acked))
	{
		/* Progress that cannot be measured is not taken for none. */
		w->stalled_since = now;
		return false;
	}
	if (old && old->sending && old->acked == w->acked)
		w->stalled_since = old->stalled_since;
	else
		w->stalled_since = now;
	return now - w->stalled_since >= (uint64_t) timeouts.send_ms;
}

/*
 * Resets a connection whose client has taken nothing for
 * webgres.send_timeout: SO_LINGER 0, then shutdown(), which fails h2o's
 * pending write and makes h2o close the connection; the close drops what
 * the kernel still holds for the client (message/response_abort.h).
 */
static void
cut_stalled(int fd, int queued)
{
	ereport(LOG,
			(errmsg("webgres resets a connection whose client is not taking its response"),
			 errdetail("%d bytes were waiting for it and none was acknowledged for %d ms (webgres.send_timeout).",
					   queued, timeouts.send_ms)));
	response_abort_reset_on_close(fd);
	shutdown(fd, SHUT_RDWR);
}

/* The watch of conn at the last sweep, or NULL if it is a new connection. */
static ConnWatch *
last_watch(h2o_conn_t *conn, ConnWatch *prev, int nprev)
{
	ConnWatch	key;
	ConnWatch  *old;

	if (nprev == 0)
		return NULL;
	key.conn = conn;
	old = bsearch(&key, prev, nprev, sizeof(ConnWatch), watch_cmp);
	if (old && (old->connected_at.tv_sec != conn->connected_at.tv_sec ||
				old->connected_at.tv_usec != conn->connected_at.tv_usec))
		return NULL;
	return old;
}

/*
 * Closes the connection under h2o: a 408 first if a request was under way,
 * then shutdown(), which h2o's read handler sees as the peer closing.  A
 * TLS connection gets no 408: its bytes would have to go through h2o's
 * encryption, which is h2o's to drive, and cleartext in a TLS stream is
 * garbage to the client.  A client that has not taken what was sent to it
 * (an earlier response still queued: it stopped reading) gets no 408
 * either, and its connection is reset, so that the kernel does not keep
 * the queue for it (message/response_abort.h).
 */
static void
expire(Http1ConnHead *c, bool answer)
{
	static const char resp[] =
		"HTTP/1.1 408 Request Timeout\r\n"
		"Connection: close\r\n"
		"Content-Type: text/plain; charset=utf-8\r\n"
		"Content-Length: 16\r\n"
		"\r\n"
		"Request Timeout\n";
	int			fd = h2o_mirror_socket_fd(c->sock);

	if (peer_behind(fd))
		response_abort_reset_on_close(fd);
	else if (answer && c->sock->ssl == NULL && write(fd, resp, sizeof(resp) - 1) < 0)
	{
		/* The client is gone or not reading: closing is all that is left. */
	}
	shutdown(fd, SHUT_RDWR);
}

/* Connections of both protocols the worker has now. */
static int
count_conns(void)
{
	int			n = 0;
	h2o_linklist_t *node;

	for (node = watched->http1._conns.next; node != &watched->http1._conns; node = node->next)
		n++;
	for (node = watched->http2._conns.next; node != &watched->http2._conns; node = node->next)
		n++;
	return n;
}

/*
 * Watches one HTTP/1 connection into w: notes when it entered its phase
 * (carried over from old), and closes it if it is past its phase's limit
 * or, while it is being answered, past the send timeout.  Only busy
 * connections and idle ones past their limit cost a system call.
 */
static void
watch_http1(Http1ConnHead *c, ConnWatch *w, const ConnWatch *old, uint64_t now)
{
	int			limit;
	int			queued;
	bool		expired;

	w->conn = &c->super;
	w->connected_at = c->super.connected_at;
	w->req_index = c->_req_index;
	w->phase = phase_of(c);
	w->closing = old ? old->closing : false;
	if (old && old->req_index == w->req_index && old->phase == w->phase)
		w->since = old->since;
	else
		w->since = now;

	if (w->closing)
		return;
	/* A body its route refuses is answered now, not once it has all come. */
	if (w->phase == PHASE_BODY && body_early_refuse(c))
	{
		w->closing = true;
		return;
	}
	switch (w->phase)
	{
		case PHASE_IDLE:
			limit = timeouts.request_ms;
			break;
		case PHASE_HEAD:
			limit = timeouts.header_ms;
			break;
		case PHASE_BODY:
			limit = timeouts.body_ms;
			break;
		default:
			limit = 0;
			break;
	}
	expired = limit > 0 && now - w->since >= (uint64_t) limit;

	/*
	 * Being answered, or idle past its limit with its last response still
	 * queued (it fits in the socket buffers, so h2o is done with it): the
	 * client is still receiving, and the send timeout is its limit.  An
	 * idle connection's time starts over when its client has taken all.
	 */
	if (timeouts.send_ms > 0 && (w->phase == PHASE_BUSY || (w->phase == PHASE_IDLE && expired)))
	{
		int			fd = h2o_mirror_socket_fd(c->sock);

		if (send_stalled(w, old, fd, now, &queued))
		{
			cut_stalled(fd, queued);
			w->closing = true;
			return;
		}
		if (w->sending)
			return;
		if (w->phase == PHASE_IDLE && old && old->sending)
		{
			w->since = now;
			return;
		}
	}
	if (expired)
	{
		expire(c, w->phase != PHASE_IDLE);
		w->closing = true;
	}
}

/*
 * Watches one HTTP/2 connection into w: only the send timeout, h2o's own
 * idle timeout being the rest.  An event stream cut for not reading resets
 * its stream alone; if the whole connection has stopped reading, this
 * resets the connection too.
 */
static void
watch_http2(h2o_http2_conn_t *conn, ConnWatch *w, const ConnWatch *old, uint64_t now)
{
	int			queued;

	w->conn = &conn->super;
	w->connected_at = conn->super.connected_at;
	w->req_index = 0;
	w->phase = PHASE_BUSY;
	w->since = now;
	w->closing = old ? old->closing : false;
	if (w->closing || conn->sock == NULL || timeouts.send_ms <= 0)
		return;
	if (send_stalled(w, old, h2o_socket_get_fd(conn->sock), now, &queued))
	{
		cut_stalled(h2o_socket_get_fd(conn->sock), queued);
		w->closing = true;
	}
}

/*
 * Visits every connection of the worker, notes when each entered its
 * phase or last saw its client take bytes (carried over from the last
 * sweep by the connection's address and connect time), and closes those
 * past their limit.
 */
static void
sweep(h2o_timeout_entry_t *entry)
{
	uint64_t	now = h2o_now(watched->loop);
	ConnWatch  *prev = watches;
	int			nprev = nwatches;
	int			n = 0;
	h2o_linklist_t *node;
	ConnWatch  *next;

	next = MemoryContextAllocZero(TopMemoryContext, sizeof(ConnWatch) * Max(count_conns(), 1));

	for (node = watched->http1._conns.next; node != &watched->http1._conns; node = node->next)
	{
		Http1ConnHead *c = h2o_mirror_http1_conn(node);

		if (c == NULL)
		{
			/* The mirror did not match at start-up (logged then): h2o's timer alone. */
			watched->http1.req_timeout.timeout = timeouts.request_ms;
			pfree(next);
			return;
		}
		watch_http1(c, &next[n], last_watch(&c->super, prev, nprev), now);
		n++;
	}
	for (node = watched->http2._conns.next; node != &watched->http2._conns; node = node->next)
	{
		h2o_http2_conn_t *conn = H2O_STRUCT_FROM_MEMBER(h2o_http2_conn_t, _conns, node);

		watch_http2(conn, &next[n], last_watch(&conn->super, prev, nprev), now);
		n++;
	}
	qsort(next, n, sizeof(ConnWatch), watch_cmp);
	if (prev)
		pfree(prev);
	watches = next;
	nwatches = n;

	/* h2o's own timer is the backstop; keep it beyond ours after a reload. */
	watched->http1.req_timeout.timeout = timeouts_backstop_ms();
	/* The entry is the only one on this timeout: its length may change. */
	sweep_timeout.timeout = sweep_interval_ms();
	h2o_timeout_link(watched->loop, &sweep_timeout, &sweep_entry);
}

/* Starts watching the connections of ctx. */
void
timeouts_start(h2o_context_t *ctx)
{
	watched = ctx;
	h2o_timeout_init(ctx->loop, &sweep_timeout, sweep_interval_ms());
	sweep_entry.cb = sweep;
	h2o_timeout_link(ctx->loop, &sweep_timeout, &sweep_entry);
}

/* Defines the client timeouts (docs/settings.md); from _PG_init. */
void
timeouts_define_settings(void)
{
	DefineCustomIntVariable("webgres.request_timeout",
							"Longest time an idle connection is kept open.",
							"A connection on which no byte of a request has arrived "
							"for this long, after it was opened or after its last "
							"response, is closed without a response.",
							&timeouts.request_ms,
							REQUEST_TIMEOUT_DEFAULT_MS,
							TIMEOUT_MIN_MS, TIMEOUT_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.header_timeout",
							"Longest time a client may take to send a request's line and headers.",
							"Counted from the first byte of the request. A client that "
							"takes longer is answered 408 and its connection closed, "
							"so slow clients cannot hold connections open.",
							&timeouts.header_ms,
							HEADER_TIMEOUT_DEFAULT_MS,
							TIMEOUT_MIN_MS, TIMEOUT_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.body_timeout",
							"Longest time a client may take to send a request's body.",
							"Counted from the end of the headers. A client that takes "
							"longer is answered 408 and its connection closed.",
							&timeouts.body_ms,
							BODY_TIMEOUT_DEFAULT_MS,
							TIMEOUT_MIN_MS, TIMEOUT_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.send_timeout",
							"Longest time a client may take no byte of a response being sent to it.",
							"While bytes wait for the client and it acknowledges none of "
							"them for this long, its connection (HTTP/1 or HTTP/2) is "
							"reset, so a client that stops reading cannot hold it and the "
							"kernel's queue for it. A client that reads slowly but steadily "
							"is not cut. 0 disables.",
							&timeouts.send_ms,
							SEND_TIMEOUT_DEFAULT_MS,
							0, TIMEOUT_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}
