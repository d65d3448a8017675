/*
 * ws_socket.c
 *		WebSocket connections held open on a worker's event loop.
 *
 * libh2o answers the upgrade (101, Sec-WebSocket-Accept) and hands the
 * socket to a wslay context, which does the framing: it refuses unmasked
 * client frames, reserved bits and opcodes, bad control frames and bad
 * close codes (closing with 1002), reassembles fragmented messages and
 * closes with 1009 one longer than webgres.websocket_max_message, closes
 * with 1007 a text message that is not UTF-8, answers pings and echoes a
 * close.  What it lacks is added here: a NUL in a text message, valid
 * UTF-8 that Postgres' text cannot hold, is refused with 1003, a client that sends nothing is pinged and, silent
 * for webgres.websocket_idle_timeout, closed (1001), a token's expiry
 * closes its socket (1008), and a client that does not read what it is sent
 * (more than webgres.sse_buffer_limit unsent for a second) is cut off with
 * a TCP reset.  No extension is negotiated: permessage-deflate is not
 * offered (wslay 1.1 has none).
 *
 * Messages from the client are queued on their socket and handed to the
 * runner one at a time, in order: a message handler that is slow delays
 * only its own socket, whose queue holds at most webgres.websocket_max_queue
 * messages; beyond that the socket is closed with 1013 and reset.
 *
 * As in sse.c, bytes are never handed to libh2o outside its loop's
 * callbacks: a socket with something to send is flushed (wslay's send, by
 * h2o_websocket_proceed) from the loop's next pass.  libh2o 2.2.5's own
 * send callback writes each piece wslay gives it on its own and refuses
 * the next until that write completes, a loop pass later: a message's
 * 2-byte header and its payload went out as two writes, two TCP segments.
 * The socket's send callback is replaced (gather_send) by one that gathers
 * what wslay has queued, frames and headers alike, into one buffer that
 * goes out in one write.
 */
#include "postgres.h"

#include <sys/socket.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/websocket.h>

#include "core/settings.h"
#include "events/sse.h"
#include "events/ws_socket.h"

/* How often the sweep looks at every socket (pings, idle, expiry, stalls). */
#define WS_SWEEP_MS 1000

/* How long a worker that is stopping waits for its sockets' closes to go out. */
#define WS_END_WAIT_MS 1000

/* How long a socket that sent its close waits for the client's. */
#define WS_CLOSE_WAIT_MS 2000

/*
 * Most bytes gathered for one write; past it the write starts and wslay
 * keeps the rest queued until that write completes.
 */
#define WS_GATHER_MAX (64 * 1024)

/* The bit of a frame's first byte that marks a control frame (close, ping, pong). */
#define WS_OPCODE_CONTROL_BIT 0x08

/* How long a socket may hold more than webgres.sse_buffer_limit unsent. */
#define WS_STALL_GRACE_MS 1000

/*
 * The settings' defaults and bounds.  The longest message allowed is at
 * least the 125 bytes a control frame's payload may hold (RFC 6455, 5.5).
 */
#define WS_MAX_MESSAGE_DEFAULT (1024 * 1024)
#define WS_MAX_MESSAGE_MIN 125
#define WS_MAX_MESSAGE_LIMIT (64 * 1024 * 1024)
#define WS_MAX_QUEUE_DEFAULT 64
#define WS_MAX_QUEUE_LIMIT 65536
#define WS_PING_INTERVAL_DEFAULT_MS 30000
#define WS_IDLE_TIMEOUT_DEFAULT_MS 120000

/*
 * The webgres.websocket_* settings (ws_socket_define_settings), read
 * together by the sockets: the GUCs point into it.
 */
typedef struct WsSettings
{
	int			max_message;	/* bytes */
	int			max_queue;		/* messages */
	int			ping_interval_ms;	/* 0: no pings */
	int			idle_timeout_ms;	/* 0: never */
} WsSettings;

static WsSettings ws_settings = {
	.max_message = WS_MAX_MESSAGE_DEFAULT,
	.max_queue = WS_MAX_QUEUE_DEFAULT,
	.ping_interval_ms = WS_PING_INTERVAL_DEFAULT_MS,
	.idle_timeout_ms = WS_IDLE_TIMEOUT_DEFAULT_MS
};

