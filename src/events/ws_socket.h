/*
 * ws_socket.h
 *		WebSocket connections held open on a worker's event loop.
 *
 * A WebSocket route's upgrade request is answered 101 by libh2o
 * (h2o_upgrade_to_websocket), whose wslay context reads and writes the
 * frames; this module keeps each socket: the messages the client sends,
 * queued and handed one at a time, in order, to a runner a higher floor
 * registers (exec/ws_dispatch.c runs them on the loop or an executor), the
 * messages sent back, the notifications events.c pushes, and the
 * protocol's limits (message size, UTF-8, pings, idle and token expiry, a
 * client that does not read).  docs/websocket.md has the whole story.
 */
#ifndef WEBGRES_WS_SOCKET_H
#define WEBGRES_WS_SOCKET_H

#include "lib/ilist.h"

#include "routes/routes.h"

struct st_h2o_req_t;
struct st_h2o_context_t;

typedef struct WsSocket WsSocket;

/* Close codes (RFC 6455, section 7.4.1). */
#define WS_CLOSE_NORMAL			1000
#define WS_CLOSE_GOING_AWAY		1001
#define WS_CLOSE_PROTOCOL		1002
#define WS_CLOSE_UNSUPPORTED	1003
#define WS_CLOSE_NO_STATUS		1005
#define WS_CLOSE_ABNORMAL		1006
#define WS_CLOSE_INVALID_DATA	1007
#define WS_CLOSE_POLICY			1008
#define WS_CLOSE_TOO_BIG		1009
#define WS_CLOSE_SERVER_ERROR	1011
#define WS_CLOSE_TRY_LATER		1013

/*
 * What a socket's handlers run with, fixed when it opens: its route's
 * statements, search_path and mode, the role the open handler ran as, and
 * the request's settings (request.jwt.claims and the others authentication
 * gave it).
 */
typedef struct WsHandlers
{
	int64		conn_id;		/* the connection's id, $1 of both statements */
	int64		route_id;		/* the route's, for mode auto's placement */
	RouteMode	mode;			/* where its calls run (exec/ws_dispatch.c) */
	Oid			role;			/* the role the handlers run as */
	const char *search_path;	/* the route's, or NULL */
	const char *on_message;		/* NULL: messages are read and dropped */
	const char *on_close;		/* NULL: nothing runs at the close */
	int			nsettings;
	const char **setting_names;
	const char **setting_values;
} WsHandlers;

/*
 * A WebSocket route's upgrade request, checked (serve/ws_admit.c) and
 * waiting for its open handler (events.c): in the request's memory.
 */
typedef struct WsOpen
{
	const char *key;			/* Sec-WebSocket-Key */
	int64		conn_id;		/* ws_next_conn_id() */
	const char *on_message;		/* the route's statements, or NULL */
	const char *on_close;
	const char *search_path;	/* the route's */
	Oid			owner;			/* the route's owner: the role without a token's */
	int64		route_id;		/* the route's id and mode */
	RouteMode	mode;
} WsOpen;

/* What a call runs: a message, or the close. */
typedef enum WsCallKind
{
	WS_CALL_TEXT = 'T',
	WS_CALL_BINARY = 'B',
	WS_CALL_CLOSE = 'C'
} WsCallKind;

/*
 * One run of on_message or on_close, handed to the runner; the runner
 * sends back each result row with ws_call_reply() and ends with
 * ws_call_done().  The socket may close meanwhile: replies are then
 * dropped, and the call stays valid until it is done.
 */
typedef struct WsCall
{
	dlist_node	node;			/* in its socket's queue */
	WsSocket   *ws;
	const WsHandlers *handlers;
	WsCallKind	kind;
	int			close_code;		/* WS_CALL_CLOSE: the code the socket closed with */
	char	   *data;			/* the message (not NUL-terminated) */
	size_t		len;
} WsCall;

/* Runs a call, now or later; calls ws_call_done() once it is over. */
typedef void (*WsRunner) (WsCall *call);

/* Called once when the socket's transport is gone, before its close handler runs. */
typedef void (*WsGoneCallback) (WsSocket *ws, void *arg);

/* The webgres.websocket_* settings; from _PG_init. */
extern void ws_socket_define_settings(void);

/* Sets up the sweep on the worker's loop; once per worker. */
extern void ws_init(struct st_h2o_context_t *ctx);

/* The runner calls go to (exec/ws_dispatch.c); once per worker. */
extern void ws_set_runner(WsRunner runner);

/*
 * A new connection id for a socket about to open: unique on this server
 * while the worker lives (its process id, then a count).
 */
extern int64 ws_next_conn_id(void);

/*
 * Upgrades req (a checked handshake whose Sec-WebSocket-Key is key) to a
 * WebSocket that runs handlers (copied), sends first (len bytes, if any) as
 * its first text message, and calls gone once its transport is gone.
 */
extern WsSocket *ws_start(struct st_h2o_req_t *req, const char *key, const WsHandlers *handlers,
						  const char *first, size_t firstlen,
						  WsGoneCallback gone, void *arg);

/* Closes the socket with code at expires_at (seconds since 1970): its token's end. */
extern void ws_set_expiry(WsSocket *ws, int64 expires_at);

/*
 * Notes that the socket was opened as role, which route owner owner was
 * allowed to become (InvalidOid: no token), with a token the HS secret of
 * generation secret_generation signed or the keys file of generation
 * keys_generation verified (0: not that), for the checks below.
 */
extern void ws_set_identity(WsSocket *ws, Oid owner, Oid role, uint64 secret_generation,
							uint64 keys_generation);

/* How many open sockets ws_set_identity() noted. */
extern int	ws_identified_sockets(void);

/*
 * Closes with 1008 every socket opened as a role that allowed(owner, role)
 * no longer allows, or with a token verified by an HS secret or a keys file
 * of a generation other than the current one; each returns how many (and
 * logs them).
 */
extern int	ws_end_unauthorised(bool (*allowed) (Oid owner, Oid role));
extern int	ws_end_signer_changed(uint64 secret_current, uint64 keys_current);

/* Sends a text message (a notification), unless the socket is closing. */
extern void ws_push_text(WsSocket *ws, const char *data, size_t len);

/* True while some socket holds more than webgres.sse_buffer_limit unsent. */
extern bool ws_backlogged(void);

/* Sends one message of a call's result (binary: opcode 2), if its socket is open. */
extern void ws_call_reply(WsCall *call, bool binary, const char *data, size_t len);

/* A call is over (failed: close 1011); the socket's next call may run. */
extern void ws_call_done(WsCall *call, bool failed);

/* The worker is stopping: closes every socket with 1001. */
extern void ws_close_all(void);

/* What a text message is: UTF-8 (RFC 3629), and whether it has a NUL. */
typedef enum WsTextCheck
{
	WS_TEXT_OK,
	WS_TEXT_NUL,				/* valid, but Postgres' text cannot hold it */
	WS_TEXT_INVALID
} WsTextCheck;

extern WsTextCheck ws_text_check(const char *data, size_t len);

#endif
