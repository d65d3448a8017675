/*
 * sse_format.c
 *		Writing one event in the text/event-stream format.
 *
 * One walk over the event both measures and writes it, so that the length
 * a caller reserves and the bytes written cannot disagree.
 */
#include "parse/sse_format.h"

#include <string.h>

/* The prefixes of the fields an event may have. */
#define FIELD_ID "id: "
#define FIELD_EVENT "event: "
#define FIELD_DATA "data: "

/* Appends len bytes at *at when dst is not NULL; counts them either way. */
static void
put(char *dst, size_t *at, const char *bytes, size_t len)
{
	if (dst != NULL)
		memcpy(dst + *at, bytes, len);
	*at += len;
}

/* Writes (dst) or measures (dst NULL) one event; returns its length. */
static size_t
emit(char *dst, const char *id, const char *event, const char *data, size_t datalen)
{
	size_t		at = 0;
	size_t		start = 0;

	if (id != NULL)
	{
		put(dst, &at, FIELD_ID, sizeof(FIELD_ID) - 1);
		put(dst, &at, id, strlen(id));
		put(dst, &at, "\n", 1);
	}
	if (event != NULL && event[0] != '\0')
	{
		put(dst, &at, FIELD_EVENT, sizeof(FIELD_EVENT) - 1);
		put(dst, &at, event, strlen(event));
		put(dst, &at, "\n", 1);
	}
	/* Every line of the data is a data: line; CR LF, CR and LF all end one. */
	for (size_t i = 0; i <= datalen; i++)
	{
		if (i == datalen || data[i] == '\n' || data[i] == '\r')
		{
			put(dst, &at, FIELD_DATA, sizeof(FIELD_DATA) - 1);
			put(dst, &at, data + start, i - start);
			put(dst, &at, "\n", 1);
			if (i < datalen && data[i] == '\r' && i + 1 < datalen && data[i + 1] == '\n')
				i++;
			start = i + 1;
		}
	}
	put(dst, &at, "\n", 1);
	return at;
}

/* True if s may be an id or event field: no CR, LF or NUL in it. */
bool
sse_field_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
			return false;
	return true;
}

/* The bytes sse_event_write() writes for this event. */
size_t
sse_event_length(const char *id, const char *event, const char *data, size_t datalen)
{
	return emit(NULL, id, event, data, datalen);
}

/* Writes the event into dst (sse_event_length() bytes); returns its length. */
size_t
sse_event_write(char *dst, const char *id, const char *event, const char *data, size_t datalen)
{
	return emit(dst, id, event, data, datalen);
}
