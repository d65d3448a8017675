/*
 * sse_format.h
 *		Writing one event in the text/event-stream format (WHATWG HTML,
 *		"Server-sent events", 9.2.5).
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it (fuzz/fuzz_sse_format.c).
 * An event is an id: and an event: line when given, one data: line per
 * line of the data (CR LF, CR and LF all end a line, so no data byte can
 * end a field early or start another), and the blank line that dispatches
 * it.  The id and the event type must pass sse_field_ok(): the caller
 * checks, since a line break there would end the field early.
 */
#ifndef WEBGRES_SSE_FORMAT_H
#define WEBGRES_SSE_FORMAT_H

#include <stddef.h>
#include <stdbool.h>

/* True if s may be an id or event field: no CR, LF or NUL. */
extern bool sse_field_ok(const char *s, size_t len);

/*
 * The bytes sse_event_write() writes for this event; id and event are
 * NUL-terminated or NULL (none; an empty event type is none too).
 */
extern size_t sse_event_length(const char *id, const char *event,
							   const char *data, size_t datalen);

/* Writes the event into dst, which has sse_event_length() bytes; returns that. */
extern size_t sse_event_write(char *dst, const char *id, const char *event,
							  const char *data, size_t datalen);

#endif
