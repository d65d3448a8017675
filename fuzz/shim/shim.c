/* The arena behind fuzz/shim/postgres.h, and lib/stringinfo.h on it. */
#include "postgres.h"

#include "lib/stringinfo.h"

typedef struct Chunk
{
	struct Chunk *next;
	size_t		size;
	max_align_t data[];
} Chunk;

static Chunk *chunks;

void *
palloc(size_t size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + size);

	if (c == NULL)
		abort();
	c->next = chunks;
	c->size = size;
	chunks = c;
	return c->data;
}

void *
repalloc(void *p, size_t size)
{
	Chunk	   *old = (Chunk *) ((char *) p - offsetof(Chunk, data));
	void	   *n = palloc(size);

	memcpy(n, p, Min(old->size, size));
	return n;
}

char *
pnstrdup(const char *s, size_t len)
{
	size_t		n = strnlen(s, len);
	char	   *p = palloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
psprintf(const char *fmt, ...)
{
	va_list		ap;
	int			n;
	char	   *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = palloc(n + 1);
	va_start(ap, fmt);
	vsnprintf(p, n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
initStringInfo(StringInfo str)
{
	str->maxlen = 16;
	str->data = palloc(str->maxlen);
	str->data[0] = '\0';
	str->len = 0;
	str->cursor = 0;
}

/* Room for needed more bytes and the terminating NUL, as Postgres' does. */
void
enlargeStringInfo(StringInfo str, int needed)
{
	if (needed < 0 || (size_t) str->len + needed + 1 > 0x3fffffff)
		abort();
	if (str->len + needed + 1 <= str->maxlen)
		return;
	while (str->len + needed + 1 > str->maxlen)
		str->maxlen *= 2;
	str->data = repalloc(str->data, str->maxlen);
}

void
appendBinaryStringInfo(StringInfo str, const void *data, int datalen)
{
	enlargeStringInfo(str, datalen);
	memcpy(str->data + str->len, data, datalen);
	str->len += datalen;
	str->data[str->len] = '\0';
}

void
shim_reset(void)
{
	while (chunks)
	{
		Chunk	   *next = chunks->next;

		free(chunks);
		chunks = next;
	}
}
