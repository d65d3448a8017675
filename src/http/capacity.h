/*
 * capacity.h
 *		How many client connections a worker holds, and how it accepts them.
 */
#ifndef WEBGRES_CAPACITY_H
#define WEBGRES_CAPACITY_H

#define H2O_USE_LIBUV 0
#include <h2o.h>

/* Raises the soft open file limit to the hard one; call once, at start. */
extern void capacity_raise_file_limit(int worker_index);

/* Starts counting connections on the loop; call once, before listening. */
extern void capacity_start(h2o_loop_t *loop, h2o_accept_ctx_t *accept_ctx);

/*
 * What serves a connection accepted from a listener; NULL for cleartext
 * HTTP/1.1 (and h2c), which h2o_accept() starts.
 */
typedef void (*CapacityStart) (h2o_socket_t *sock);

/* A listening socket to accept from, with the callback that accepts and what serves. */
extern void capacity_add_listener(h2o_socket_t *listener, h2o_socket_cb on_accept,
								  CapacityStart start);

/* Accepts what a listener has queued, within the limits. */
extern void capacity_accept(h2o_socket_t *listener);

/* Accepts more from listeners whose last batch was full; after each pass of the loop. */
extern void capacity_accept_queued(void);

/* Applies webgres.max_connections_per_worker (at start and after a reload). */
extern void capacity_configure(void);

/* Defines webgres.max_connections_per_worker; from _PG_init. */
extern void capacity_define_settings(void);

#endif
