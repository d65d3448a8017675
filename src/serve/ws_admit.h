/*
 * ws_admit.h
 *		The upgrade request of a WebSocket route, checked before its open
 *		handler runs.
 */
#ifndef WEBGRES_WS_ADMIT_H
#define WEBGRES_WS_ADMIT_H

#include "message/request.h"
#include "routes/routes.h"

/*
 * Checks that rd's request is a WebSocket handshake route r may take
 * (RFC 6455 section 4.2.1, over HTTP/1.1) from an origin it allows, and
 * notes the upgrade in rd->upgrade, with the connection's id in the
 * setting request.websocket_id.  Otherwise shapes the refusal (400, 403,
 * 426) into req->res and *body, and returns false.
 */
extern bool ws_admit(RequestData *rd, const Route *r, char **body, size_t *bodylen);

#endif
