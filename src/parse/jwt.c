/*
 * jwt.c
 *		Takes a JSON Web Token apart: base64url, JSON, the registered claims.
 *
 * Written here rather than taken from a library because webgres needs only
 * the strict subset that JWS compact tokens use, wants every refusal to be
 * the same 401 with the reason in the log, and must fuzz what it parses.
 * Verification (signatures, keys) is serve/auth.c's, on OpenSSL.
 */
#include "postgres.h"

#include <math.h>
#include <stdint.h>

#include "parse/jwt.h"

/* Where a JSON parse is, and why it stopped. */
typedef struct JsonCursor
{
	const char *p;
	const char *end;
	const char *error;
} JsonCursor;

static bool parse_value(JsonCursor *c, JwtJson *out, int depth);

/* The value of one base64url character, or -1. */
static int
b64url_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '-')
		return 62;
	if (ch == '_')
		return 63;
	return -1;
}

/* Decodes unpadded base64url into a palloc'd buffer; false for anything malformed. */
bool
jwt_base64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
	unsigned char *buf;
	size_t		n = 0;
	uint32_t	acc = 0;
	int			bits = 0;

	/* One character alone carries only six bits: never a whole byte. */
	if (len % 4 == 1)
		return false;
	buf = palloc(len * 3 / 4 + 1);
	for (size_t i = 0; i < len; i++)
	{
		int			v = b64url_value((unsigned char) in[i]);

		if (v < 0)
			return false;
		acc = (acc << 6) | (uint32_t) v;
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			buf[n++] = (unsigned char) (acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* The bits past the last byte must be zero: one encoding per value. */
	if (acc != 0)
		return false;
	*out = buf;
	*outlen = n;
	return true;
}

/* Encodes bytes as unpadded base64url, NUL-terminated. */
char *
jwt_base64url_encode(const unsigned char *in, size_t len)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char	   *out = palloc(len / 3 * 4 + 5);
	size_t		n = 0;
	size_t		i;

	for (i = 0; i + 2 < len; i += 3)
	{
		uint32_t	v = ((uint32_t) in[i] << 16) | ((uint32_t) in[i + 1] << 8) | in[i + 2];

		out[n++] = alphabet[(v >> 18) & 63];
		out[n++] = alphabet[(v >> 12) & 63];
		out[n++] = alphabet[(v >> 6) & 63];
		out[n++] = alphabet[v & 63];
	}
	if (len - i == 1)
	{
		out[n++] = alphabet[in[i] >> 2];
		out[n++] = alphabet[(in[i] & 3) << 4];
	}
	else if (len - i == 2)
	{
		out[n++] = alphabet[in[i] >> 2];
		out[n++] = alphabet[((in[i] & 3) << 4) | (in[i + 1] >> 4)];
		out[n++] = alphabet[(in[i + 1] & 15) << 2];
	}
	out[n] = '\0';
	return out;
}

