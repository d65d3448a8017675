/*
 * screen.c
 *		Strict screening of an HTTP/1.x request head, before routing.
 *
 * Reads the head as RFC 9112 writes it: CRLF line ends only, no line
 * folding, token header names with the colon right after them, no control
 * bytes in values, one Host, at most one Content-Length and never with
 * Transfer-Encoding.  The request-target must be origin-form or
 * absolute-form, well percent-encoded, with no dot-segments, and decode to
 * UTF-8 without NULs.
 */
#include <string.h>

#include "parse/percent.h"
#include "parse/screen.h"

/* True for an RFC 9110 token character. */
static bool
is_tchar(unsigned char c)
{
	/* RFC 9110 tchar: ALPHA / DIGIT / "!#$%&'*+-.^_`|~", one bit per byte */
	static const uint32_t tchar_bits[8] = {
		0x00000000, 0x03ff6cfa, 0xc7fffffe, 0x57ffffff, 0, 0, 0, 0
	};

	return (tchar_bits[c >> 5] >> (c & 31)) & 1;
}

/* True for an ASCII digit. */
static bool
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* c in lower case, if it is an ASCII letter. */
static char
lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* True if s[0..len) is lit, ignoring ASCII case (lit is lower case). */
static bool
equals_ci(const char *s, size_t len, const char *lit)
{
	size_t		n = strlen(lit);

	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(s[i]) != lit[i])
			return false;
	return true;
}

/* A byte repeated over a 64-bit word, and the high bit of every byte. */
#define EVERY_BYTE(b)	(UINT64_C(0x0101010101010101) * (b))
#define HIGH_BITS		EVERY_BYTE(0x80)

/* True for a byte a header value must not hold: a control byte but tab, or DEL. */
static inline bool
is_value_control(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/*
 * True if some byte of w is below 0x20 or is 0x7f.  Exact as to whether
 * there is one (a borrow starts only at such a byte); it may be a tab,
 * which the caller checks byte by byte.
 */
static inline bool
word_may_hold_control(uint64_t w)
{
	uint64_t	del = w ^ EVERY_BYTE(0x7f);

	return ((((w - EVERY_BYTE(0x20)) & ~w) | ((del - EVERY_BYTE(1)) & ~del)) & HIGH_BITS) != 0;
}

/*
 * True if value[0..len) holds a byte is_value_control() refuses.  Eight
 * bytes at a time: a value (a token, a cookie) is read on every request,
 * and a byte at a time cost a nanosecond a byte.
 */
static bool
value_has_control(const char *value, size_t len)
{
	size_t		k = 0;

	for (; k + sizeof(uint64_t) <= len; k += sizeof(uint64_t))
	{
		uint64_t	w;

		memcpy(&w, value + k, sizeof(w));
		if (word_may_hold_control(w))
			for (size_t j = k; j < k + sizeof(uint64_t); j++)
				if (is_value_control((unsigned char) value[j]))
					return true;
	}
	for (; k < len; k++)
		if (is_value_control((unsigned char) value[k]))
			return true;
	return false;
}

/* Notes a refusal's status and reason in res; returns false. */
static bool
fail(ScreenResult *res, int status, const char *reason)
{
	res->status = status;
	res->reason = reason;
	return false;
}

/*
 * Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
 * U+10FFFF.  need counts continuation bytes still due; lo/hi bound the next.
 */
typedef struct Utf8State
{
	int			need;
	unsigned char lo;
	unsigned char hi;
} Utf8State;

/* Feeds one byte to a UTF-8 validator; false if it cannot follow. */
static bool
utf8_step(Utf8State *st, unsigned char c)
{
	if (st->need > 0)
	{
		if (c < st->lo || c > st->hi)
			return false;
		st->need--;
		st->lo = 0x80;
		st->hi = 0xBF;
		return true;
	}
	st->lo = 0x80;
	st->hi = 0xBF;
	if (c < 0x80)
		return c != 0;			/* a decoded NUL can never become text */
	if (c >= 0xC2 && c <= 0xDF)
		st->need = 1;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		st->need = 2;
		if (c == 0xE0)
			st->lo = 0xA0;
		else if (c == 0xED)
			st->hi = 0x9F;
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		st->need = 3;
		if (c == 0xF0)
			st->lo = 0x90;
		else if (c == 0xF4)
			st->hi = 0x8F;
	}
	else
		return false;
	return true;
}

