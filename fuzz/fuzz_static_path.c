/*
 * Fuzzes the static-path screen (src/parse/static_path.c): whatever the
 * input, a path it accepts has no dot segment, no empty segment, no NUL,
 * backslash, control character or '%', and (dotfiles refused) no segment
 * starting with a dot; it is never longer than the input.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/static_path.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Checks the invariants of an accepted, decoded path. */
static void
check_accepted(const char *out, size_t len, size_t inlen, int dotfiles)
{
	assert(len <= inlen);
	assert(out[len] == '\0');
	assert(len == 0 || out[0] == '/');
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) out[i];

		assert(c >= 0x20 && c != 0x7f && c != '\\' && c != '%');
		if (c != '/')
			continue;
		/* A segment starts after each slash. */
		if (i + 1 == len)
			break;
		assert(out[i + 1] != '/');
		if (out[i + 1] == '.')
		{
			assert(dotfiles);
			assert(!(i + 2 == len || out[i + 2] == '/'));
			assert(!(out[i + 2] == '.' && (i + 3 == len || out[i + 3] == '/')));
		}
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* Exact-size copies, so that ASan sees any read past the end. */
	char	   *in = malloc(size ? size : 1);
	char	   *out = malloc(size + 1);
	size_t		len;

	memcpy(in, data, size);
	for (int dotfiles = 0; dotfiles <= 1; dotfiles++)
	{
		if (static_path_screen(in, size, dotfiles, out, &len) == STATIC_PATH_OK)
			check_accepted(out, len, size, dotfiles);
	}
	free(in);
	free(out);
	return 0;
}
