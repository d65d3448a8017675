/*
 * listen.h
 *		The webgres.listen setting: parsing and opening listening sockets.
 */
#ifndef WEBGRES_LISTEN_H
#define WEBGRES_LISTEN_H

#include <sys/socket.h>

#include "utils/guc.h"

typedef struct ListenAddress
{
	struct sockaddr_storage addr;
	socklen_t	addrlen;
	char		text[128];		/* as written in the setting, for messages
								 * (LISTEN_TEXT_MAX) */
} ListenAddress;

/* A list of addresses, in one block (a GUC check hook's extra). */
typedef struct ListenList
{
	int			n;
	ListenAddress addrs[FLEXIBLE_ARRAY_MEMBER];
} ListenList;

/*
 * Parses a comma-separated "host:port" list ("[v6]:port" for IPv6).  On
 * failure returns false and points *error at a palloc'd message.
 */
extern bool listen_parse(const char *value, ListenAddress **addrs, int *naddrs,
						 char **error);

/*
 * Opens a non-blocking SO_REUSEPORT listening socket; ereports on failure,
 * naming the setting the address came from.
 */
extern int	listen_open(const ListenAddress *addr, const char *setting);

/* True if the two addresses could take each other's connections. */
extern bool listen_overlaps(const ListenAddress *a, const ListenAddress *b);

/* The port of an address. */
extern int	listen_port(const ListenAddress *addr);

/*
 * Parses and resolves a list into a ListenList from guc_malloc(), for a
 * check hook's extra.  NULL with *error if it does not parse; NULL with
 * *error NULL when out of memory.
 */
extern ListenList *listen_list_make(const char *value, char **error);

/* webgres.listen as written: the addresses the HTTP workers listen on. */
extern const char *listen_setting(void);

/* webgres.listen's addresses, resolved once by its check hook. */
extern const ListenList *listen_addresses(void);

/* GUC check hook of a list like webgres.listen (webgres.metrics_listen): the list must parse. */
extern bool listen_check_setting(char **newval, void **extra, GucSource source);

/* Defines webgres.listen; from _PG_init. */
extern void listen_define_settings(void);

#endif
