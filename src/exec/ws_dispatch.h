/*
 * ws_dispatch.h
 *		Running a WebSocket's message and close handlers: on the worker's
 *		loop while they are fast, else on an executor.
 *
 * A worker runs each call (events/ws_socket.h) where its route's mode
 * says: on its own loop (mode inline; mode auto within
 * webgres.inline_budget while the route is fast) or on an executor, handed
 * over the executors' socket as a request is handed off: one connection per
 * call, a WS_FRAME_CALL frame out, then a frame per message of the result
 * and WS_FRAME_DONE (carrying the run's milliseconds) or WS_FRAME_FAILED
 * back.  With webgres.executors = 0 every call runs on the worker itself.
 */
#ifndef WEBGRES_WS_DISPATCH_H
#define WEBGRES_WS_DISPATCH_H

#include "lib/stringinfo.h"

struct st_h2o_evloop_t;

/* The frames of a call (types beside handoff_frame.h's). */
#define WS_FRAME_CALL	'W'		/* worker: the call */
#define WS_FRAME_TEXT	'T'		/* executor: a text message of the result */
#define WS_FRAME_BINARY 'Y'		/* executor: a binary message of the result */
#define WS_FRAME_DONE	'D'		/* executor: the call committed (payload: its ms) */
#define WS_FRAME_FAILED 'X'		/* executor: the call failed (logged there) */

/* Registers the runner with events/ws_socket.c; once per worker. */
extern void ws_dispatch_init(struct st_h2o_evloop_t *loop);

/*
 * Executor: runs the call in a WS_FRAME_CALL payload and appends the
 * answer's frames to out; false if the payload is malformed.
 */
extern bool ws_dispatch_serve(const char *payload, uint32 len, StringInfo out);

#endif
