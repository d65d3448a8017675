/*
 * Fuzzes HTML escaping (src/sql/html.c): html_escape_append() appends after
 * what the buffer held, its output holds no special byte outside an entity
 * and reads back as the input, and html_needs_escape() agrees with it.
 */
#include <assert.h>
#include <string.h>

#include "postgres.h"
#include "sql/html.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The entities escaping writes, and the byte each stands for. */
static const struct
{
	const char *entity;
	char		c;
}			entities[] = {
	{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''},
};

/* Reads escaped back into out (room for len bytes); returns its length. */
static size_t
unescape(const char *escaped, size_t len, char *out)
{
	size_t		n = 0;

	for (size_t i = 0; i < len;)
	{
		char		c = escaped[i];
		bool		matched = false;

		assert(c != '<' && c != '>' && c != '"' && c != '\'');
		if (c == '&')
		{
			for (size_t e = 0; e < sizeof(entities) / sizeof(entities[0]); e++)
			{
				size_t		elen = strlen(entities[e].entity);

				if (len - i >= elen && memcmp(escaped + i, entities[e].entity, elen) == 0)
				{
					out[n++] = entities[e].c;
					i += elen;
					matched = true;
					break;
				}
			}
			assert(matched);
			continue;
		}
		out[n++] = c;
		i++;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *s = (const char *) data;
	char	   *back = palloc(size + 1);
	StringInfoData out;
	size_t		n;

	initStringInfo(&out);
	appendBinaryStringInfo(&out, "x", 1);
	html_escape_append(&out, s, size);
	assert(out.data[0] == 'x');
	assert(out.data[out.len] == '\0');
	n = out.len - 1;
	assert(n >= size);
	assert(unescape(out.data + 1, n, back) == size);
	assert(memcmp(back, s, size) == 0);
	assert(html_needs_escape(s, size) == (n != size));

	shim_reset();
	return 0;
}
