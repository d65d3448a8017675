/*
 * screen.h
 *		Strict screening of an HTTP/1.x request head, before routing.
 *
 * libh2o's parser is lenient where leniency lets a request be read two ways
 * (Content-Length with Transfer-Encoding, repeated Content-Length or Host,
 * folded headers, bare LF line ends).  A server in front of a database must
 * read every request exactly one way, so webgres reads the head again, by
 * RFC 9110 and 9112, and refuses anything ambiguous.
 *
 * Pure byte-level code: no allocation, no Postgres, no h2o; the fuzzer
 * links it as it is.
 */
#ifndef WEBGRES_SCREEN_H
#define WEBGRES_SCREEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest method and request-target webgres accepts. */
#define SCREEN_MAX_METHOD 32
#define SCREEN_MAX_TARGET 8192
#define SCREEN_MAX_HEAD 65536

/* Most digits of a Content-Length: anything longer overflows a body size. */
#define SCREEN_MAX_LENGTH_DIGITS 18

typedef struct ScreenResult
{
	int			status;			/* 0: acceptable; else the 4xx/5xx to answer */
	const char *reason;			/* why, for the log and the response body */
	size_t		head_len;		/* bytes up to and including the blank line */
	const char *method;
	size_t		method_len;
	const char *target;
	size_t		target_len;
	/* Offset in target of the origin-form part: non-zero for absolute-form. */
	size_t		path_offset;
	int			minor_version;
	bool		has_body;		/* Content-Length or Transfer-Encoding seen */
	bool		chunked;
	uint64_t	content_length;
} ScreenResult;

/*
 * Screens the request head at buf[0..len).  The head must be complete (h2o
 * has parsed it); anything after it (body, pipelined requests) is ignored.
 * Returns true if the request may be routed; otherwise res->status and
 * res->reason say how to answer, and the connection must be closed.
 */
extern bool screen_request(const char *buf, size_t len, ScreenResult *res);

/* True if s[0..len) is a valid Host field value: uri-host [":" port]. */
extern bool screen_host(const char *s, size_t len);

/*
 * The rules screen_request applies to a request line and its fields, one
 * element at a time, for heads that come in pieces (HTTP/2: h2_screen.c).
 * Each returns true if the element is acceptable, else sets res->status
 * and res->reason as screen_request would.
 */

/* A method: a token of at most SCREEN_MAX_METHOD bytes, not CONNECT. */
extern bool screen_method(const char *m, size_t len, ScreenResult *res);

/*
 * An origin-form request-target ("/path?query"): printable ASCII, at most
 * SCREEN_MAX_TARGET bytes, no fragment, well percent-encoded, no dot
 * segments, decoding to UTF-8 text without NUL.
 */
extern bool screen_origin_target(const char *t, size_t len, ScreenResult *res);

/* A field: a token name, and a value without control bytes (tab allowed) or DEL. */
extern bool screen_field(const char *name, size_t namelen, const char *value, size_t valuelen,
						 ScreenResult *res);

#endif