/* Checks the origin-form part of a target: path, then optional query. */
static bool
screen_origin(const char *t, size_t len, ScreenResult *res)
{
	Utf8State	u = {0, 0x80, 0xBF};
	bool		in_query = false;
	size_t		seg_start = 1;

	if (len == 0 || t[0] != '/')
		return fail(res, 400, "the request target must start with \"/\"");

	for (size_t i = 0; i <= len; i++)
	{
		unsigned char c = (i < len) ? (unsigned char) t[i] : '\0';
		bool		boundary = (i == len) || c == '?' ||
			(!in_query && c == '/') || (in_query && (c == '&' || c == '='));

		if (boundary)
		{
			if (u.need > 0)
				return fail(res, 400, "the request target holds an incomplete UTF-8 sequence");
			if (!in_query && i > 0)
			{
				/* "." and ".." segments, plain or percent-encoded */
				const char *s = t + seg_start;
				size_t		n = i - seg_start;
				size_t		dots = 0,
							k = 0;

				while (k < n)
				{
					if (s[k] == '.')
						k++;
					else if (k + 3 <= n && s[k] == '%' && s[k + 1] == '2' && lower(s[k + 2]) == 'e')
						k += 3;
					else
						break;
					dots++;
				}
				if (k == n && (dots == 1 || dots == 2))
					return fail(res, 400, "the request path holds a \".\" or \"..\" segment");
				seg_start = i + 1;
			}
			if (c == '?')
				in_query = true;
			continue;
		}
		if (c == '#')
			return fail(res, 400, "the request target holds a fragment");
		if (c == '%')
		{
			int			hi,
						lo;

			if (i + 2 >= len || (hi = percent_hexval(t[i + 1])) < 0 || (lo = percent_hexval(t[i + 2])) < 0)
				return fail(res, 400, "the request target holds a malformed percent-escape");
			c = (unsigned char) (hi * 16 + lo);
			i += 2;
		}
		if (!utf8_step(&u, c))
			return fail(res, 400, "the request target does not decode to valid UTF-8 text");
	}
	return true;
}

/* True if s[0..len) is a valid Host field value. */
bool
screen_host(const char *s, size_t len)
{
	size_t		i = 0;

	if (len > 0 && s[0] == '[')
	{
		/* IP-literal: hex digits, colons and dots (IPv6, with an IPv4 tail) */
		for (i = 1; i < len && s[i] != ']'; i++)
			if (percent_hexval(s[i]) < 0 && s[i] != ':' && s[i] != '.')
				return false;
		if (i >= len || i == 1)
			return false;
		i++;
	}
	else
	{
		/* reg-name: unreserved, sub-delims and percent-escapes */
		static const char allowed[] = "-._~!$&'()*+,;=";

		for (; i < len && s[i] != ':'; i++)
		{
			unsigned char c = (unsigned char) s[i];

			if (c == '%')
			{
				if (i + 2 >= len || percent_hexval(s[i + 1]) < 0 || percent_hexval(s[i + 2]) < 0)
					return false;
				i += 2;
			}
			else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
					   (c != '\0' && memchr(allowed, c, sizeof(allowed) - 1) != NULL)))
				return false;
		}
	}
	if (i == len)
		return true;
	if (s[i] != ':')
		return false;
	/* port: digits, possibly none (RFC 3986) */
	if (len - i - 1 > 5)
		return false;
	for (i++; i < len; i++)
		if (!is_digit((unsigned char) s[i]))
			return false;
	return true;
}

/* Origin-form is routed as it is; absolute-form is routed on its path. */
static bool
screen_target(const char *t, size_t len, ScreenResult *res)
{
	size_t		auth,
				i;

	res->path_offset = 0;
	if (len > 0 && t[0] == '/')
		return screen_origin(t, len, res);

	if (len >= 7 && equals_ci(t, 7, "http://"))
		auth = 7;
	else if (len >= 8 && equals_ci(t, 8, "https://"))
		auth = 8;
	else if (len == 1 && t[0] == '*')
		return fail(res, 400, "asterisk-form request targets are not supported");
	else
		return fail(res, 400, "the request target is neither origin-form nor absolute-form");

	for (i = auth; i < len && t[i] != '/' && t[i] != '?'; i++)
		;
	if (i == auth || !screen_host(t + auth, i - auth))
		return fail(res, 400, "the request target has an invalid authority");
	res->path_offset = i;
	if (i == len)
		return true;			/* "http://host": the path is "/" */
	if (t[i] == '?')
	{
		/* Check it as if the path "/" came first. */
		char		probe[SCREEN_MAX_TARGET + 1];

		probe[0] = '/';
		memcpy(probe + 1, t + i, len - i);
		return screen_origin(probe, len - i + 1, res);
	}
	return screen_origin(t + i, len - i, res);
}

