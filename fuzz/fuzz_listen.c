/*
 * Fuzzes the address-list syntax (src/parse/listen_syntax.c): any value
 * is read without reading past its end, and what it accepts holds
 * together: at least one entry, each entry's text shorter than its bound,
 * a host that fits, a port of digits from 1 to 65535.
 */
#include <assert.h>

#include "postgres.h"
#include "parse/listen_syntax.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char	   *value = malloc(size + 1);
	ListenSpec *specs = NULL;
	int			n = -1;
	char	   *error = NULL;

	memcpy(value, data, size);
	value[size] = '\0';
	if (listen_syntax_parse(value, &specs, &n, &error))
	{
		assert(n >= 1 && error == NULL);
		for (int i = 0; i < n; i++)
		{
			long		port = atol(specs[i].port);

			assert(strlen(specs[i].text) < LISTEN_TEXT_MAX);
			assert(strlen(specs[i].host) < LISTEN_HOST_MAX && specs[i].host[0] != '\0');
			assert(port >= 1 && port <= 65535);
			assert(strspn(specs[i].port, "0123456789") == strlen(specs[i].port));
		}
	}
	else
		assert(error != NULL);
	free(value);
	shim_reset();
	return 0;
}
