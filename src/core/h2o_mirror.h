/*
 * h2o_mirror.h
 *		What webgres mirrors of libh2o's private structs, in one place.
 *
 * libh2o 2.2.5 exports neither its HTTP/1 connection nor its event-loop
 * socket, and webgres needs a field or two of each: the client timeouts
 * (http/timeouts.c) walk the HTTP/1 connections, and the hand-off
 * (exec/handoff.c) and the timeouts need a socket's descriptor.  Their
 * leading fields are mirrored here, from the 2.2.5 sources named above
 * each, and checked once per worker, at start-up, against live objects of
 * h2o's own making (h2o_mirror_check).  A mirror that does not match is
 * not used: its users fall back to what h2o does by itself, and the worker
 * says so in the log.
 */
#ifndef WEBGRES_H2O_MIRROR_H
#define WEBGRES_H2O_MIRROR_H

#include <h2o.h>

/* The libh2o release the mirrors are taken from. */
#define H2O_MIRROR_VERSION "2.2.5"

/* The leading fields of lib/http1.c's struct st_h2o_http1_conn_t (2.2.5). */
typedef struct Http1ConnHead
{
	h2o_conn_t	super;
	h2o_socket_t *sock;
	h2o_linklist_t _conns;		/* in ctx->http1._conns */
	h2o_timeout_t *_timeout;	/* &ctx->http1.req_timeout while reading a request */
	h2o_timeout_entry_t _timeout_entry;
	uint64_t	_req_index;
	size_t		_prevreqlen;
	size_t		_reqsize;
	void	   *_req_entity_reader; /* non-NULL while reading a body */
} Http1ConnHead;

/* The leading fields of lib/common/socket/evloop.c.h's struct st_h2o_evloop_socket_t (2.2.5). */
typedef struct EvloopSocketHead
{
	h2o_socket_t super;
	int			fd;
} EvloopSocketHead;

/*
 * Checks every mirror above against objects h2o makes for a connection of
 * its own over a socket pair (closed again on the loop's next pass), and
 * logs a warning for any that does not match.  Once per worker, after ctx
 * and accept_ctx are set up and before any mirror is used.
 */
extern void h2o_mirror_check(h2o_context_t *ctx, h2o_accept_ctx_t *accept_ctx);

/* The descriptor of an event-loop socket; -1 if that mirror did not match. */
extern int	h2o_mirror_socket_fd(h2o_socket_t *sock);

/* The HTTP/1 connection of a node of ctx->http1._conns; NULL if that mirror did not match. */
extern Http1ConnHead *h2o_mirror_http1_conn(h2o_linklist_t *node);

#endif
