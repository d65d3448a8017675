/*
 * capacity.c
 *		How many client connections a worker holds, and how it accepts them.
 *
 * Each open connection costs the worker a file descriptor.  A worker raises
 * its soft RLIMIT_NOFILE to the hard limit at start, counts the connections
 * it holds (from accept to h2o's close of the socket), and stops reading its
 * listening sockets while it is at webgres.max_connections_per_worker or
 * while accept() fails for want of descriptors or memory: listening
 * sockets are level-triggered, so a worker that keeps watching one it
 * cannot accept from would spin.  New connections meanwhile wait in the
 * kernel's accept queue of that worker's socket.
 *
 * epoll reports a level-triggered listener among all the worker's ready
 * sockets, at most 256 a wait in libh2o: with thousands of busy
 * connections it came round once in many passes of the loop, and a burst
 * of new connections waited seconds in the queue (wrk's 10,000 pipelined
 * connections: 759 still queued after 6 s).  So after a batch that was
 * full, the listeners are accepted from again after every pass until they
 * run dry, whatever epoll reports.
 */
#include "postgres.h"

#include <sys/resource.h>

#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "http/capacity.h"
#include "http/h2_guard.h"
#include "core/stats.h"

/* webgres.max_connections_per_worker's most; 0, the default, sizes it from the file limit. */
#define MAX_CONNECTIONS_MAX (INT_MAX / 4)

/* webgres.max_connections_per_worker (capacity_define_settings). */
static int	webgres_max_connections_per_worker = 0;

/* Connections taken from a listener per pass, so that a burst cannot starve the rest. */
#define ACCEPT_BATCH 64

/* How long accepting pauses after accept() failed for want of resources. */
#define ACCEPT_BACKOFF_MS 100

/* Such failures are logged at most this often. */
#define ACCEPT_FAILURE_LOG_INTERVAL_MS 60000

/* Descriptors kept back from connections: listeners, pipes, epoll, logs, libraries. */
#define FILE_RESERVE 32

/* Used as the soft limit when the hard one is unlimited (Linux's default fs.nr_open). */
#define UNLIMITED_FILES_AS 1048576

/* Taken as the soft limit when it cannot be read (Linux's usual default). */
#define UNKNOWN_FILES_AS 1024

static h2o_loop_t *loop;
static h2o_accept_ctx_t *accept_ctx;
static h2o_socket_t **listeners;
static CapacityStart *starts;	/* what serves each listener's connections */
static bool queue_may_hold_more;	/* a batch was full since the last pass */
static int	nlisteners;
static h2o_socket_cb accept_cb;

static int	file_limit;			/* soft RLIMIT_NOFILE after raising it */
static int	connection_limit;	/* the cap in force */
static int	open_connections;

static bool backing_off;
static h2o_timeout_t backoff_timeout;
static h2o_timeout_entry_t backoff_entry;
static TimestampTz failure_logged_at;
static int64 failures_unlogged;

/* Raises the soft open file limit to the hard one and logs what the worker may hold. */
void
capacity_raise_file_limit(int worker_index)
{
	struct rlimit rl;
	rlim_t		before;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
	{
		ereport(WARNING,
				(errmsg("webgres worker %d could not read its open file limit: %m", worker_index)));
		file_limit = UNKNOWN_FILES_AS;
		return;
	}
	before = rl.rlim_cur;
	if (rl.rlim_cur != rl.rlim_max)
	{
		rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY) ? UNLIMITED_FILES_AS : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		{
			ereport(WARNING,
					(errmsg("webgres worker %d could not raise its open file limit from %lu to %lu: %m",
							worker_index, (unsigned long) before, (unsigned long) rl.rlim_cur)));
			rl.rlim_cur = before;
		}
	}
	file_limit = (rl.rlim_cur > INT_MAX / 2) ? INT_MAX / 2 : (int) rl.rlim_cur;
	capacity_configure();
	ereport(LOG,
			(errmsg("webgres worker %d may open %d files (soft limit was %lu) and holds at most %d connections",
					worker_index, file_limit, (unsigned long) before, connection_limit)));
}

/*
 * The most connections the descriptor limit leaves room for: PostgreSQL's
 * own files (max_safe_fds, from max_files_per_process) and a reserve come
 * first, but connections get at least half the limit, since PostgreSQL
 * closes its cached files when it runs short.
 */
static int
connections_files_allow(void)
{
	int			room = file_limit - max_safe_fds - FILE_RESERVE;

	return Max(room, file_limit / 2);
}

/* Reads the listening sockets exactly when a connection may be accepted. */
static void
update_listening(void)
{
	bool		accepting = !backing_off && open_connections < connection_limit;

	for (int i = 0; i < nlisteners; i++)
	{
		if (accepting && !h2o_socket_is_reading(listeners[i]))
			h2o_socket_read_start(listeners[i], accept_cb);
		else if (!accepting && h2o_socket_is_reading(listeners[i]))
			h2o_socket_read_stop(listeners[i]);
	}
}

