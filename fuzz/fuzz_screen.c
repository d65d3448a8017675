/*
 * Fuzzes the request-head screening (src/parse/screen.c): any bytes, no crash,
 * and what it accepts is internally consistent.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/screen.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char	   *buf = malloc(size ? size : 1);
	ScreenResult res;

	memcpy(buf, data, size);
	if (screen_request(buf, size, &res))
	{
		assert(res.status == 0);
		assert(res.head_len <= size && res.head_len <= SCREEN_MAX_HEAD);
		assert(res.method_len > 0 && res.method_len <= SCREEN_MAX_METHOD);
		assert(res.target_len > 0 && res.target_len <= SCREEN_MAX_TARGET);
		assert(res.method >= buf && res.target + res.target_len <= buf + size);
		assert(res.path_offset <= res.target_len);
		assert(!(res.chunked && res.content_length));
		assert(memcmp(buf + res.head_len - 4, "\r\n\r\n", 4) == 0);
		/*
		 * An accepted head never holds a bare LF, a NUL, or any control
		 * byte but tab, CR and LF, nor DEL.
		 */
		for (size_t i = 0; i < res.head_len; i++)
		{
			unsigned char c = (unsigned char) buf[i];

			assert(c != '\0');
			assert(c != '\n' || (i > 0 && buf[i - 1] == '\r'));
			assert(c >= 0x20 || c == '\t' || c == '\r' || c == '\n');
			assert(c != 0x7f);
		}
	}
	else
		assert(res.status >= 400 && res.status <= 505 && res.reason != NULL);
	screen_host(buf, size);
	free(buf);
	return 0;
}
