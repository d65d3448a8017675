/*
 * Fuzzes the network lists of webgres.metrics_allow (src/parse/networks.c):
 * any text, no crash; a list it reads names at most NETWORKS_MAX networks,
 * each with a prefix no longer than its address and no bit past it; every
 * network contains its own address (an IPv4 one also as IPv4-mapped IPv6),
 * and an address that differs within the prefix is not in that network.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "parse/networks.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The socket address of a network's first address, or the IPv4-mapped form. */
static void
address_of(const Network *net, bool mapped, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (net->family == AF_INET && !mapped)
	{
		struct sockaddr_in *in = (struct sockaddr_in *) ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, net->addr, 4);
	}
	else
	{
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

		in6->sin6_family = AF_INET6;
		if (net->family == AF_INET)
		{
			in6->sin6_addr.s6_addr[10] = in6->sin6_addr.s6_addr[11] = 0xff;
			memcpy(in6->sin6_addr.s6_addr + 12, net->addr, 4);
		}
		else
			memcpy(in6->sin6_addr.s6_addr, net->addr, 16);
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char	   *s = malloc(size + 1);
	NetworkList *list = malloc(sizeof(NetworkList));
	const char *error = NULL;

	memcpy(s, data, size);
	s[size] = '\0';
	if (networks_parse(s, list, &error))
	{
		assert(list->n >= 0 && list->n <= NETWORKS_MAX);
		for (int i = 0; i < list->n; i++)
		{
			Network    *net = &list->nets[i];
			int			len = net->family == AF_INET ? 4 : 16;
			struct sockaddr_storage ss;
			NetworkList one;

			assert(net->family == AF_INET || net->family == AF_INET6);
			assert(net->bits >= 0 && net->bits <= len * 8);
			for (int b = net->bits; b < len * 8; b++)
				assert(!(net->addr[b / 8] & (0x80 >> (b % 8))));
			address_of(net, false, &ss);
			assert(networks_contain(list, (struct sockaddr *) &ss));
			if (net->family == AF_INET)
			{
				address_of(net, true, &ss);
				assert(networks_contain(list, (struct sockaddr *) &ss));
			}
			/* Alone in a list, with its last prefix bit flipped: outside. */
			one.n = 1;
			one.nets[0] = *net;
			if (net->bits > 0)
			{
				Network		other = *net;

				other.addr[(net->bits - 1) / 8] ^= 0x80 >> ((net->bits - 1) % 8);
				address_of(&other, false, &ss);
				assert(!networks_contain(&one, (struct sockaddr *) &ss));
			}
		}
	}
	else
		assert(error != NULL);
	free(s);
	free(list);
	return 0;
}
