/*
 * listen_syntax.c
 *		Reads an address-list setting into host and port entries.
 */
#include "postgres.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/listen_syntax.h"

/* Entries the list starts with room for; it doubles as needed. */
#define LISTEN_INITIAL_ENTRIES 4

/* Reads one trimmed, non-empty entry into out; false with *error if it is bad. */
static bool
parse_entry(const char *item, ListenSpec *out, char **error)
{
	const char *port;
	size_t		hostlen;
	const char *hostp;
	char	   *end;
	long		portnum;

	if (strlen(item) >= sizeof(out->text))
	{
		*error = psprintf("entry \"%.40s...\" is too long", item);
		return false;
	}
	strcpy(out->text, item);

	if (item[0] == '[')
	{
		const char *close = strchr(item, ']');

		if (close == NULL || close[1] != ':')
		{
			*error = psprintf("entry \"%s\" has no port after the bracketed IPv6 address", item);
			return false;
		}
		hostp = item + 1;
		hostlen = close - item - 1;
		port = close + 2;
	}
	else
	{
		const char *colon = strrchr(item, ':');

		if (colon == NULL)
		{
			*error = psprintf("entry \"%s\" has no port", item);
			return false;
		}
		hostp = item;
		hostlen = colon - item;
		port = colon + 1;
	}
	/* An entry is shorter than a host may be: this only keeps it so. */
	if (hostlen >= sizeof(out->host))
	{
		*error = psprintf("host in entry \"%s\" is too long", item);
		return false;
	}
	memcpy(out->host, hostp, hostlen);
	out->host[hostlen] = '\0';
	if (strcmp(out->host, "*") == 0 || out->host[0] == '\0')
		strcpy(out->host, "0.0.0.0");

	errno = 0;
	portnum = strtol(port, &end, 10);
	if (*port < '0' || *port > '9' || *end != '\0' || errno != 0 ||
		portnum < 1 || portnum > 65535)
	{
		*error = psprintf("port \"%s\" in entry \"%s\" is not a number from 1 to 65535", port, item);
		return false;
	}
	snprintf(out->port, sizeof(out->port), "%ld", portnum);
	return true;
}

/* Splits a comma-separated list into entries. */
bool
listen_syntax_parse(const char *value, ListenSpec **specs, int *nspecs, char **error)
{
	const char *p = value ? value : "";
	int			cap = LISTEN_INITIAL_ENTRIES;

	*nspecs = 0;
	*specs = palloc(sizeof(ListenSpec) * cap);
	while (*p != '\0')
	{
		const char *comma = strchr(p, ',');
		size_t		len = comma ? (size_t) (comma - p) : strlen(p);
		const char *item = p;
		char	   *entry;

		p += len + (comma ? 1 : 0);
		while (len > 0 && (*item == ' ' || *item == '\t'))
			item++, len--;
		while (len > 0 && (item[len - 1] == ' ' || item[len - 1] == '\t'))
			len--;
		if (len == 0)
			continue;
		if (*nspecs == cap)
		{
			cap *= 2;
			*specs = repalloc(*specs, sizeof(ListenSpec) * cap);
		}
		entry = pnstrdup(item, len);
		if (!parse_entry(entry, &(*specs)[*nspecs], error))
			return false;
		(*nspecs)++;
	}
	if (*nspecs == 0)
	{
		*error = psprintf("no address given");
		return false;
	}
	return true;
}