struct WsSocket
{
	h2o_websocket_conn_t *conn; /* NULL once the transport is gone */
	dlist_node	node;			/* in all_sockets */
	dlist_node	over_node;		/* in over_sockets while over */
	MemoryContext cxt;			/* the socket's own memory */
	WsHandlers	handlers;
	dlist_head	queue;			/* of WsCall, waiting to run */
	int			nqueued;
	WsCall	   *running;		/* handed to the runner, not done yet */
	bool		closing;		/* our close is queued: no more messages either way */
	bool		over;			/* holds more than the buffer limit unsent */
	TimestampTz closing_at;
	TimestampTz last_recv;		/* a frame of any kind came */
	TimestampTz last_ping;
	TimestampTz over_since;
	int64		expires_at;		/* seconds since 1970; 0: never */
	Oid			auth_owner;		/* the route owner that chose auth_role; invalid: none */
	Oid			auth_role;
	uint64		secret_generation;	/* of the HS secret that signed its token; 0: none */
	uint64		keys_generation;	/* of the keys file that verified it; 0: none */
	h2o_timeout_entry_t flush_due;	/* linked while bytes wait for the loop */
	h2o_timeout_entry_t dispatch_due;	/* linked while a call may start */
	StringInfoData gathered;	/* bytes for the next write (gather_send) */
	bool		gathered_writing;	/* they are being written */
	bool		gather_in_frame;	/* the next piece is a frame's payload */
	bool		gather_control; /* the frame being gathered is a control frame */
	WsGoneCallback gone;
	void	   *gone_arg;
};

static dlist_head all_sockets = DLIST_STATIC_INIT(all_sockets);
static dlist_head over_sockets = DLIST_STATIC_INIT(over_sockets);	/* those with over set */
static int	nidentified = 0;	/* open sockets with auth_owner or secret_generation set */
static uint32 conn_counter = 0;
static MemoryContext ws_cxt;
static h2o_loop_t *loop;
static h2o_timeout_t zero_timeout;
static h2o_timeout_t sweep_timeout;
static h2o_timeout_entry_t sweep_entry;
static WsRunner runner;

