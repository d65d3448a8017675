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

/* webgres.listen as written: the addresses the HTTP workers listen on. */
extern const char *listen_setting(void);

/* GUC check hook of webgres.listen and its like: the list must parse. */
extern bool listen_check_setting(char **newval, void **extra, GucSource source);

/* Defines webgres.listen; from _PG_init. */
extern void listen_define_settings(void);

#endif