/* Skips JSON whitespace. */
static void
skip_space(JsonCursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

/* Appends code point cp to buf as UTF-8; buf has room for four bytes. */
static size_t
put_utf8(char *buf, uint32_t cp)
{
	if (cp < 0x80)
	{
		buf[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		buf[0] = (char) (0xC0 | (cp >> 6));
		buf[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		buf[0] = (char) (0xE0 | (cp >> 12));
		buf[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		buf[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	buf[0] = (char) (0xF0 | (cp >> 18));
	buf[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	buf[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	buf[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/*
 * Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0.
 */
static size_t
utf8_sequence(const unsigned char *p, const unsigned char *end)
{
	size_t		len;
	uint32_t	cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		len = 2, cp = p[0] & 0x1F;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		len = 3, cp = p[0] & 0x0F;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if ((size_t) (end - p) < len)
		return 0;
	for (size_t i = 1; i < len; i++)
	{
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		(cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/* Reads four hex digits at c->p; -1 if they are not. */
static int32_t
read_hex4(JsonCursor *c)
{
	int32_t		v = 0;

	if (c->end - c->p < 4)
		return -1;
	for (int i = 0; i < 4; i++)
	{
		char		ch = *c->p++;

		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			v |= ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			v |= ch - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Reads a \u escape (c->p just past the "u"), pairing surrogates; 0 on error. */
static uint32_t
read_unicode_escape(JsonCursor *c)
{
	int32_t		hi = read_hex4(c);
	int32_t		lo;

	if (hi <= 0)
		return 0;				/* malformed, or U+0000, which text cannot hold */
	if (hi >= 0xDC00 && hi <= 0xDFFF)
		return 0;
	if (hi < 0xD800 || hi > 0xDBFF)
		return (uint32_t) hi;
	if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
		return 0;
	c->p += 2;
	lo = read_hex4(c);
	if (lo < 0xDC00 || lo > 0xDFFF)
		return 0;
	return 0x10000 + (((uint32_t) hi - 0xD800) << 10) + ((uint32_t) lo - 0xDC00);
}

/* Reads a JSON string (c->p at its opening quote) into *str, unescaped. */
static bool
parse_string(JsonCursor *c, char **str, size_t *len)
{
	const char *start = ++c->p;
	char	   *buf;
	size_t		n = 0;

	/* Unescaping never makes a string longer. */
	while (c->p < c->end && *c->p != '"')
		c->p += (*c->p == '\\' && c->p + 1 < c->end) ? 2 : 1;
	if (c->p >= c->end)
	{
		c->error = "unterminated string";
		return false;
	}
	buf = palloc(c->p - start + 1);
	c->p = start;
	while (*c->p != '"')
	{
		unsigned char ch = (unsigned char) *c->p;

		if (ch < 0x20)
		{
			c->error = "control character in a string";
			return false;
		}
		if (ch == '\\')
		{
			char		e = c->p[1];
			uint32_t	cp;

			c->p += 2;
			switch (e)
			{
				case '"': buf[n++] = '"'; break;
				case '\\': buf[n++] = '\\'; break;
				case '/': buf[n++] = '/'; break;
				case 'b': buf[n++] = '\b'; break;
				case 'f': buf[n++] = '\f'; break;
				case 'n': buf[n++] = '\n'; break;
				case 'r': buf[n++] = '\r'; break;
				case 't': buf[n++] = '\t'; break;
				case 'u':
					if ((cp = read_unicode_escape(c)) == 0)
					{
						c->error = "invalid \\u escape in a string";
						return false;
					}
					n += put_utf8(buf + n, cp);
					break;
				default:
					c->error = "invalid escape in a string";
					return false;
			}
		}
		else
		{
			size_t		seq = utf8_sequence((const unsigned char *) c->p,
											(const unsigned char *) c->end);

			if (seq == 0)
			{
				c->error = "invalid UTF-8 in a string";
				return false;
			}
			memcpy(buf + n, c->p, seq);
			n += seq;
			c->p += seq;
		}
	}
	c->p++;
	buf[n] = '\0';
	*str = buf;
	*len = n;
	return true;
}

/* Skips one or more digits (a fraction's, an exponent's); false if there are none. */
static bool
skip_digits(JsonCursor *c)
{
	if (c->p >= c->end || *c->p < '0' || *c->p > '9')
	{
		c->error = "invalid number";
		return false;
	}
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return true;
}

/* Reads a JSON number as RFC 8259 writes it. */
static bool
parse_number(JsonCursor *c, JwtJson *out)
{
	const char *start = c->p;
	char	   *copy;

	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (c->p < c->end && *c->p >= '1' && *c->p <= '9')
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
			c->p++;
	else
	{
		c->error = "invalid number";
		return false;
	}
	if (c->p < c->end && *c->p == '.')
	{
		c->p++;
		if (!skip_digits(c))
			return false;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E'))
	{
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!skip_digits(c))
			return false;
	}
	copy = pnstrdup(start, c->p - start);
	out->kind = JWT_JSON_NUMBER;
	out->number = strtod(copy, NULL);
	return true;
}

/* Reads the literal word (true, false, null) at c->p. */
static bool
parse_literal(JsonCursor *c, const char *word, JwtJsonKind kind, JwtJson *out)
{
	size_t		len = strlen(word);

	if ((size_t) (c->end - c->p) < len || memcmp(c->p, word, len) != 0)
	{
		c->error = "invalid JSON value";
		return false;
	}
	c->p += len;
	out->kind = kind;
	return true;
}

/* Reads an array or object's members; c->p just past its opening bracket. */
static bool
parse_members(JsonCursor *c, JwtJson *out, bool object, int depth)
{
	char		close = object ? '}' : ']';
	int			cap = 4;

	out->kind = object ? JWT_JSON_OBJECT : JWT_JSON_ARRAY;
	out->n = 0;
	out->items = palloc(sizeof(JwtJson) * cap);
	if (object)
	{
		out->keys = palloc(sizeof(char *) * cap);
		out->keylens = palloc(sizeof(size_t) * cap);
	}
	skip_space(c);
	if (c->p < c->end && *c->p == close)
	{
		c->p++;
		return true;
	}
	for (;;)
	{
		if (out->n == JWT_MAX_MEMBERS)
		{
			c->error = "too many members in an object or array";
			return false;
		}
		if (out->n == cap)
		{
			cap *= 2;
			out->items = repalloc(out->items, sizeof(JwtJson) * cap);
			if (object)
			{
				out->keys = repalloc(out->keys, sizeof(char *) * cap);
				out->keylens = repalloc(out->keylens, sizeof(size_t) * cap);
			}
		}
		skip_space(c);
		if (object)
		{
			char	   *key;
			size_t		keylen;

			if (c->p >= c->end || *c->p != '"')
			{
				c->error = "expected a member name";
				return false;
			}
			if (!parse_string(c, &key, &keylen))
				return false;
			/* A member named twice would mean what each reader decides: refuse. */
			for (int i = 0; i < out->n; i++)
				if (out->keylens[i] == keylen && memcmp(out->keys[i], key, keylen) == 0)
				{
					c->error = "a member is named twice";
					return false;
				}
			out->keys[out->n] = key;
			out->keylens[out->n] = keylen;
			skip_space(c);
			if (c->p >= c->end || *c->p != ':')
			{
				c->error = "expected ':'";
				return false;
			}
			c->p++;
		}
		if (!parse_value(c, &out->items[out->n], depth + 1))
			return false;
		out->n++;
		skip_space(c);
		if (c->p < c->end && *c->p == ',')
		{
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == close)
		{
			c->p++;
			return true;
		}
		c->error = "expected ',' or the end of an object or array";
		return false;
	}
}

/* Reads one JSON value at c->p. */
static bool
parse_value(JsonCursor *c, JwtJson *out, int depth)
{
	memset(out, 0, sizeof(*out));
	if (depth > JWT_MAX_DEPTH)
	{
		c->error = "JSON nested too deeply";
		return false;
	}
	skip_space(c);
	if (c->p >= c->end)
	{
		c->error = "unexpected end of JSON";
		return false;
	}
	switch (*c->p)
	{
		case '{':
		case '[':
			c->p++;
			return parse_members(c, out, c->p[-1] == '{', depth);
		case '"':
			out->kind = JWT_JSON_STRING;
			return parse_string(c, &out->str, &out->len);
		case 't':
			return parse_literal(c, "true", JWT_JSON_TRUE, out);
		case 'f':
			return parse_literal(c, "false", JWT_JSON_FALSE, out);
		case 'n':
			return parse_literal(c, "null", JWT_JSON_NULL, out);
		default:
			return parse_number(c, out);
	}
}

/* Parses one JSON text strictly; NULL, with *error, if it is malformed. */
JwtJson *
jwt_json_parse(const char *text, size_t len, const char **error)
{
	JsonCursor	c = {text, text + len, NULL};
	JwtJson    *v = palloc(sizeof(JwtJson));

	if (!parse_value(&c, v, 0))
	{
		*error = c.error;
		return NULL;
	}
	skip_space(&c);
	if (c.p != c.end)
	{
		*error = "text after the JSON value";
		return NULL;
	}
	return v;
}

/* The member of object o named name, or NULL. */
static const JwtJson *
member(const JwtJson *o, const char *name, size_t len)
{
	if (o == NULL || o->kind != JWT_JSON_OBJECT)
		return NULL;
	for (int i = 0; i < o->n; i++)
		if (o->keylens[i] == len && memcmp(o->keys[i], name, len) == 0)
			return &o->items[i];
	return NULL;
}

/* Reads a NumericDate claim (RFC 7519 section 2): a finite number if present. */
static bool
numeric_date(const JwtJson *claims, const char *name, bool *has, double *value,
			 const char **error)
{
	const JwtJson *v = member(claims, name, strlen(name));

	*has = (v != NULL);
	if (v == NULL)
		return true;
	if (v->kind != JWT_JSON_NUMBER || !isfinite(v->number))
	{
		*error = "a time claim (exp, nbf, iat) is not a number";
		return false;
	}
	*value = v->number;
	return true;
}

/* Checks the registered claims whose types RFC 7519 fixes. */
static bool
check_claim_types(JwtToken *t, const char **error)
{
	const JwtJson *v;

	if (!numeric_date(t->claims, "exp", &t->times.has_exp, &t->times.exp, error) ||
		!numeric_date(t->claims, "nbf", &t->times.has_nbf, &t->times.nbf, error) ||
		!numeric_date(t->claims, "iat", &t->times.has_iat, &t->times.iat, error))
		return false;
	if ((v = member(t->claims, "iss", 3)) != NULL && v->kind != JWT_JSON_STRING)
	{
		*error = "the iss claim is not a string";
		return false;
	}
	if ((v = member(t->claims, "aud", 3)) != NULL && v->kind != JWT_JSON_STRING)
	{
		if (v->kind != JWT_JSON_ARRAY)
		{
			*error = "the aud claim is neither a string nor an array";
			return false;
		}
		for (int i = 0; i < v->n; i++)
			if (v->items[i].kind != JWT_JSON_STRING)
			{
				*error = "the aud claim holds something other than strings";
				return false;
			}
	}
	return true;
}

/* Reads the protected header's alg, kid and crit. */
static bool
check_header(JwtToken *t, const char **error)
{
	const JwtJson *alg = member(t->header, "alg", 3);
	const JwtJson *kid = member(t->header, "kid", 3);

	if (alg == NULL || alg->kind != JWT_JSON_STRING || alg->len == 0)
	{
		*error = "the header has no alg";
		return false;
	}
	t->alg = alg->str;
	if (kid != NULL && kid->kind != JWT_JSON_STRING)
	{
		*error = "the header's kid is not a string";
		return false;
	}
	t->kid = kid != NULL ? kid->str : NULL;
	/* No extension is understood, so any critical one must be refused (RFC 7515 4.1.11). */
	if (member(t->header, "crit", 4) != NULL)
	{
		*error = "the header names critical extensions";
		return false;
	}
	return true;
}

/* Decodes one base64url part holding a JSON object. */
static JwtJson *
decode_json_part(const char *part, size_t len, char **text, const char **error)
{
	unsigned char *raw;
	size_t		rawlen;
	JwtJson    *v;

	if (!jwt_base64url_decode(part, len, &raw, &rawlen))
	{
		*error = "malformed base64url";
		return NULL;
	}
	if ((v = jwt_json_parse((const char *) raw, rawlen, error)) == NULL)
		return NULL;
	if (v->kind != JWT_JSON_OBJECT)
	{
		*error = "a token part is not a JSON object";
		return NULL;
	}
	raw[rawlen] = '\0';			/* the buffer has a byte to spare */
	if (text != NULL)
		*text = (char *) raw;
	return v;
}

/* Takes a compact JWT apart into header, claims and signature; nothing is verified. */
bool
jwt_parse(const char *token, size_t len, JwtToken *out, const char **error)
{
	const char *dot1;
	const char *dot2;
	const char *end = token + len;

	memset(out, 0, sizeof(*out));
	if (len > JWT_MAX_TOKEN_LEN)
	{
		*error = "token too long";
		return false;
	}
	if ((dot1 = memchr(token, '.', len)) == NULL ||
		(dot2 = memchr(dot1 + 1, '.', end - dot1 - 1)) == NULL ||
		memchr(dot2 + 1, '.', end - dot2 - 1) != NULL)
	{
		*error = "not three dot-separated parts";
		return false;
	}
	if ((out->header = decode_json_part(token, dot1 - token, NULL, error)) == NULL ||
		!check_header(out, error) ||
		(out->claims = decode_json_part(dot1 + 1, dot2 - dot1 - 1, &out->payload_text, error)) == NULL ||
		!check_claim_types(out, error))
		return false;
	if (!jwt_base64url_decode(dot2 + 1, end - dot2 - 1, &out->signature, &out->siglen))
	{
		*error = "malformed base64url in the signature";
		return false;
	}
	out->signing_input = token;
	out->signing_input_len = dot2 - token;
	return true;
}

/* Checks exp, nbf and iat against now, each with leeway seconds of skew. */
bool
jwt_check_times(const JwtTimes *token, double now, int leeway, const char **error)
{
	if (token->has_exp && now - leeway >= token->exp)
	{
		*error = "the token has expired";
		return false;
	}
	if (token->has_nbf && now + leeway < token->nbf)
	{
		*error = "the token is not valid yet";
		return false;
	}
	if (token->has_iat && now + leeway < token->iat)
	{
		*error = "the token was issued in the future";
		return false;
	}
	return true;
}

/* True if v is the string s. */
static bool
is_string(const JwtJson *v, const char *s)
{
	return v != NULL && v->kind == JWT_JSON_STRING && v->len == strlen(s) &&
		memcmp(v->str, s, v->len) == 0;
}

/* True if the aud claim names audience (always, when none is expected). */
bool
jwt_has_audience(const JwtToken *token, const char *audience)
{
	const JwtJson *aud;

	if (audience == NULL || audience[0] == '\0')
		return true;
	aud = member(token->claims, "aud", 3);
	if (aud != NULL && aud->kind == JWT_JSON_ARRAY)
	{
		for (int i = 0; i < aud->n; i++)
			if (is_string(&aud->items[i], audience))
				return true;
		return false;
	}
	return is_string(aud, audience);
}

/* True if the iss claim equals issuer (always, when none is expected). */
bool
jwt_has_issuer(const JwtToken *token, const char *issuer)
{
	if (issuer == NULL || issuer[0] == '\0')
		return true;
	return is_string(member(token->claims, "iss", 3), issuer);
}

/* True for a character of an unquoted path step. */
static bool
is_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		(ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '$' || ch == ':';
}

/*
 * Follows path from v into *found (NULL if nothing is there; v may be NULL
 * to check the syntax alone).  False, with *error, for a malformed path.
 */
static bool
walk_path(const JwtJson *v, const char *path, const JwtJson **found, const char **error)
{
	const char *p = path;

	if (*p == '.')
		p++;
	else if (*p != '[' && !is_name_char(*p))
	{
		*error = "a claim path starts with a name, '.' or '['";
		return false;
	}
	for (;;)
	{
		if (*p == '[')
		{
			long		index = 0;
			const char *digits = ++p;

			while (*p >= '0' && *p <= '9' && index < JWT_MAX_MEMBERS)
				index = index * 10 + (*p++ - '0');
			if (p == digits || *p != ']')
			{
				*error = "a claim path's [index] must hold a small number";
				return false;
			}
			p++;
			v = (v != NULL && v->kind == JWT_JSON_ARRAY && index < v->n) ? &v->items[index] : NULL;
		}
		else
		{
			char	   *name = palloc(strlen(p) + 1);
			size_t		n = 0;

			if (*p == '"')
			{
				for (p++; *p != '"'; p++)
				{
					if (*p == '\0')
					{
						*error = "a claim path has an unterminated quoted name";
						return false;
					}
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					name[n++] = *p;
				}
				p++;
			}
			else
				while (is_name_char(*p))
					name[n++] = *p++;
			if (n == 0)
			{
				*error = "a claim path has an empty step";
				return false;
			}
			v = member(v, name, n);
		}
		if (*p == '\0')
		{
			*found = v;
			return true;
		}
		if (*p == '.')
			p++;
		else if (*p != '[')
		{
			*error = "a claim path's steps are joined by '.' or '['";
			return false;
		}
	}
}

/* The value at a PostgREST-style claim path in a claims object, or NULL. */
const JwtJson *
jwt_claim_at(const JwtJson *claims, const char *path)
{
	const char *error;
	const JwtJson *found = NULL;

	return walk_path(claims, path, &found, &error) ? found : NULL;
}

/* True if path is a well-formed claim path; else *error says why. */
bool
jwt_path_valid(const char *path, const char **error)
{
	const JwtJson *found;

	if (path == NULL || path[0] == '\0')
	{
		*error = "a claim path is empty";
		return false;
	}
	return walk_path(NULL, path, &found, error);
}