/* Screens a method on its own: see screen.h. */
bool
screen_method(const char *m, size_t len, ScreenResult *res)
{
	if (len == 0)
		return fail(res, 400, "the request method is empty or not a token");
	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char) m[i]))
			return fail(res, 400, "the request method is empty or not a token");
	if (len > SCREEN_MAX_METHOD)
		return fail(res, 501, "the request method is longer than any this server supports");
	if (len == 7 && memcmp(m, "CONNECT", 7) == 0)
		return fail(res, 501, "CONNECT is not supported by an origin server");
	return true;
}

/* Screens an origin-form request-target on its own: see screen.h. */
bool
screen_origin_target(const char *t, size_t len, ScreenResult *res)
{
	res->path_offset = 0;
	if (len == 0)
		return fail(res, 400, "the request target is empty");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char) t[i] <= 0x20 || (unsigned char) t[i] >= 0x7f)
			return fail(res, 400, "the request target holds a byte that must be percent-encoded");
	if (len > SCREEN_MAX_TARGET)
		return fail(res, 414, "the request target is too long");
	if (len == 1 && t[0] == '*')
		return fail(res, 400, "asterisk-form request targets are not supported");
	return screen_origin(t, len, res);
}

/* Screens a field on its own: see screen.h. */
bool
screen_field(const char *name, size_t namelen, const char *value, size_t valuelen,
			 ScreenResult *res)
{
	if (namelen == 0)
		return fail(res, 400, "an invalid header name");
	for (size_t i = 0; i < namelen; i++)
		if (!is_tchar((unsigned char) name[i]))
			return fail(res, 400, "an invalid header name");
	if (value_has_control(value, valuelen))
		return fail(res, 400, "a control character in a header value");
	return true;
}

/* How many of each header field that frames the request screen_request met. */
typedef struct FramingCounts
{
	int			nhost;
	int			nlength;
	int			nencoding;
} FramingCounts;

/*
 * Screens the request line at buf[*pos..len) (method SP request-target SP
 * HTTP-version CRLF) and moves *pos past it.
 */
static inline bool
screen_request_line(const char *buf, size_t len, size_t *pos, ScreenResult *res)
{
	size_t		i = *pos;
	size_t		start;

	start = i;
	while (i < len && is_tchar((unsigned char) buf[i]))
		i++;
	res->method = buf + start;
	res->method_len = i - start;
	if (res->method_len == 0)
		return fail(res, 400, "the request method is empty or not a token");
	if (res->method_len > SCREEN_MAX_METHOD)
		return fail(res, 501, "the request method is longer than any this server supports");
	if (i >= len || buf[i] != ' ')
		return fail(res, 400, "the request method is not a token");
	i++;

	start = i;
	while (i < len && (unsigned char) buf[i] > 0x20 && (unsigned char) buf[i] < 0x7f)
		i++;
	res->target = buf + start;
	res->target_len = i - start;
	if (res->target_len == 0)
		return fail(res, 400, "the request target is empty");
	if (i >= len || buf[i] != ' ')
		return fail(res, 400, "the request target holds a byte that must be percent-encoded");
	if (res->target_len > SCREEN_MAX_TARGET)
		return fail(res, 414, "the request target is too long");
	i++;

	if (len - i < 10 || memcmp(buf + i, "HTTP/1.", 7) != 0 || !is_digit((unsigned char) buf[i + 7]))
		return fail(res, 505, "only HTTP/1.0 and HTTP/1.1 are served");
	res->minor_version = buf[i + 7] - '0';
	if (buf[i + 8] != '\r' || buf[i + 9] != '\n')
		return fail(res, 400, "the request line does not end with CRLF");
	i += 10;

	if (res->method_len == 7 && memcmp(res->method, "CONNECT", 7) == 0)
		return fail(res, 501, "CONNECT is not supported by an origin server");
	*pos = i;
	return screen_target(res->target, res->target_len, res);
}

/*
 * Screens the field line at buf[*pos..len), sets its name and value (without
 * surrounding whitespace), and moves *pos past it.
 */
