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

#include "core/pg_compat.h"
#include "http/listen.h"
#include "parse/listen_syntax.h"

/*
 * webgres.listen (listen_define_settings) as written, read elsewhere
 * through listen_setting(), and as its check hook resolved it, through
 * listen_addresses().
 */
static char *webgres_listen;
static const ListenList *listen_list = NULL;

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

/*
 * Parses and resolves a list as listen_parse() does, into one block from
 * guc_malloc() (a GUC check hook's extra).  NULL with *error if the list
 * does not parse, NULL with *error NULL when out of memory.
 */
ListenList *
listen_list_make(const char *value, char **error)
{
	ListenAddress *addrs;
	int			naddrs;
	ListenList *list;

	*error = NULL;
	if (!listen_parse(value, &addrs, &naddrs, error))
		return NULL;
	list = guc_malloc(LOG, offsetof(ListenList, addrs) + sizeof(ListenAddress) * naddrs);
	if (list == NULL)
		return NULL;
	list->n = naddrs;
	if (naddrs > 0)
		memcpy(list->addrs, addrs, sizeof(ListenAddress) * naddrs);
	pfree(addrs);
	return list;
}

/* Reports a list listen_list_make() refused, in a check hook. */
static void
report_bad_list(const char *error)
{
	if (error == NULL)
	{
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return;
	}
	GUC_check_errdetail("%s", error);
	GUC_check_errhint("Use a comma-separated list of host:port entries, for example '127.0.0.1:8080' or '0.0.0.0:8080,[::]:8080'.");
}

/* GUC check hook of a list like webgres.listen (listen.h): the list must parse. */
bool
listen_check_setting(char **newval, void **extra, GucSource source)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;

	if (!listen_parse(*newval, &addrs, &naddrs, &error))
	{
		report_bad_list(error);
		return false;
	}
	return true;
}

/*
 * GUC check hook for webgres.listen: the list must parse; *extra is its
 * addresses, resolved once here, so that no worker parses it again.
 */
static bool
check_listen(char **newval, void **extra, GucSource source)
{
	char	   *error;
	ListenList *list = listen_list_make(*newval, &error);

	if (list == NULL)
	{
		report_bad_list(error);
		return false;
	}
	*extra = list;
	return true;
}

/* Publishes webgres.listen's addresses as its check hook resolved them. */
static void
assign_listen(const char *newval, void *extra)
{
	listen_list = extra;
}

/* webgres.listen as written (listen.h). */
const char *
listen_setting(void)
{
	return webgres_listen;
}

/* webgres.listen's addresses (listen.h). */
const ListenList *
listen_addresses(void)
{
	return listen_list;
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
							   check_listen, assign_listen, NULL);
}
