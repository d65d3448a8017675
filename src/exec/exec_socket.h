/*
 * exec_socket.h
 *		The Unix socket through which HTTP workers hand requests to executors.
 *
 * The postmaster creates one listening socket when it loads the library;
 * every child inherits it across fork().  Executors accept on it, workers
 * connect to it, one connection per handed-off request.  The kernel's
 * accept queue is the queue of requests waiting for an executor.
 */
#ifndef WEBGRES_EXEC_SOCKET_H
#define WEBGRES_EXEC_SOCKET_H

#include <stdbool.h>

/* In the postmaster, at library load: creates the listening socket. */
extern void exec_socket_create(void);

/* The inherited listening socket (nonblocking), or -1 if there is none. */
extern int	exec_socket_listener(void);

/*
 * Opens a nonblocking connection to the executors' socket.  Returns the
 * descriptor, or -1 with errno set (EAGAIN: the accept queue is full).
 */
extern int	exec_socket_connect(void);

/* True if the peer of an accepted connection runs as this server's user. */
extern bool exec_socket_peer_is_ours(int fd);

#endif
