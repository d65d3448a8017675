/*
 * querystring.h
 *		application/x-www-form-urlencoded decoding (query strings and forms).
 */
#ifndef WEBGRES_QUERYSTRING_H
#define WEBGRES_QUERYSTRING_H

#include "utils/jsonb.h"

/*
 * Decodes "a=1&b=x+y" into {"a": "1", "b": "x y"}.  A key given more than
 * once becomes an array of its values in order; a key without '=' has the
 * value "".  Malformed percent-escapes and text that is not valid in the
 * database encoding raise errors whose SQLSTATE maps to 400.
 */
extern Jsonb *form_to_jsonb(const char *s, size_t len);

/* A name and value decoded from a request, in the order it came. */
typedef struct KeyValue
{
	char	   *key;
	size_t		keylen;
	const char *value;
	size_t		valuelen;
	int			order;
} KeyValue;

/*
 * A jsonb object of the pairs (sorted in place, by key, keeping the order of
 * equal keys).  A repeated key's values become an array, or, if join_with is
 * given, one string joined by what it returns for that key.
 */
extern Jsonb *keyvalues_to_jsonb(KeyValue *kv, int n,
								 const char *(*join_with) (const char *key, size_t keylen));

extern void jsonb_push_string(JsonbParseState **state, JsonbIteratorToken tok,
							  const char *s, size_t len);

/* Raises 22021 unless s[0..len) is valid text in the database encoding. */
extern void check_text(const char *s, size_t len, const char *what);

#endif
