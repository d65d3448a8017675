/*
 * listen.c
 *		Parses webgres.listen and opens the listening sockets.
 *
 * Every worker opens its own sockets with SO_REUSEPORT, so the kernel spreads
 * new connections across workers and no process hands connections to
 * another.
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "utils/guc.h"

#include "http/listen.h"
#include "parse/listen_syntax.h"

/* webgres.listen (listen_define_settings); read elsewhere through listen_setting(). */
static char *webgres_listen;

/*
 * As long an accept queue as the kernel allows: Linux silently caps the
 * backlog at net.core.somaxconn, so the administrator sets it there.
 */
#define LISTEN_BACKLOG INT_MAX

/* Resolves one entry read by parse/listen_syntax.c into out; false with *error. */
static bool
resolve_one(const ListenSpec *spec, ListenAddress *out, char **error)
{
	struct addrinfo hints;
	struct addrinfo *res;
	int			rc;

	StaticAssertStmt(sizeof(out->text) == sizeof(spec->text), "entry texts agree");
	strlcpy(out->text, spec->text, sizeof(out->text));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(spec->host, spec->port, &hints, &res);
	if (rc != 0)
	{
		*error = psprintf("could not resolve host \"%s\" in entry \"%s\": %s",
						  spec->host, spec->text, gai_strerror(rc));
		return false;
	}
	memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
	out->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

/* Parses a comma-separated "host:port" list and resolves its hosts. */
bool
listen_parse(const char *value, ListenAddress **addrs, int *naddrs, char **error)
{
	ListenSpec *specs;
	int			nspecs;

	*naddrs = 0;
	*addrs = NULL;
	if (!listen_syntax_parse(value, &specs, &nspecs, error))
		return false;
	*addrs = palloc0(sizeof(ListenAddress) * nspecs);
	for (int i = 0; i < nspecs; i++)
	{
		if (!resolve_one(&specs[i], &(*addrs)[i], error))
			return false;
		(*naddrs)++;
	}
	pfree(specs);
	return true;
}

/* Opens a non-blocking SO_REUSEPORT listening socket. */
int
listen_open(const ListenAddress *addr, const char *setting)
{
	int			fd;
	int			on = 1;

	fd = socket(addr->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not create socket for %s entry \"%s\": %m",
						setting, addr->text)));

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
		(addr->addr.ss_family == AF_INET6 &&
		 setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0))
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not set socket options for %s entry \"%s\": %m",
						setting, addr->text)));
	}

	if (bind(fd, (const struct sockaddr *) &addr->addr, addr->addrlen) != 0 ||
		listen(fd, LISTEN_BACKLOG) != 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not listen on \"%s\" (%s): %m", addr->text, setting),
				 errhint("Is another server already using that port? Choose a free "
						 "port in %s and restart PostgreSQL.", setting)));
	}
	return fd;
}

/* The port of an address, in host order. */
static int
port_of(const ListenAddress *a)
{
	if (a->addr.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *) &a->addr)->sin6_port);
	return ntohs(((const struct sockaddr_in *) &a->addr)->sin_port);
}

/* True if a is the family's wildcard address (0.0.0.0 or ::). */
static bool
is_wildcard(const ListenAddress *a)
{
	if (a->addr.ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *) &a->addr)->sin6_addr);
	return ((const struct sockaddr_in *) &a->addr)->sin_addr.s_addr == htonl(INADDR_ANY);
}

/*
 * True if a connection to one address could reach the other's socket.
 * SO_REUSEPORT lets two such sockets of one user share a port, and the
 * kernel would then spread connections across both.
 */
bool
listen_overlaps(const ListenAddress *a, const ListenAddress *b)
{
	if (a->addr.ss_family != b->addr.ss_family || port_of(a) != port_of(b))
		return false;
	if (is_wildcard(a) || is_wildcard(b))
		return true;
	if (a->addr.ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *) &a->addr)->sin6_addr,
					  &((const struct sockaddr_in6 *) &b->addr)->sin6_addr,
					  sizeof(struct in6_addr)) == 0;
	return ((const struct sockaddr_in *) &a->addr)->sin_addr.s_addr ==
		((const struct sockaddr_in *) &b->addr)->sin_addr.s_addr;
}

/* The port of an address, for messages and redirects. */
int
listen_port(const ListenAddress *addr)
{
	return port_of(addr);
}

/* GUC check hook for webgres.listen: the list must parse. */
bool
listen_check_setting(char **newval, void **extra, GucSource source)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;

	if (!listen_parse(*newval, &addrs, &naddrs, &error))
	{
		GUC_check_errdetail("%s", error);
		GUC_check_errhint("Use a comma-separated list of host:port entries, for example '127.0.0.1:8080' or '0.0.0.0:8080,[::]:8080'.");
		return false;
	}
	return true;
}

/* webgres.listen as written (listen.h). */
const char *
listen_setting(void)
{
	return webgres_listen;
}

/* Defines webgres.listen; from _PG_init. */
void
listen_define_settings(void)
{
	DefineCustomStringVariable("webgres.listen",
							   "Addresses the HTTP workers listen on.",
							   "A comma-separated list of host:port entries; "
							   "IPv6 hosts are written in brackets, as in [::1]:8080.",
							   &webgres_listen,
							   "127.0.0.1:8080",
							   PGC_POSTMASTER,
							   0,
							   listen_check_setting, NULL, NULL);
}
