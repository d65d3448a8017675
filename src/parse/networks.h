/*
 * networks.h
 *		Lists of IP networks in CIDR notation ("127.0.0.0/8, ::1/128"), and
 *		whether an address lies in one of them.
 *
 * Pure C (inet_pton), no Postgres or h2o: a fuzzer builds it.
 */
#ifndef WEBGRES_NETWORKS_H
#define WEBGRES_NETWORKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

/* The most networks a list may name. */
#define NETWORKS_MAX 64

/* One network: its address family, its first address and its prefix length. */
typedef struct Network
{
	int			family;			/* AF_INET or AF_INET6 */
	uint8_t		addr[16];		/* 4 bytes for AF_INET */
	int			bits;
} Network;

typedef struct NetworkList
{
	int			n;
	Network		nets[NETWORKS_MAX];
} NetworkList;

/*
 * Reads a comma-separated list of networks, each an IPv4 or IPv6 address
 * with an optional "/bits" (a single address without it), into *out; an
 * empty list names no network.  As Postgres' cidr type, an address may not
 * have bits set past its prefix.  An IPv4-mapped IPv6 network
 * (::ffff:10.0.0.0/104) is read as its IPv4 network (10.0.0.0/8).  False, with *error saying why, if the
 * list cannot be read.
 */
extern bool networks_parse(const char *s, NetworkList *out, const char **error);

/*
 * Whether the address sa (AF_INET, or AF_INET6, where an IPv4-mapped
 * address counts as the IPv4 one) lies in a network of the list.
 */
extern bool networks_contain(const NetworkList *list, const struct sockaddr *sa);

#endif
