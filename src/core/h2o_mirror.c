/*
 * h2o_mirror.c
 *		The start-up check of what webgres mirrors of libh2o (h2o_mirror.h).
 */
#include "postgres.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/http1.h>

#include "core/h2o_mirror.h"

/* Which mirrors matched h2o's objects at start-up. */
static bool socket_mirror_ok = false;
static bool http1_mirror_ok = false;

/* Whether the HTTP/1 connection h2o just made for sock, at connected_at, reads right through the mirror. */
static bool
http1_mirror_matches(h2o_context_t *ctx, h2o_socket_t *sock, struct timeval connected_at)
{
	h2o_linklist_t *node;

	for (node = ctx->http1._conns.next; node != &ctx->http1._conns; node = node->next)
	{
		Http1ConnHead *c = H2O_STRUCT_FROM_MEMBER(Http1ConnHead, _conns, node);

		if (c->sock != sock)
			continue;
		return c->super.ctx == ctx &&
			c->super.connected_at.tv_sec == connected_at.tv_sec &&
			c->super.connected_at.tv_usec == connected_at.tv_usec &&
			c->super.callbacks->get_socket != NULL &&
			c->super.callbacks->get_socket(&c->super) == sock &&
			sock->data == (void *) c &&
			c->_timeout == &ctx->http1.req_timeout &&
			c->_req_entity_reader == NULL;
	}
	return false;
}

/* Checks every mirror against live objects of h2o's; once per worker. */
void
h2o_mirror_check(h2o_context_t *ctx, h2o_accept_ctx_t *accept_ctx)
{
	int			sv[2];
	h2o_socket_t *sock;
	struct timeval connected_at;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		ereport(FATAL,
				(errcode_for_socket_access(),
				 errmsg("could not create a socket pair: %m")));
	sock = h2o_evloop_socket_create(ctx->loop, sv[0], 0);
	socket_mirror_ok = ((EvloopSocketHead *) sock)->fd == sv[0];
	if (socket_mirror_ok)
	{
		/* A connection of h2o's own, with nothing to read: it waits for a request head. */
		gettimeofday(&connected_at, NULL);
		h2o_http1_accept(accept_ctx, sock, connected_at);
		http1_mirror_ok = http1_mirror_matches(ctx, sock, connected_at);
	}
	else
		h2o_socket_close(sock);
	/* The peer's end closes: h2o closes its connection on the loop's next pass. */
	close(sv[1]);

	if (!socket_mirror_ok)
		ereport(WARNING,
				(errmsg("webgres does not recognise this libh2o build's sockets"),
				 errdetail("webgres.header_timeout and webgres.body_timeout are not enforced, "
						   "and a client that hangs up does not cancel its request on an executor."),
				 errhint("webgres is built for libh2o %s.", H2O_MIRROR_VERSION)));
	else if (!http1_mirror_ok)
		ereport(WARNING,
				(errmsg("webgres does not recognise this libh2o build's HTTP/1 connections"),
				 errdetail("webgres.header_timeout and webgres.body_timeout are not enforced; "
						   "webgres.request_timeout still closes slow connections."),
				 errhint("webgres is built for libh2o %s.", H2O_MIRROR_VERSION)));
}

/* An event-loop socket's descriptor, through the mirror; -1 if it did not match. */
int
h2o_mirror_socket_fd(h2o_socket_t *sock)
{
	return socket_mirror_ok ? ((EvloopSocketHead *) sock)->fd : -1;
}

/* The HTTP/1 connection of a node of ctx->http1._conns; NULL if its mirror did not match. */
Http1ConnHead *
h2o_mirror_http1_conn(h2o_linklist_t *node)
{
	return http1_mirror_ok ? H2O_STRUCT_FROM_MEMBER(Http1ConnHead, _conns, node) : NULL;
}
