/*
 * exec_socket.c
 *		The Unix socket through which HTTP workers hand requests to executors.
 *
 * The socket lives in Linux's abstract namespace under a name that holds
 * the postmaster's PID, so several clusters on one machine never meet and
 * nothing is left in the file system after a crash.  An abstract name has
 * no file permissions: executors check each peer's credentials instead.
 *
 * The postmaster never accepts on the socket; it only keeps it open, so the
 * socket survives a crash restart of the children, which inherit it again.
 * This relies on children being forked, not exec'd: under EXEC_BACKEND no
 * socket is created and every handler runs on the event loop.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "miscadmin.h"

#include "exec/exec_socket.h"

/* The kernel caps this at net.core.somaxconn. */
#define EXEC_SOCKET_BACKLOG 4096

static int	listen_fd = -1;
static struct sockaddr_un addr;
static socklen_t addrlen = 0;

/* Fills addr with the abstract name "\0webgres-executors-<postmaster pid>". */
static void
make_address(pid_t postmaster_pid)
{
	int			n;

	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1,
				 "webgres-executors-%d", (int) postmaster_pid);
	addrlen = offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

/* Creates the executors' listening socket; in the postmaster, at library load. */
void
exec_socket_create(void)
{
#ifndef EXEC_BACKEND
	int			fd;

	make_address(getpid());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		ereport(FATAL,
				(errcode_for_socket_access(),
				 errmsg("could not create the webgres executor socket: %m")));
	if (bind(fd, (struct sockaddr *) &addr, addrlen) != 0 ||
		listen(fd, EXEC_SOCKET_BACKLOG) != 0)
		ereport(FATAL,
				(errcode_for_socket_access(),
				 errmsg("could not listen on the webgres executor socket \"@%s\": %m",
						addr.sun_path + 1)));
	listen_fd = fd;
#endif
}

/* The inherited listening socket (nonblocking), or -1 if there is none. */
int
exec_socket_listener(void)
{
	return listen_fd;
}

/* Opens a nonblocking connection to the executors' socket. */
int
exec_socket_connect(void)
{
	int			fd;

	if (listen_fd < 0)
	{
		errno = ENOTCONN;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* A Unix stream connect either completes at once or fails with EAGAIN. */
	if (connect(fd, (struct sockaddr *) &addr, addrlen) != 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		return -1;
	}
	return fd;
}

/* True if the peer of an accepted connection runs as this server's user. */
bool
exec_socket_peer_is_ours(int fd)
{
	struct ucred cred;
	socklen_t	len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return cred.uid == geteuid();
}
