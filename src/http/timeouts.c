/*
 * timeouts.c
 *		Client timeouts: idle keep-alive, request head, request body.
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
 * h2o does not export its HTTP/1 connection; its leading fields are
 * mirrored in common/h2o_mirror.h and checked when the worker starts.
 */
#include "postgres.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "utils/memutils.h"

#include "common/h2o_mirror.h"
#include "http/timeouts.h"
#include "message/response_abort.h"
#include "common/settings.h"

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
	Http1ConnHead *conn;
	struct timeval connected_at;	/* conn's memory is reused by later connections */
	uint64_t	req_index;
	ConnPhase	phase;
	uint64_t	since;
	bool		closing;
} ConnWatch;

static h2o_context_t *watched;
static h2o_timeout_t sweep_timeout;
static h2o_timeout_entry_t sweep_entry;
static ConnWatch *watches;
static int	nwatches;

/* How long h2o's own timer waits: beyond the sum of webgres' three limits. */
unsigned long
timeouts_backstop_ms(void)
{
	return (unsigned long) webgres_request_timeout + webgres_header_timeout +
		webgres_body_timeout + BACKSTOP_MARGIN_MS;
}

/* How long from one sweep to the next, for the timeouts now in force. */
static uint64_t
sweep_interval_ms(void)
{
	int			shortest = Min(webgres_request_timeout,
							   Min(webgres_header_timeout, webgres_body_timeout));

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

/* True if bytes sent on fd are still waiting for the peer to take them. */
static bool
peer_behind(int fd)
{
	int			unacked = 0;

	return ioctl(fd, SIOCOUTQ, &unacked) == 0 && unacked > 0;
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

/*
 * Visits every HTTP/1 connection of the worker, notes when each entered
 * its phase (carried over from the last sweep by the connection's address
 * and connect time), and closes those past their phase's limit.
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

	for (node = watched->http1._conns.next; node != &watched->http1._conns; node = node->next)
		n++;
	next = MemoryContextAlloc(TopMemoryContext, sizeof(ConnWatch) * Max(n, 1));

	n = 0;
	for (node = watched->http1._conns.next; node != &watched->http1._conns; node = node->next)
	{
		Http1ConnHead *c = h2o_mirror_http1_conn(node);
		ConnWatch	key;
		ConnWatch  *old;
		ConnWatch  *w = &next[n++];
		int			limit;

		if (c == NULL)
		{
			/* The mirror did not match at start-up (logged then): h2o's timer alone. */
			watched->http1.req_timeout.timeout = webgres_request_timeout;
			pfree(next);
			return;
		}
		key.conn = c;
		old = nprev ? bsearch(&key, prev, nprev, sizeof(ConnWatch), watch_cmp) : NULL;
		if (old && (old->connected_at.tv_sec != c->super.connected_at.tv_sec ||
					old->connected_at.tv_usec != c->super.connected_at.tv_usec))
			old = NULL;
		w->conn = c;
		w->connected_at = c->super.connected_at;
		w->req_index = c->_req_index;
		w->phase = phase_of(c);
		w->closing = old ? old->closing : false;
		if (old && old->req_index == w->req_index && old->phase == w->phase)
			w->since = old->since;
		else
			w->since = now;

		if (w->closing)
			continue;
		switch (w->phase)
		{
			case PHASE_IDLE:
				limit = webgres_request_timeout;
				break;
			case PHASE_HEAD:
				limit = webgres_header_timeout;
				break;
			case PHASE_BODY:
				limit = webgres_body_timeout;
				break;
			default:
				limit = 0;
				break;
		}
		if (limit > 0 && now - w->since >= (uint64_t) limit)
		{
			expire(c, w->phase != PHASE_IDLE);
			w->closing = true;
		}
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

/* Starts watching the HTTP/1 connections of ctx. */
void
timeouts_start(h2o_context_t *ctx)
{
	watched = ctx;
	h2o_timeout_init(ctx->loop, &sweep_timeout, sweep_interval_ms());
	sweep_entry.cb = sweep;
	h2o_timeout_link(ctx->loop, &sweep_timeout, &sweep_entry);
}