/* Sets the cap in force from the setting and the descriptor limit. */
void
capacity_configure(void)
{
	int			allowed = connections_files_allow();

	connection_limit = (webgres_max_connections_per_worker > 0) ?
		Min(webgres_max_connections_per_worker, allowed) : allowed;
	update_listening();
}

/* h2o closed a connection's socket. */
static void
on_connection_close(void *data)
{
	open_connections--;
	stats_set_connections(open_connections);
	update_listening();
}

/* The pause after a failed accept() is over. */
static void
on_backoff_end(h2o_timeout_entry_t *entry)
{
	backing_off = false;
	update_listening();
}

/*
 * accept() failed for want of descriptors or memory: stop accepting for a
 * while rather than be woken again at once by the same queued connection.
 */
static void
back_off(int failure)
{
	TimestampTz now = GetCurrentTimestamp();

	backing_off = true;
	update_listening();
	h2o_timeout_link(loop, &backoff_timeout, &backoff_entry);

	failures_unlogged++;
	if (failure_logged_at != 0 &&
		!TimestampDifferenceExceeds(failure_logged_at, now, ACCEPT_FAILURE_LOG_INTERVAL_MS))
		return;
	errno = failure;
	ereport(LOG,
			(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
			 errmsg("webgres could not accept a connection: %m"),
			 errdetail("The worker holds %d connections and may open %d files; it stops accepting for %d ms each time. "
					   "This happened " INT64_FORMAT " times since last reported.",
					   open_connections, file_limit, ACCEPT_BACKOFF_MS, failures_unlogged),
			 errhint("Raise the hard open file limit of the server (LimitNOFILE for systemd, ulimit -Hn), "
					 "or lower webgres.max_connections_per_worker.")));
	failure_logged_at = now;
	failures_unlogged = 0;
}

/* What serves the connections of a listener. */
static CapacityStart
start_of(h2o_socket_t *listener)
{
	for (int i = 0; i < nlisteners; i++)
		if (listeners[i] == listener)
			return starts[i];
	return NULL;
}

/* Accepts a batch of queued connections, counting each until h2o closes it. */
void
capacity_accept(h2o_socket_t *listener)
{
	int			taken = 0;
	CapacityStart start = start_of(listener);

	for (int i = 0; i < ACCEPT_BATCH && !backing_off; i++)
	{
		h2o_socket_t *sock;

		if (open_connections >= connection_limit)
			break;
		if ((sock = h2o_evloop_socket_accept(listener)) == NULL)
		{
			/* h2o returns right after a failed accept4(): errno is its. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				back_off(errno);
			else if (errno == ECONNABORTED || errno == EINTR)
				continue;
			break;
		}
		open_connections++;
		taken++;
		sock->on_close.cb = on_connection_close;
		sock->on_close.data = NULL;
		if (start != NULL)
			start(sock);
		else
		{
			h2o_accept(accept_ctx, sock);
			h2_guard_accepted(sock);
		}
	}
	if (taken == ACCEPT_BATCH)
		queue_may_hold_more = true;
	stats_set_connections(open_connections);
	update_listening();
}

/*
 * After a pass of the loop: if a batch was full, more from every listener
 * (one that has nothing queued costs a single accept4() returning EAGAIN).
 */
void
capacity_accept_queued(void)
{
	if (!queue_may_hold_more)
		return;
	queue_may_hold_more = false;
	/* capacity_accept() itself stops at the connection limit and while backing off. */
	for (int i = 0; i < nlisteners; i++)
		capacity_accept(listeners[i]);
}

/* Remembers the loop and where accepted sockets go; arms nothing yet. */
void
capacity_start(h2o_loop_t *l, h2o_accept_ctx_t *actx)
{
	loop = l;
	accept_ctx = actx;
	h2o_timeout_init(loop, &backoff_timeout, ACCEPT_BACKOFF_MS);
	backoff_entry.cb = on_backoff_end;
}

/* Takes a listening socket under this module's control. */
void
capacity_add_listener(h2o_socket_t *listener, h2o_socket_cb on_accept, CapacityStart start)
{
	listeners = listeners ?
		repalloc(listeners, sizeof(h2o_socket_t *) * (nlisteners + 1)) :
		MemoryContextAlloc(TopMemoryContext, sizeof(h2o_socket_t *));
	starts = starts ?
		repalloc(starts, sizeof(CapacityStart) * (nlisteners + 1)) :
		MemoryContextAlloc(TopMemoryContext, sizeof(CapacityStart));
	listeners[nlisteners] = listener;
	starts[nlisteners++] = start;
	accept_cb = on_accept;
	update_listening();
}

/* Defines webgres.max_connections_per_worker; from _PG_init. */
void
capacity_define_settings(void)
{
	DefineCustomIntVariable("webgres.max_connections_per_worker",
							"Most client connections each HTTP worker holds open at once.",
							"At the limit the worker stops accepting: new connections "
							"wait in the kernel's accept queue of the worker's listening "
							"socket until one of its connections closes. 0 means as many "
							"as the worker's open file limit leaves room for, after the "
							"files PostgreSQL itself may keep open.",
							&webgres_max_connections_per_worker,
							0,
							0, MAX_CONNECTIONS_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}
