/*
 * percent.c
 *		Percent-decoding (RFC 3986 section 2.1), for paths and query strings.
 */
#include "postgres.h"

#include "parse/percent.h"

/* The value of a hexadecimal digit, or -1. */
int
percent_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes src into dst; the length, or -1 if it is malformed. */
long
percent_decode(const char *src, size_t srclen, char *dst, bool plus_is_space)
{
	size_t		o = 0;

	for (size_t i = 0; i < srclen; i++)
	{
		char		c = src[i];

		if (c == '%')
		{
			int			hi,
						lo;

			if (i + 2 >= srclen)
				return -1;
			hi = percent_hexval(src[i + 1]);
			lo = percent_hexval(src[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			dst[o++] = (char) (hi * 16 + lo);
			i += 2;
		}
		else if (c == '+' && plus_is_space)
			dst[o++] = ' ';
		else
			dst[o++] = c;
	}
	return (long) o;
}