static inline bool
screen_field_line(const char *buf, size_t len, size_t *pos, ScreenResult *res,
				  const char **name, size_t *namelen, const char **value, size_t *valuelen)
{
	size_t		i = *pos;

	if (buf[i] == ' ' || buf[i] == '\t')
		return fail(res, 400, "obsolete header line folding");

	*name = buf + i;
	while (i < len && is_tchar((unsigned char) buf[i]))
		i++;
	*namelen = (buf + i) - *name;
	if (*namelen == 0 || i >= len || buf[i] != ':')
		return fail(res, 400, "an invalid header name");
	i++;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	*value = buf + i;
	{
		/*
		 * Find the CR with memchr, then check the bytes before it a word
		 * at a time; only a bad value walks it again to say what is wrong.
		 */
		const char *cr = memchr(buf + i, '\r', len - i);
		size_t		end = cr ? (size_t) (cr - buf) : len;

		if (value_has_control(buf + i, end - i))
		{
			for (; i < end; i++)
			{
				unsigned char c = (unsigned char) buf[i];

				if (c == '\n')
					return fail(res, 400, "a bare LF in the request head");
				if (is_value_control(c))
					return fail(res, 400, "a control character in a header value");
			}
		}
		if (cr == NULL)
			return fail(res, 400, "the request head is incomplete");
		i = end;
	}
	if (i + 1 >= len || buf[i + 1] != '\n')
		return fail(res, 400, "a bare CR in the request head");
	*valuelen = (buf + i) - *value;
	while (*valuelen > 0 && ((*value)[*valuelen - 1] == ' ' || (*value)[*valuelen - 1] == '\t'))
		(*valuelen)--;
	i += 2;
	*pos = i;
	return true;
}

/* Screens a field that frames the request: Host, Content-Length, Transfer-Encoding. */
static inline bool
screen_framing_field(const char *name, size_t namelen, const char *value, size_t valuelen,
					 FramingCounts *counts, ScreenResult *res)
{
	if (equals_ci(name, namelen, "host"))
	{
		if (++counts->nhost > 1)
			return fail(res, 400, "more than one Host header");
		if (!screen_host(value, valuelen))
			return fail(res, 400, "an invalid Host header");
	}
	else if (equals_ci(name, namelen, "content-length"))
	{
		uint64_t	n = 0;

		if (++counts->nlength > 1)
			return fail(res, 400, "more than one Content-Length header");
		if (valuelen == 0 || valuelen > SCREEN_MAX_LENGTH_DIGITS)
			return fail(res, 400, "an invalid Content-Length header");
		for (size_t k = 0; k < valuelen; k++)
		{
			if (!is_digit((unsigned char) value[k]))
				return fail(res, 400, "an invalid Content-Length header");
			n = n * 10 + (value[k] - '0');
		}
		res->content_length = n;
		res->has_body = true;
	}
	else if (equals_ci(name, namelen, "transfer-encoding"))
	{
		if (++counts->nencoding > 1)
			return fail(res, 400, "more than one Transfer-Encoding header");
		if (!equals_ci(value, valuelen, "chunked"))
			return fail(res, 400, "a Transfer-Encoding other than chunked");
		res->chunked = true;
		res->has_body = true;
	}
	return true;
}

/* Screens the request head at buf[0..len). */
bool
screen_request(const char *buf, size_t len, ScreenResult *res)
{
	size_t		i = 0;
	FramingCounts counts = {0, 0, 0};

	memset(res, 0, sizeof(*res));

	/* RFC 9112 2.2: one empty line before the request line is ignored. */
	if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
		i = 2;
	if (!screen_request_line(buf, len, &i, res))
		return false;

	/* field-line CRLF ... CRLF */
	for (;;)
	{
		const char *name,
				   *value;
		size_t		namelen,
					valuelen;

		if (i >= len)
			return fail(res, 400, "the request head is incomplete");
		if (buf[i] == '\r')
		{
			if (i + 1 >= len || buf[i + 1] != '\n')
				return fail(res, 400, "a bare CR in the request head");
			i += 2;
			break;
		}
		if (!screen_field_line(buf, len, &i, res, &name, &namelen, &value, &valuelen) ||
			!screen_framing_field(name, namelen, value, valuelen, &counts, res))
			return false;
	}
	res->head_len = i;
	if (res->head_len > SCREEN_MAX_HEAD)
		return fail(res, 431, "the request head is too large");

	if (counts.nencoding > 0 && counts.nlength > 0)
		return fail(res, 400, "both Content-Length and Transfer-Encoding");
	if (counts.nencoding > 0 && res->minor_version == 0)
		return fail(res, 400, "Transfer-Encoding in an HTTP/1.0 request");
	if (res->minor_version >= 1 && counts.nhost == 0)
		return fail(res, 400, "no Host header");
	return true;
}
