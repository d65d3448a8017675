/* The arena behind fuzz/shim/postgres.h. */
#include "postgres.h"

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
shim_reset(void)
{
	while (chunks)
	{
		Chunk	   *next = chunks->next;

		free(chunks);
		chunks = next;
	}
}
