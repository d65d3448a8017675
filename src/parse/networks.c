/*
 * networks.c
 *		Lists of IP networks in CIDR notation, and matching addresses
 *		against them.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "parse/networks.h"

/* Room for the text of an IPv6 address, with its terminating NUL. */
#define ADDRESS_TEXT_MAX 64

/* The first 96 bits of an IPv4-mapped IPv6 address (RFC 4291 2.5.5.2). */
#define V4_MAPPED_BITS 96
static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* Whether the first bits of a and b are equal. */
static bool
prefix_equal(const uint8_t *a, const uint8_t *b, int bits)
{
	int			whole = bits / 8;
	int			rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[whole] ^ b[whole]) & (uint8_t) (0xff << (8 - rest))) == 0;
}

/* Whether addr (len bytes) has a bit set past its first bits. */
static bool
bits_past_prefix(const uint8_t *addr, int len, int bits)
{
	uint8_t		zero[16] = {0};
	uint8_t		copy[16];

	memcpy(copy, addr, len);
	/* Clear the prefix, then the rest must be zero. */
	for (int i = 0; i < bits / 8; i++)
		copy[i] = 0;
	if (bits % 8)
		copy[bits / 8] &= (uint8_t) (0xff >> (bits % 8));
	return memcmp(copy, zero, len) != 0;
}

/* Reads one network from s[0..len), without surrounding spaces. */
static bool
parse_one(const char *s, size_t len, Network *net, const char **error)
{
	char		text[ADDRESS_TEXT_MAX];
	const char *slash = memchr(s, '/', len);
	size_t		addrlen = slash ? (size_t) (slash - s) : len;
	int			maxbits;

	if (addrlen == 0 || addrlen >= sizeof(text))
	{
		*error = "an entry is not an IP address";
		return false;
	}
	memcpy(text, s, addrlen);
	text[addrlen] = '\0';
	if (inet_pton(AF_INET, text, net->addr) == 1)
	{
		net->family = AF_INET;
		maxbits = 32;
	}
	else if (inet_pton(AF_INET6, text, net->addr) == 1)
	{
		net->family = AF_INET6;
		maxbits = 128;
	}
	else
	{
		*error = "an entry is not an IP address";
		return false;
	}
	net->bits = maxbits;
	if (slash != NULL)
	{
		const char *p = slash + 1;
		const char *end = s + len;

		if (p == end || end - p > 3)
		{
			*error = "a prefix length is not a number of bits";
			return false;
		}
		for (net->bits = 0; p < end; p++)
		{
			if (*p < '0' || *p > '9')
			{
				*error = "a prefix length is not a number of bits";
				return false;
			}
			net->bits = net->bits * 10 + (*p - '0');
		}
		if (net->bits > maxbits)
		{
			*error = "a prefix length is longer than its address";
			return false;
		}
	}
	if (bits_past_prefix(net->addr, maxbits / 8, net->bits))
	{
		*error = "an address has bits set past its prefix length";
		return false;
	}
	/* An IPv4-mapped network is its IPv4 network, as clients are matched. */
	if (net->family == AF_INET6 && net->bits >= V4_MAPPED_BITS &&
		memcmp(net->addr, v4_mapped, sizeof(v4_mapped)) == 0)
	{
		net->family = AF_INET;
		memmove(net->addr, net->addr + sizeof(v4_mapped), 4);
		net->bits -= V4_MAPPED_BITS;
	}
	return true;
}

/* Reads a comma-separated list of networks: see networks.h. */
bool
networks_parse(const char *s, NetworkList *out, const char **error)
{
	out->n = 0;
	for (;;)
	{
		const char *start;
		const char *end;

		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' && out->n == 0)
			return true;
		start = s;
		while (*s != '\0' && *s != ',')
			s++;
		end = s;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (out->n == NETWORKS_MAX)
		{
			*error = "the list names too many networks";
			return false;
		}
		if (!parse_one(start, end - start, &out->nets[out->n], error))
			return false;
		out->n++;
		if (*s == '\0')
			return true;
		s++;
	}
}

/* Whether sa lies in a network of the list: see networks.h. */
bool
networks_contain(const NetworkList *list, const struct sockaddr *sa)
{
	uint8_t		addr[16];
	int			family;

	if (sa->sa_family == AF_INET)
	{
		family = AF_INET;
		memcpy(addr, &((const struct sockaddr_in *) sa)->sin_addr, 4);
	}
	else if (sa->sa_family == AF_INET6)
	{
		const uint8_t *a = ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr;

		if (memcmp(a, v4_mapped, sizeof(v4_mapped)) == 0)
		{
			family = AF_INET;
			memcpy(addr, a + 12, 4);
		}
		else
		{
			family = AF_INET6;
			memcpy(addr, a, 16);
		}
	}
	else
		return false;
	for (int i = 0; i < list->n; i++)
		if (list->nets[i].family == family && prefix_equal(addr, list->nets[i].addr, list->nets[i].bits))
			return true;
	return false;
}