/* Defines the webgres.websocket_* settings. */
void
ws_socket_define_settings(void)
{
	DefineCustomIntVariable("webgres.websocket_max_message",
							"Largest message a WebSocket client may send, fragments together.",
							"A longer one closes the socket with code 1009.",
							&ws_settings.max_message,
							WS_MAX_MESSAGE_DEFAULT, WS_MAX_MESSAGE_MIN, WS_MAX_MESSAGE_LIMIT,
							PGC_SIGHUP, GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("webgres.websocket_max_queue",
							"Messages of one WebSocket that may wait for its message handler.",
							"A client that sends more while its handler runs is closed with "
							"code 1013 and its connection reset.",
							&ws_settings.max_queue,
							WS_MAX_QUEUE_DEFAULT, 1, WS_MAX_QUEUE_LIMIT,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("webgres.websocket_ping_interval",
							"Silence after which a WebSocket client is sent a ping.",
							"0 sends none.",
							&ws_settings.ping_interval_ms,
							WS_PING_INTERVAL_DEFAULT_MS, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("webgres.websocket_idle_timeout",
							"Silence after which a WebSocket is closed (code 1001).",
							"A client's pong counts: one that answers pings stays. 0: never.",
							&ws_settings.idle_timeout_ms,
							WS_IDLE_TIMEOUT_DEFAULT_MS, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* Whether data is UTF-8 (RFC 3629: no surrogates, no overlongs), and has a NUL. */
WsTextCheck
ws_text_check(const char *data, size_t len)
{
	const unsigned char *s = (const unsigned char *) data;
	bool		nul = false;

	while (len > 0)
	{
		int			l;

		if (*s == 0)
		{
			nul = true;
			s++;
			len--;
			continue;
		}
		l = pg_utf_mblen(s);
		if ((size_t) l > len || !pg_utf8_islegal(s, l))
			return WS_TEXT_INVALID;
		s += l;
		len -= l;
	}
	return nul ? WS_TEXT_NUL : WS_TEXT_OK;
}

/* A new connection id: the worker's process id, then a count. */
int64
ws_next_conn_id(void)
{
	return ((int64) MyProcPid << 32) | (int64) ++conn_counter;
}

/* Hands what the socket has to send to libh2o on the loop's next pass. */
static void
flush_soon(WsSocket *ws)
{
	if (ws->conn != NULL && ws->conn->sock != NULL && !h2o_timeout_is_linked(&ws->flush_due))
		h2o_timeout_link(loop, &zero_timeout, &ws->flush_due);
}

/* Lets the socket's next call start on the loop's next pass. */
static void
dispatch_soon(WsSocket *ws)
{
	if (!h2o_timeout_is_linked(&ws->dispatch_due))
		h2o_timeout_link(loop, &zero_timeout, &ws->dispatch_due);
}

/* Notes whether the socket holds more than the buffer limit unsent. */
static void
check_backlog(WsSocket *ws)
{
	bool		over = ws->conn != NULL &&
		wslay_event_get_queued_msg_length(ws->conn->ws_ctx) > sse_buffer_limit_bytes();

	if (over && !ws->over)
	{
		dlist_push_tail(&over_sockets, &ws->over_node);
		ws->over_since = GetCurrentTimestamp();
	}
	else if (!over && ws->over)
		dlist_delete(&ws->over_node);
	ws->over = over;
}

/* Queues our close with code and reason; the client's close ends it. */
static void
close_with(WsSocket *ws, int code, const char *reason)
{
	if (ws->conn == NULL || ws->closing)
		return;
	ws->closing = true;
	ws->closing_at = GetCurrentTimestamp();
	(void) wslay_event_queue_close(ws->conn->ws_ctx, code, (const uint8_t *) reason, strlen(reason));
	flush_soon(ws);
}

/* Frees the socket once its transport is gone and its calls are done. */
static void
release_if_done(WsSocket *ws)
{
	if (ws->conn != NULL || ws->running != NULL || ws->nqueued > 0)
		return;
	if (h2o_timeout_is_linked(&ws->flush_due))
		h2o_timeout_unlink(&ws->flush_due);
	if (h2o_timeout_is_linked(&ws->dispatch_due))
		h2o_timeout_unlink(&ws->dispatch_due);
	dlist_delete(&ws->node);
	MemoryContextDelete(ws->cxt);
}

/* Queues a call of the socket's handlers; false if the queue is full. */
static bool
enqueue(WsSocket *ws, WsCallKind kind, int close_code, const char *data, size_t len)
{
	WsCall	   *call;

	if (ws->nqueued >= ws_settings.max_queue && kind != WS_CALL_CLOSE)
		return false;
	call = MemoryContextAllocZero(ws->cxt, sizeof(WsCall));
	call->ws = ws;
	call->handlers = &ws->handlers;
	call->kind = kind;
	call->close_code = close_code;
	call->len = len;
	call->data = MemoryContextAlloc(ws->cxt, len + 1);
	memcpy(call->data, data, len);
	call->data[len] = '\0';
	dlist_push_tail(&ws->queue, &call->node);
	ws->nqueued++;
	dispatch_soon(ws);
	return true;
}

/* Cuts the connection at once, with a TCP reset: a client that broke the rules. */
static void
cut(WsSocket *ws)
{
	struct linger reset = {1, 0};

	if (ws->conn == NULL || ws->conn->sock == NULL)
		return;
	(void) setsockopt(h2o_socket_get_fd(ws->conn->sock), SOL_SOCKET, SO_LINGER,
					  &reset, sizeof(reset));
	/* Ends it as a close would; the transport's end is the same. */
	(*ws->conn->cb) (ws->conn, NULL);
}

/* The transport is gone: runs the close handler after the queued messages. */
static void
transport_gone(WsSocket *ws)
{
	int			code = WS_CLOSE_ABNORMAL;
	h2o_websocket_conn_t *conn = ws->conn;

	if (wslay_event_get_close_received(conn->ws_ctx))
		code = wslay_event_get_status_code_received(conn->ws_ctx);
	if (ws->over)
		dlist_delete(&ws->over_node);
	ws->over = false;
	if (OidIsValid(ws->auth_owner) || ws->secret_generation != 0 || ws->keys_generation != 0)
		nidentified--;
	ws->conn = NULL;
	h2o_websocket_close(conn);
	if (ws->gone != NULL)
		ws->gone(ws, ws->gone_arg);
	if (ws->handlers.on_close != NULL)
		(void) enqueue(ws, WS_CALL_CLOSE, code, "", 0);
	release_if_done(ws);
}

/*
 * A write of the gathered bytes completed: they may go, and wslay may send
 * what it queued meanwhile (as libh2o's own completion does).
 */
static void
on_gathered_written(h2o_socket_t *sock, const char *err)
{
	h2o_websocket_conn_t *conn = sock->data;
	WsSocket   *ws = conn->data;

	ws->gathered_writing = false;
	/* A large batch's buffer is not kept for the next. */
	if (ws->gathered.maxlen > WS_GATHER_MAX)
	{
		pfree(ws->gathered.data);
		ws->gathered.data = NULL;
	}
	else
		resetStringInfo(&ws->gathered);
	if (err != NULL)
	{
		(*conn->cb) (conn, NULL);
		return;
	}
	h2o_websocket_proceed(conn);
}

/* Starts the write of the gathered bytes, if there are some and none is under way. */
static void
write_gathered(WsSocket *ws)
{
	h2o_iovec_t buf;

	if (ws->gathered_writing || ws->gathered.data == NULL || ws->gathered.len == 0 ||
		ws->conn == NULL || ws->conn->sock == NULL)
		return;
	ws->gathered_writing = true;
	buf = h2o_iovec_init(ws->gathered.data, ws->gathered.len);
	h2o_socket_write(ws->conn->sock, &buf, 1, on_gathered_written);
}

/*
 * wslay's send callback: takes all it is given into the socket's gathered
 * bytes.  wslay gives a frame's header (flagged WSLAY_MSG_MORE when a
 * payload follows) and then its payload.  The write starts at the end of a
 * frame once wslay's queue holds no other message (the message being sent
 * is counted until its last piece has gone), at the end of a control
 * frame (a close, which may go ahead of queued messages, is the last
 * thing sent: libh2o closes a socket that has nothing being written and
 * nothing left to send), or once WS_GATHER_MAX is reached.  While a write
 * is under way wslay is told to wait, and sends again when it completes.
 */
static ssize_t
gather_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
			void *user_data)
{
	h2o_websocket_conn_t *conn = user_data;
	WsSocket   *ws = conn->data;
	bool		frame_ends = (flags & WSLAY_MSG_MORE) == 0;

	if (ws->gathered_writing || conn->sock == NULL)
	{
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (ws->gathered.data == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ws->cxt);

		initStringInfo(&ws->gathered);
		MemoryContextSwitchTo(oldcxt);
	}
	if (!ws->gather_in_frame && len > 0)
		ws->gather_control = (data[0] & WS_OPCODE_CONTROL_BIT) != 0;
	ws->gather_in_frame = !frame_ends;
	appendBinaryStringInfo(&ws->gathered, (const char *) data, len);
	if ((frame_ends && (ws->gather_control || wslay_event_get_queued_msg_count(ctx) <= 1)) ||
		ws->gathered.len >= WS_GATHER_MAX)
		write_gathered(ws);
	else if (frame_ends)
		flush_soon(ws);
	return (ssize_t) len;
}

/* libh2o: a message came (arg), or the socket closed (NULL). */
static void
on_ws_message(h2o_websocket_conn_t *conn, const struct wslay_event_on_msg_recv_arg *arg)
{
	WsSocket   *ws = conn->data;

	if (arg == NULL)
	{
		ws->conn = conn;
		transport_gone(ws);
		return;
	}
	ws->last_recv = GetCurrentTimestamp();
	if (ws->closing)
		return;
	switch (arg->opcode)
	{
		case WSLAY_TEXT_FRAME:
			/* wslay checked it is UTF-8 (1007); a NUL is, but no text value can hold it. */
			if (memchr(arg->msg, '\0', arg->msg_length) != NULL)
			{
				close_with(ws, WS_CLOSE_UNSUPPORTED, "text with NUL");
				return;
			}
			/* FALLTHROUGH */
		case WSLAY_BINARY_FRAME:
			if (ws->handlers.on_message == NULL)
				return;
			if (!enqueue(ws, arg->opcode == WSLAY_TEXT_FRAME ? WS_CALL_TEXT : WS_CALL_BINARY, 0,
						 (const char *) arg->msg, arg->msg_length))
			{
				ereport(LOG,
						(errmsg("webgres WebSocket %lld closed: more than %d messages waiting",
								(long long) ws->handlers.conn_id, ws_settings.max_queue),
						 errhint("Raise webgres.websocket_max_queue, or make the route's on_message faster.")));
				close_with(ws, WS_CLOSE_TRY_LATER, "too many messages waiting");
				/* No grace for its close: the next sweep resets the connection. */
				ws->closing_at = 0;
			}
			return;
		default:
			/* Pings are answered and closes echoed by wslay; pongs only count as life. */
			return;
	}
}

/* The loop's next pass: hands what the socket has to send to libh2o. */
static void
on_flush_due(h2o_timeout_entry_t *entry)
{
	WsSocket   *ws = H2O_STRUCT_FROM_MEMBER(WsSocket, flush_due, entry);

	if (ws->conn != NULL && ws->conn->sock != NULL)
	{
		/* Bytes gathered with no write started yet go first. */
		write_gathered(ws);
		h2o_websocket_proceed(ws->conn);
		/* proceed may have ended the socket (and freed it, with nothing queued). */
	}
}

/* The loop's next pass: hands the socket's next call to the runner. */
static void
on_dispatch_due(h2o_timeout_entry_t *entry)
{
	WsSocket   *ws = H2O_STRUCT_FROM_MEMBER(WsSocket, dispatch_due, entry);
	WsCall	   *call;

	if (ws->running != NULL)
		return;
	if (ws->nqueued == 0)
	{
		release_if_done(ws);
		return;
	}
	call = dlist_container(WsCall, node, dlist_pop_head_node(&ws->queue));
	ws->nqueued--;
	ws->running = call;
	if (runner != NULL)
		runner(call);
	else
		ws_call_done(call, true);
}

/* Sends one message of a call's result, if its socket is still open. */
void
ws_call_reply(WsCall *call, bool binary, const char *data, size_t len)
{
	WsSocket   *ws = call->ws;
	struct wslay_event_msg msg;

	if (ws->conn == NULL || ws->closing)
		return;
	msg.opcode = binary ? WSLAY_BINARY_FRAME : WSLAY_TEXT_FRAME;
	msg.msg = (const uint8_t *) data;
	msg.msg_length = len;
	if (wslay_event_queue_msg(ws->conn->ws_ctx, &msg) != 0)
		return;
	check_backlog(ws);
	flush_soon(ws);
}

/* A call is over; its socket's next one may start. */
void
ws_call_done(WsCall *call, bool failed)
{
	WsSocket   *ws = call->ws;

	Assert(ws->running == call);
	ws->running = NULL;
	if (failed && call->kind != WS_CALL_CLOSE)
		close_with(ws, WS_CLOSE_SERVER_ERROR, "message handler failed");
	pfree(call->data);
	pfree(call);
	dispatch_soon(ws);
}

/* Sends a notification as a text message. */
void
ws_push_text(WsSocket *ws, const char *data, size_t len)
{
	struct wslay_event_msg msg;

	if (ws->conn == NULL || ws->closing)
		return;
	msg.opcode = WSLAY_TEXT_FRAME;
	msg.msg = (const uint8_t *) data;
	msg.msg_length = len;
	if (wslay_event_queue_msg(ws->conn->ws_ctx, &msg) != 0)
		return;
	check_backlog(ws);
	flush_soon(ws);
}

/*
 * Whether some socket holds more than the buffer limit unsent.  libh2o
 * drains a socket's queue as its writes complete, with no word to this
 * module, so the sockets marked over are looked at again here.
 */
bool
ws_backlogged(void)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &over_sockets)
		check_backlog(dlist_container(WsSocket, over_node, iter.cur));
	return !dlist_is_empty(&over_sockets);
}

/* Closes the socket with 1008 once its token expires. */
void
ws_set_expiry(WsSocket *ws, int64 expires_at)
{
	ws->expires_at = expires_at;
}

/*
 * Notes the route owner and the role it chose, and what verified the
 * token: the HS secret's or the keys file's generation (0: not that).
 */
void
ws_set_identity(WsSocket *ws, Oid owner, Oid role, uint64 secret_generation,
				uint64 keys_generation)
{
	if (ws->conn == NULL ||
		(!OidIsValid(owner) && secret_generation == 0 && keys_generation == 0))
		return;
	ws->auth_owner = owner;
	ws->auth_role = role;
	ws->secret_generation = secret_generation;
	ws->keys_generation = keys_generation;
	nidentified++;
}

/* How many open sockets were opened as a role or with an HS-signed token. */
int
ws_identified_sockets(void)
{
	return nidentified;
}

/* Closes with 1008 the sockets whose owner may no longer become their role. */
int
ws_end_unauthorised(bool (*allowed) (Oid owner, Oid role))
{
	dlist_iter	iter;
	int			ended = 0;

	dlist_foreach(iter, &all_sockets)
	{
		WsSocket   *ws = dlist_container(WsSocket, node, iter.cur);

		if (ws->conn == NULL || ws->closing || !OidIsValid(ws->auth_owner) ||
			allowed(ws->auth_owner, ws->auth_role))
			continue;
		close_with(ws, WS_CLOSE_POLICY, "role no longer allowed");
		ended++;
	}
	if (ended > 0)
		ereport(LOG,
				(errmsg("webgres closes %d WebSocket(s) whose role may no longer be used by the route's owner",
						ended)));
	return ended;
}

/* Closes with 1008 the sockets whose token another HS secret or keys file would not verify. */
int
ws_end_signer_changed(uint64 secret_current, uint64 keys_current)
{
	dlist_iter	iter;
	int			ended = 0;

	dlist_foreach(iter, &all_sockets)
	{
		WsSocket   *ws = dlist_container(WsSocket, node, iter.cur);

		if (ws->conn == NULL || ws->closing ||
			((ws->secret_generation == 0 || ws->secret_generation == secret_current) &&
			 (ws->keys_generation == 0 || ws->keys_generation == keys_current)))
			continue;
		close_with(ws, WS_CLOSE_POLICY, "token's secret or keys changed");
		ended++;
	}
	if (ended > 0)
		ereport(LOG,
				(errmsg("webgres closes %d WebSocket(s) opened with a token whose JWT secret or keys have changed",
						ended)));
	return ended;
}

/* Copies a string into cxt; NULL stays NULL. */
static char *
copy_string(MemoryContext cxt, const char *s)
{
	return s == NULL ? NULL : MemoryContextStrdup(cxt, s);
}

/* Upgrades req to a WebSocket running handlers. */
WsSocket *
ws_start(h2o_req_t *req, const char *key, const WsHandlers *handlers,
		 const char *first, size_t firstlen, WsGoneCallback gone, void *arg)
{
	MemoryContext cxt = AllocSetContextCreate(ws_cxt, "webgres WebSocket",
											  ALLOCSET_SMALL_SIZES);
	WsSocket   *ws = MemoryContextAllocZero(cxt, sizeof(WsSocket));
	WsHandlers *h = &ws->handlers;
	struct wslay_event_callbacks callbacks;

	ws->cxt = cxt;
	h->conn_id = handlers->conn_id;
	h->route_id = handlers->route_id;
	h->mode = handlers->mode;
	h->role = handlers->role;
	h->search_path = copy_string(cxt, handlers->search_path);
	h->on_message = copy_string(cxt, handlers->on_message);
	h->on_close = copy_string(cxt, handlers->on_close);
	h->nsettings = handlers->nsettings;
	h->setting_names = MemoryContextAlloc(cxt, sizeof(char *) * Max(h->nsettings, 1));
	h->setting_values = MemoryContextAlloc(cxt, sizeof(char *) * Max(h->nsettings, 1));
	for (int i = 0; i < h->nsettings; i++)
	{
		h->setting_names[i] = copy_string(cxt, handlers->setting_names[i]);
		h->setting_values[i] = copy_string(cxt, handlers->setting_values[i]);
	}
	dlist_init(&ws->queue);
	ws->flush_due.cb = on_flush_due;
	ws->dispatch_due.cb = on_dispatch_due;
	ws->last_recv = ws->last_ping = GetCurrentTimestamp();
	ws->gone = gone;
	ws->gone_arg = arg;
	dlist_push_tail(&all_sockets, &ws->node);

	/* libh2o writes the 101 without the filters that add Server (security_headers.c). */
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, NULL,
				   H2O_STRLIT(WEBGRES_SERVER_NAME));
	ws->conn = h2o_upgrade_to_websocket(req, key, ws, on_ws_message);
	wslay_event_config_set_max_recv_msg_length(ws->conn->ws_ctx, ws_settings.max_message);
	/* libh2o's callbacks, but for sending: a write per batch, not per piece. */
	callbacks = ws->conn->ws_callbacks;
	callbacks.send_callback = gather_send;
	wslay_event_config_set_callbacks(ws->conn->ws_ctx, &callbacks);
	/* Goes out once the 101 has: libh2o then proceeds with the socket. */
	if (first != NULL && firstlen > 0)
	{
		struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t *) first, firstlen};

		(void) wslay_event_queue_msg(ws->conn->ws_ctx, &msg);
	}
	return ws;
}

