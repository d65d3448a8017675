/*
 * response_abort.h
 *		Cuts a response that h2o is still sending.
 *
 * A generator may hand h2o more (or the end, or an error) only after h2o
 * called its proceed, and a client that reads nothing never lets that
 * happen.  To cut such a response at once: on HTTP/2 its stream alone is
 * reset (RST_STREAM is not flow-controlled); on HTTP/1.x the connection is
 * shut down, so that h2o's pending write fails and h2o ends the request.
 * Either way the client sees the response cut, never complete.
 */
#ifndef WEBGRES_RESPONSE_ABORT_H
#define WEBGRES_RESPONSE_ABORT_H

#define H2O_USE_LIBUV 0
#include <h2o.h>

/*
 * Kept by the owner of a response that may be cut, for as long as its
 * request lives: an HTTP/2 reset is made from the loop's next pass, since
 * h2o then ends the request at once and its owner may still be using it.
 */
typedef struct ResponseAbort
{
	h2o_timeout_entry_t reset_due;
	h2o_req_t  *req;
} ResponseAbort;

/* Once per worker: the loop that makes the deferred resets. */
extern void response_abort_init(h2o_loop_t *loop);

/* Cuts req's response; a is where the owner keeps the reset due. */
extern void response_abort(ResponseAbort *a, h2o_req_t *req);

/*
 * Makes the coming close of a client's socket a reset (SO_LINGER 0): the
 * kernel drops what is still queued for the client at once instead of
 * holding it, in FIN-WAIT-1, for a peer that does not read.  For every
 * connection webgres cuts because its client does not read or ran out of
 * time, as nginx's reset_timedout_connection does.
 */
extern void response_abort_reset_on_close(int fd);

/* Forgets a reset not yet made: its request is going away first. */
extern void response_abort_forget(ResponseAbort *a);

#endif
