/*
 * multipart.c
 *		Reads multipart/form-data bodies (RFC 7578 over RFC 2046) into parts.
 *
 * The body is whole in memory (libh2o reads it before webgres sees the
 * request), so the scanner returns spans into it and copies nothing.  It is
 * strict where leniency would let two readers see different parts: lines
 * end in CRLF, a delimiter is followed only by "--" or optional blanks and
 * CRLF, header lines are not folded, and the close delimiter must come.
 */
#include <string.h>

#include "parse/multipart.h"

/* A parameter of a header value: name=value. */
typedef struct Param
{
	const char *name;
	size_t		namelen;
	MultipartValue value;
} Param;

/* RFC 9110 tchar. */
static bool
is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 2046 bchars, the characters a boundary may hold. */
static bool
is_bchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("'()+_,-./:=? ", c) != NULL;
}

/* ASCII case-insensitive comparison of s[0..len) with the literal lit. */
static bool
equals_nocase(const char *s, size_t len, const char *lit)
{
	size_t		n = strlen(lit);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		unsigned char a = (unsigned char) s[i],
					b = (unsigned char) lit[i];

		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (a != b)
			return false;
	}
	return true;
}

/* Moves *pos past spaces and tabs. */
static void
skip_ows(const char *s, size_t len, size_t *pos)
{
	while (*pos < len && (s[*pos] == ' ' || s[*pos] == '\t'))
		(*pos)++;
}

/* Moves *pos past a token; returns its length (0: none). */
static size_t
read_token(const char *s, size_t len, size_t *pos)
{
	size_t		start = *pos;

	while (*pos < len && is_tchar((unsigned char) s[*pos]))
		(*pos)++;
	return *pos - start;
}

/*
 * Reads the next ";name=value" of a header value at *pos: 1 and *p filled,
 * 0 at the end, -1 if malformed.  Empty parameters (";;") are skipped.
 */
static int
next_param(const char *s, size_t len, size_t *pos, Param *p)
{
	for (;;)
	{
		skip_ows(s, len, pos);
		if (*pos >= len)
			return 0;
		if (s[*pos] != ';')
			return -1;
		(*pos)++;
		skip_ows(s, len, pos);
		if (*pos >= len)
			return 0;
		if (s[*pos] == ';')
			continue;
		break;
	}
	p->name = s + *pos;
	p->namelen = read_token(s, len, pos);
	if (p->namelen == 0 || *pos >= len || s[*pos] != '=')
		return -1;
	(*pos)++;
	if (*pos < len && s[*pos] == '"')
	{
		size_t		start = ++(*pos);

		p->value.quoted = true;
		for (;;)
		{
			unsigned char c;

			if (*pos >= len)
				return -1;		/* no closing quote */
			c = (unsigned char) s[*pos];
			if (c == '"')
				break;
			if (c == '\\')
			{
				if (*pos + 1 >= len)
					return -1;
				(*pos)++;
				c = (unsigned char) s[*pos];
			}
			/* qdtext and quoted-pair exclude controls but HTAB. */
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return -1;
			(*pos)++;
		}
		p->value.s = s + start;
		p->value.len = *pos - start;
		(*pos)++;
		return 1;
	}
	p->value.quoted = false;
	p->value.s = s + *pos;
	p->value.len = read_token(s, len, pos);
	return p->value.len > 0 ? 1 : -1;
}

/* Finds the boundary parameter of a multipart/form-data Content-Type value. */
bool
multipart_boundary(const char *ct, size_t len, const char **boundary, size_t *blen,
				   const char **error)
{
	size_t		pos = 0;
	size_t		start;
	Param		p;
	int			rc;

	*boundary = NULL;
	*blen = 0;
	/* The media type is what lies before the first parameter. */
	skip_ows(ct, len, &pos);
	start = pos;
	if (read_token(ct, len, &pos) == 0 || pos >= len || ct[pos] != '/' ||
		(pos++, read_token(ct, len, &pos)) == 0 ||
		!equals_nocase(ct + start, pos - start, "multipart/form-data"))
	{
		*error = "the content type is not multipart/form-data";
		return false;
	}
	while ((rc = next_param(ct, len, &pos, &p)) == 1)
	{
		if (!equals_nocase(p.name, p.namelen, "boundary"))
			continue;
		if (*boundary != NULL)
		{
			*error = "the content type names two boundaries";
			return false;
		}
		/* bchars hold no quote or backslash: a quoted boundary is its inside. */
		*boundary = p.value.s;
		*blen = p.value.len;
	}
	if (rc < 0)
	{
		*error = "the content type's parameters are malformed";
		return false;
	}
	if (*boundary == NULL)
	{
		*error = "the content type has no boundary parameter";
		return false;
	}
	if (*blen == 0 || *blen > MULTIPART_MAX_BOUNDARY || (*boundary)[*blen - 1] == ' ')
	{
		*error = "the boundary must be 1 to 70 characters, not ending in a space";
		return false;
	}
	for (size_t i = 0; i < *blen; i++)
		if (!is_bchar((unsigned char) (*boundary)[i]))
		{
			*error = "the boundary holds a character RFC 2046 does not allow";
			return false;
		}
	return true;
}