/* Every second: pings, idle sockets, expired tokens, clients that do not read. */
static void
on_sweep(h2o_timeout_entry_t *entry)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		now_s = (int64) time(NULL);
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &all_sockets)
	{
		WsSocket   *ws = dlist_container(WsSocket, node, iter.cur);

		if (ws->conn == NULL || ws->conn->sock == NULL)
			continue;
		check_backlog(ws);
		if ((ws->closing && TimestampDifferenceExceeds(ws->closing_at, now, WS_CLOSE_WAIT_MS)) ||
			(ws->over && TimestampDifferenceExceeds(ws->over_since, now, WS_STALL_GRACE_MS)))
			cut(ws);
		else if (ws->expires_at > 0 && now_s >= ws->expires_at)
			close_with(ws, WS_CLOSE_POLICY, "token expired");
		else if (ws_settings.idle_timeout_ms > 0 &&
				 TimestampDifferenceExceeds(ws->last_recv, now, ws_settings.idle_timeout_ms))
			close_with(ws, WS_CLOSE_GOING_AWAY, "idle");
		else if (ws_settings.ping_interval_ms > 0 && !ws->closing &&
				 TimestampDifferenceExceeds(ws->last_recv, now, ws_settings.ping_interval_ms) &&
				 TimestampDifferenceExceeds(ws->last_ping, now, ws_settings.ping_interval_ms))
		{
			struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};

			(void) wslay_event_queue_msg(ws->conn->ws_ctx, &ping);
			ws->last_ping = now;
			flush_soon(ws);
		}
	}
	h2o_timeout_link(loop, &sweep_timeout, &sweep_entry);
}

