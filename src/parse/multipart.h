/*
 * multipart.h
 *		Reads multipart/form-data bodies (RFC 7578 over RFC 2046) into parts.
 *
 * Pure byte-level code, no allocation: every span points into the body or
 * the Content-Type value it was given.  message/form_data.c turns the parts
 * into jsonb and rows; the fuzzer drives this directly.
 */
#ifndef WEBGRES_MULTIPART_H
#define WEBGRES_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

/* RFC 2046 section 5.1.1: a boundary is 1 to 70 characters. */
#define MULTIPART_MAX_BOUNDARY		70

/* The most bytes a part's header block may take, its blank line included. */
#define MULTIPART_MAX_PART_HEAD		8192

/* A parameter value as it appears: a token, or a quoted-string's inside. */
typedef struct MultipartValue
{
	const char *s;				/* NULL: the parameter is absent */
	size_t		len;
	bool		quoted;			/* backslash escapes still in it */
} MultipartValue;

typedef struct MultipartPart
{
	MultipartValue name;		/* Content-Disposition's name (always there) */
	MultipartValue filename;	/* its filename, or absent */
	MultipartValue filename_ext;	/* its filename* (RFC 8187), or absent */
	const char *content_type;	/* the part's Content-Type value, or NULL */
	size_t		content_type_len;
	const char *data;			/* the part's content */
	size_t		datalen;
} MultipartPart;

typedef struct MultipartScan
{
	const char *body;
	size_t		len;
	const char *boundary;
	size_t		blen;
	size_t		pos;			/* just past the last delimiter read */
	int			nparts;			/* parts returned so far */
	bool		started;		/* the first delimiter was found */
	bool		done;			/* the close delimiter was read */
	const char *error;			/* why multipart_next returned -1 */
} MultipartScan;

/*
 * Finds the boundary parameter of a multipart/form-data Content-Type value.
 * False, with *error saying why, for another type or a missing or invalid
 * boundary.
 */
extern bool multipart_boundary(const char *ct, size_t len,
							   const char **boundary, size_t *blen,
							   const char **error);

/* Starts reading body[0..len) whose parts are separated by boundary. */
extern void multipart_begin(MultipartScan *scan, const char *body, size_t len,
							const char *boundary, size_t blen);

/*
 * Reads the next part: 1 and *part filled, 0 after the close delimiter, or
 * -1 with scan->error saying what is wrong (a constant string).
 */
extern int	multipart_next(MultipartScan *scan, MultipartPart *part);

/*
 * Writes a parameter value's bytes to out (room for v->len bytes): a
 * quoted-string without its backslash escapes.  Returns the length.
 */
extern size_t multipart_value_copy(const MultipartValue *v, char *out);

/*
 * Decodes an RFC 8187 ext-value (charset'language'percent-encoded) into out
 * (room for v->len bytes); -1 if malformed or the charset is neither UTF-8
 * nor ISO-8859-1.  *latin1 says whether the bytes are ISO-8859-1.
 */
extern long multipart_ext_value_decode(const MultipartValue *v, char *out, bool *latin1);

#endif
