/*
 * ws_admit.c
 *		The upgrade request of a WebSocket route, checked before its open
 *		handler runs.
 *
 * The pipeline has authenticated the request and counted it against the
 * route's rate limits by now, as for any route.  What is left is the
 * handshake itself and the origin: browsers do not preflight a WebSocket,
 * and send the cookies of its host with it whatever page opens it, so an
 * Origin other than the server's own, a trusted one or one the route's
 * CORS settings allow by name is refused (403) before any SQL runs.
 *
 * This step reads the request's HTTP version, which the pipeline otherwise
 * leaves to the worker: a WebSocket route never leaves the worker's loop
 * (handler_answers_event_stream), and libh2o upgrades only HTTP/1.1.
 */
#include "postgres.h"

#include "utils/guc.h"
#include "utils/memutils.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/websocket.h>

#include "serve/ws_admit.h"
#include "serve/auth.h"
#include "events/ws_socket.h"
#include "message/response.h"

/* The only version of the protocol there is (RFC 6455 section 4.1). */
#define WS_VERSION "13"

/* A Sec-WebSocket-Key is 16 bytes in base64: 22 characters and "==". */
#define WS_KEY_LEN 24

/* Whether key is 16 bytes in base64, as RFC 6455 asks. */
static bool
key_ok(const char *key, size_t len)
{
	if (len != WS_KEY_LEN || key[22] != '=' || key[23] != '=')
		return false;
	for (int i = 0; i < 22; i++)
		if (!(isalnum((unsigned char) key[i]) || key[i] == '+' || key[i] == '/'))
			return false;
	/* The 22nd character carries 2 bits: the rest of its 6 must be 0. */
	return strchr("AQgw", key[21]) != NULL;
}

/*
 * Whether req is a GET with Upgrade: websocket.  libh2o's HTTP/1 parser
 * takes the Upgrade header out of the headers into req->upgrade, and only
 * when Connection names upgrade.
 */
static bool
asks_for_websocket(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
		req->upgrade.base != NULL &&
		h2o_lcstris(req->upgrade.base, req->upgrade.len, H2O_STRLIT("websocket"));
}

/* Refuses with 426, naming what the client must use instead. */
static void
refuse_upgrade_required(h2o_req_t *req, const char *message, char **body, size_t *bodylen)
{
	response_simple(req, 426, message, body, bodylen);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_UPGRADE, NULL, H2O_STRLIT("websocket"));
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONNECTION, NULL, H2O_STRLIT("upgrade"));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("sec-websocket-version"), 0,
						  NULL, H2O_STRLIT(WS_VERSION));
}

/* Checks the handshake and origin; notes the upgrade in rd (ws_admit.h). */
bool
ws_admit(RequestData *rd, const Route *r, char **body, size_t *bodylen)
{
	h2o_req_t  *req = rd->req;
	const char *key = NULL;
	ssize_t		i;
	WsOpen	   *open;
	char	   *id;

	if (req->version >= 0x200)
	{
		refuse_upgrade_required(req, "A WebSocket needs HTTP/1.1.", body, bodylen);
		return false;
	}
	if (!asks_for_websocket(req))
	{
		refuse_upgrade_required(req, "This route is a WebSocket: send a GET with Upgrade: websocket.",
								body, bodylen);
		return false;
	}
	i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-key"), -1);
	if (i == -1 ||
		!key_ok(req->headers.entries[i].value.base, req->headers.entries[i].value.len) ||
		h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-key"), i) != -1 ||
		h2o_is_websocket_handshake(req, &key) != 0 || key == NULL)
	{
		response_simple(req, 400, "A WebSocket handshake needs one Sec-WebSocket-Key of 16 bytes in base64.",
						body, bodylen);
		return false;
	}
	i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("sec-websocket-version"), -1);
	if (i == -1 || !h2o_memis(req->headers.entries[i].value.base, req->headers.entries[i].value.len,
							  H2O_STRLIT(WS_VERSION)))
	{
		refuse_upgrade_required(req, "Only WebSocket version 13 is spoken here.", body, bodylen);
		return false;
	}
	i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
	if (i != -1 && !auth_origin_allowed(req, r, req->headers.entries[i].value.base,
										req->headers.entries[i].value.len))
	{
		response_simple(req, 403, "This origin may not open this WebSocket.", body, bodylen);
		return false;
	}

	open = MemoryContextAllocZero(rd->cxt, sizeof(WsOpen));
	open->key = key;
	open->conn_id = ws_next_conn_id();
	open->on_message = r->on_message;
	open->on_close = r->on_close;
	open->search_path = r->search_path;
	open->owner = r->owner;
	open->route_id = r->id;
	open->mode = r->mode;
	rd->upgrade = open;

	/* The open handler sees the id too; cleared with the request's other settings. */
	id = MemoryContextStrdup(rd->cxt, psprintf(INT64_FORMAT, open->conn_id));
	request_add_setting(rd, "request.websocket_id", id);
	(void) set_config_option("request.websocket_id", id, PGC_USERSET, PGC_S_OVERRIDE,
							 GUC_ACTION_SET, true, 0, false);
	return true;
}