/* Whether some socket has bytes to send or a write in flight. */
static bool
sockets_writing(void)
{
	dlist_iter	iter;

	dlist_foreach(iter, &all_sockets)
	{
		WsSocket   *ws = dlist_container(WsSocket, node, iter.cur);

		if (ws->conn != NULL && ws->conn->sock != NULL &&
			(wslay_event_want_write(ws->conn->ws_ctx) || h2o_socket_is_writing(ws->conn->sock) ||
			 (ws->gathered.data != NULL && ws->gathered.len > 0)))
			return true;
	}
	return false;
}

/* Closes every socket with 1001 (the worker is stopping) and waits (bounded) for the closes to go out. */
void
ws_close_all(void)
{
	dlist_iter	iter;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), WS_END_WAIT_MS);

	dlist_foreach(iter, &all_sockets)
	{
		WsSocket   *ws = dlist_container(WsSocket, node, iter.cur);

		close_with(ws, WS_CLOSE_GOING_AWAY, "server stopping");
	}
	while (sockets_writing() && GetCurrentTimestamp() < deadline)
		h2o_evloop_run(loop, 50);
}

/* Sets up the sweep; once per worker. */
void
ws_init(h2o_context_t *ctx)
{
	ws_cxt = AllocSetContextCreate(TopMemoryContext, "webgres WebSockets",
								   ALLOCSET_DEFAULT_SIZES);
	loop = ctx->loop;
	h2o_timeout_init(loop, &zero_timeout, 0);
	h2o_timeout_init(loop, &sweep_timeout, WS_SWEEP_MS);
	sweep_entry.cb = on_sweep;
	h2o_timeout_link(loop, &sweep_timeout, &sweep_entry);
}

/* The runner calls go to. */
void
ws_set_runner(WsRunner r)
{
	runner = r;
}
