/*
 * response_abort.c
 *		Cuts a response that h2o is still sending: an HTTP/2 stream reset,
 *		an HTTP/1.x connection shut down.  Contract in response_abort.h.
 *
 * libh2o 2.2.5 has no call to abandon a response while a send is
 * pending; its HTTP/2 stream reset is internal (http2_internal.h), used
 * here as h2o's own connection code uses it.
 */
#include "postgres.h"

#include <sys/socket.h>

#include "message/response_abort.h"

#include <h2o/http2.h>
#include <h2o/http2_internal.h>

static h2o_loop_t *abort_loop = NULL;
static h2o_timeout_t reset_timeout;	/* 0: the loop's next pass */

/* The reset is due: RST_STREAM (CANCEL) for the stream, which h2o then closes. */
static void
on_reset_due(h2o_timeout_entry_t *entry)
{
	ResponseAbort *a = H2O_STRUCT_FROM_MEMBER(ResponseAbort, reset_due, entry);
	h2o_http2_conn_t *conn = (h2o_http2_conn_t *) a->req->conn;
	h2o_http2_stream_t *stream = H2O_STRUCT_FROM_MEMBER(h2o_http2_stream_t, req, a->req);

	/* A connection already closing ends the request itself. */
	if (conn->state >= H2O_HTTP2_CONN_STATE_IS_CLOSING)
		return;
	h2o_http2_encode_rst_stream_frame(&conn->_write.buf, stream->stream_id,
									  -H2O_HTTP2_ERROR_CANCEL);
	h2o_http2_conn_request_write(conn);
	h2o_http2_stream_reset(conn, stream);
}

/* Sets up the deferred resets on the worker's loop; once. */
void
response_abort_init(h2o_loop_t *loop)
{
	abort_loop = loop;
	h2o_timeout_init(loop, &reset_timeout, 0);
}

/* Makes the coming close of fd a reset that drops what is queued for the peer. */
void
response_abort_reset_on_close(int fd)
{
	struct linger lg = {1, 0};

	/* A socket already gone has nothing queued; that is no error. */
	(void) setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Cuts req's response: its HTTP/2 stream reset next pass, or its connection reset. */
void
response_abort(ResponseAbort *a, h2o_req_t *req)
{
	h2o_socket_t *sock;

	a->req = req;
	if (req->version >= 0x200)
	{
		if (!h2o_timeout_is_linked(&a->reset_due))
		{
			a->reset_due.cb = on_reset_due;
			h2o_timeout_link(abort_loop, &reset_timeout, &a->reset_due);
		}
		return;
	}
	sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
	if (sock != NULL)
	{
		/* A client that reads nothing would keep what is queued for it. */
		response_abort_reset_on_close(h2o_socket_get_fd(sock));
		shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
	}
}

/* Forgets a reset that is due: the request goes first. */
void
response_abort_forget(ResponseAbort *a)
{
	if (h2o_timeout_is_linked(&a->reset_due))
		h2o_timeout_unlink(&a->reset_due);
}