/* Starts reading a body whose parts are separated by boundary. */
void
multipart_begin(MultipartScan *scan, const char *body, size_t len,
				const char *boundary, size_t blen)
{
	scan->body = body;
	scan->len = len;
	scan->boundary = boundary;
	scan->blen = blen;
	scan->pos = 0;
	scan->nparts = 0;
	scan->started = false;
	scan->done = false;
	scan->error = NULL;
}

/* The first CRLF "--" boundary in s[0..n), or NULL. */
static const char *
find_delimiter(const MultipartScan *scan, const char *s, size_t n)
{
	size_t		need = 4 + scan->blen;
	const char *end = s + n;

	while ((size_t) (end - s) >= need)
	{
		const char *cr = memchr(s, '\r', (size_t) (end - s) - need + 1);

		if (cr == NULL)
			return NULL;
		if (cr[1] == '\n' && cr[2] == '-' && cr[3] == '-' &&
			memcmp(cr + 4, scan->boundary, scan->blen) == 0)
			return cr;
		s = cr + 1;
	}
	return NULL;
}

/* Fails the scan with a reason; returns -1. */
static int
fail(MultipartScan *scan, const char *why)
{
	scan->error = why;
	scan->done = true;
	return -1;
}

/* Reads one header line of a part into *part; NULL, or why it is refused. */
static const char *
read_part_header(const char *line, size_t len, MultipartPart *part, bool *seen_disposition)
{
	size_t		pos = 0;
	size_t		namelen = read_token(line, len, &pos);
	const char *name = line;
	size_t		vstart,
				vend;

	if (len > 0 && (line[0] == ' ' || line[0] == '\t'))
		return "a part's header line is folded (RFC 7578 forbids it)";
	if (namelen == 0 || pos >= len || line[pos] != ':')
		return "a part's header line is not \"name: value\"";
	pos++;
	skip_ows(line, len, &pos);
	vstart = pos;
	vend = len;
	while (vend > vstart && (line[vend - 1] == ' ' || line[vend - 1] == '\t'))
		vend--;
	for (size_t i = vstart; i < vend; i++)
	{
		unsigned char c = (unsigned char) line[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return "a part's header value holds a control character";
	}

	if (equals_nocase(name, namelen, "content-disposition"))
	{
		Param		p;
		int			rc;

		if (*seen_disposition)
			return "a part has two Content-Disposition headers";
		*seen_disposition = true;
		pos = vstart;
		if (!equals_nocase(line + vstart, read_token(line, vend, &pos), "form-data"))
			return "a part's Content-Disposition is not form-data";
		while ((rc = next_param(line, vend, &pos, &p)) == 1)
		{
			MultipartValue *slot = NULL;

			if (equals_nocase(p.name, p.namelen, "name"))
				slot = &part->name;
			else if (equals_nocase(p.name, p.namelen, "filename"))
				slot = &part->filename;
			else if (equals_nocase(p.name, p.namelen, "filename*"))
				slot = &part->filename_ext;
			if (slot == NULL)
				continue;
			if (slot->s != NULL)
				return "a part's Content-Disposition repeats a parameter";
			*slot = p.value;
		}
		if (rc < 0)
			return "a part's Content-Disposition parameters are malformed";
	}
	else if (equals_nocase(name, namelen, "content-type"))
	{
		if (part->content_type != NULL)
			return "a part has two Content-Type headers";
		part->content_type = line + vstart;
		part->content_type_len = vend - vstart;
	}
	/* Other headers (Content-Transfer-Encoding included) are not read. */
	return NULL;
}

/* Reads a part's header block head[0..len), which holds no blank line. */
static const char *
read_part_head(const char *head, size_t len, MultipartPart *part)
{
	bool		seen_disposition = false;
	size_t		pos = 0;

	while (pos < len)
	{
		const char *crlf = NULL;
		size_t		linelen;
		const char *why;

		for (size_t i = pos; i + 1 < len; i++)
			if (head[i] == '\r' && head[i + 1] == '\n')
			{
				crlf = head + i;
				break;
			}
		linelen = crlf ? (size_t) (crlf - (head + pos)) : len - pos;
		if (memchr(head + pos, '\n', linelen) != NULL || memchr(head + pos, '\r', linelen) != NULL)
			return "a part's header line ends without CRLF";
		if ((why = read_part_header(head + pos, linelen, part, &seen_disposition)) != NULL)
			return why;
		pos += linelen + (crlf ? 2 : 0);
	}
	if (!seen_disposition)
		return "a part has no Content-Disposition header";
	if (part->name.s == NULL)
		return "a part's Content-Disposition has no name";
	return NULL;
}

/* Reads the next part. */
int
multipart_next(MultipartScan *scan, MultipartPart *part)
{
	const char *body = scan->body;
	size_t		len = scan->len;
	size_t		pos;
	size_t		headlen;
	const char *why;
	const char *next;
	bool		found_head = false;

	if (scan->done)
		return scan->error ? -1 : 0;
	if (!scan->started)
	{
		/* The first delimiter may open the body, or follow a preamble. */
		if (len >= 2 + scan->blen && body[0] == '-' && body[1] == '-' &&
			memcmp(body + 2, scan->boundary, scan->blen) == 0)
			scan->pos = 2 + scan->blen;
		else
		{
			const char *d = find_delimiter(scan, body, len);

			if (d == NULL)
				return fail(scan, "the body holds no boundary line");
			scan->pos = (size_t) (d - body) + 4 + scan->blen;
		}
		scan->started = true;
	}
	pos = scan->pos;

	/* After a delimiter: "--" closes the body, else blanks and CRLF. */
	if (len - pos >= 2 && body[pos] == '-' && body[pos + 1] == '-')
	{
		scan->done = true;
		return 0;
	}
	skip_ows(body, len, &pos);
	if (pos >= len || (len - pos == 1 && body[pos] == '\r'))
		return fail(scan, "the body ends without the closing boundary");
	if (len - pos < 2 || body[pos] != '\r' || body[pos + 1] != '\n')
		return fail(scan, "a boundary line is followed by other text than CRLF");
	pos += 2;

	memset(part, 0, sizeof(*part));
	/* The header block, up to its blank line (maybe at once: no headers). */
	if (len - pos >= 2 && body[pos] == '\r' && body[pos + 1] == '\n')
	{
		headlen = 0;
		found_head = true;
	}
	else
	{
		size_t		limit = len - pos < MULTIPART_MAX_PART_HEAD ? len - pos : MULTIPART_MAX_PART_HEAD;

		for (headlen = 0; headlen + 4 <= limit; headlen++)
			if (memcmp(body + pos + headlen, "\r\n\r\n", 4) == 0)
			{
				found_head = true;
				break;
			}
		if (!found_head)
			return fail(scan, len - pos < MULTIPART_MAX_PART_HEAD ?
						"the body ends inside a part's headers" :
						"a part's headers are longer than 8192 bytes");
	}
	if ((why = read_part_head(body + pos, headlen, part)) != NULL)
		return fail(scan, why);
	pos += headlen + (headlen == 0 ? 2 : 4);

	next = find_delimiter(scan, body + pos, len - pos);
	if (next == NULL)
		return fail(scan, "the body ends without the closing boundary");
	part->data = body + pos;
	part->datalen = (size_t) (next - (body + pos));
	scan->pos = (size_t) (next - body) + 4 + scan->blen;
	scan->nparts++;
	return 1;
}

/* Copies a parameter value, without a quoted-string's escapes. */
size_t
multipart_value_copy(const MultipartValue *v, char *out)
{
	size_t		n = 0;

	for (size_t i = 0; i < v->len; i++)
	{
		if (v->quoted && v->s[i] == '\\' && i + 1 < v->len)
			i++;
		out[n++] = v->s[i];
	}
	return n;
}

/* The value of a hexadecimal digit, or -1. */
static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes an RFC 8187 ext-value. */
long
multipart_ext_value_decode(const MultipartValue *v, char *out, bool *latin1)
{
	const char *s = v->s;
	const char *q1;
	const char *q2;
	size_t		n = 0;

	if (v->quoted || s == NULL)
		return -1;
	q1 = memchr(s, '\'', v->len);
	if (q1 == NULL)
		return -1;
	q2 = memchr(q1 + 1, '\'', v->len - (size_t) (q1 + 1 - s));
	if (q2 == NULL)
		return -1;
	if (equals_nocase(s, (size_t) (q1 - s), "utf-8"))
		*latin1 = false;
	else if (equals_nocase(s, (size_t) (q1 - s), "iso-8859-1"))
		*latin1 = true;
	else
		return -1;
	for (const char *p = q2 + 1; p < s + v->len; p++)
	{
		if (*p == '%')
		{
			int			hi,
						lo;

			if (s + v->len - p < 3 || (hi = hex_value(p[1])) < 0 || (lo = hex_value(p[2])) < 0)
				return -1;
			out[n++] = (char) (hi * 16 + lo);
			p += 2;
		}
		else if (is_tchar((unsigned char) *p) && *p != '*' && *p != '\'' && *p != '%')
			out[n++] = *p;
		else
			return -1;
	}
	return (long) n;
}
