/*
 * querystring.c
 *		application/x-www-form-urlencoded decoding into jsonb.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/jsonb.h"

#include "parse/formscan.h"
#include "parse/percent.h"
#include "message/querystring.h"

/* Raises 22021 unless s[0..len) is valid text in the database encoding. */
void
check_text(const char *s, size_t len, const char *what)
{
	if (!pg_verify_mbstr(GetDatabaseEncoding(), s, (int) len, true))
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("%s is not valid %s text", what, GetDatabaseEncodingName())));
}

/* Percent-decodes a key or value (what names it in errors) into palloc'd text. */
static char *
decode_part(const char *s, size_t len, size_t *outlen, const char *what)
{
	char	   *buf = palloc(len + 1);
	long		n = percent_decode(s, len, buf, true);

	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_ESCAPE_SEQUENCE),
				 errmsg("%s has a malformed percent-escape", what)));
	check_text(buf, n, what);
	buf[n] = '\0';
	*outlen = (size_t) n;
	return buf;
}

/* qsort comparator: pairs by key, then by position. */
static int
keyvalue_cmp(const void *a, const void *b)
{
	const KeyValue *pa = a;
	const KeyValue *pb = b;
	int			c = memcmp(pa->key, pb->key, Min(pa->keylen, pb->keylen));

	if (c != 0)
		return c;
	if (pa->keylen != pb->keylen)
		return pa->keylen < pb->keylen ? -1 : 1;
	return pa->order - pb->order;
}

/* Builds a jsonb object from the parsed key/value pairs. */
Jsonb *
keyvalues_to_jsonb(KeyValue *kv, int n,
				   const char *(*join_with) (const char *key, size_t keylen))
{
	JsonbParseState *state = NULL;

	if (n > 1)
		qsort(kv, n, sizeof(KeyValue), keyvalue_cmp);

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < n;)
	{
		int			j = i + 1;

		while (j < n && kv[j].keylen == kv[i].keylen &&
			   memcmp(kv[j].key, kv[i].key, kv[i].keylen) == 0)
			j++;
		jsonb_push_string(&state, WJB_KEY, kv[i].key, kv[i].keylen);
		if (j == i + 1)
			jsonb_push_string(&state, WJB_VALUE, kv[i].value, kv[i].valuelen);
		else if (join_with != NULL)
		{
			const char *sep = join_with(kv[i].key, kv[i].keylen);
			StringInfoData joined;

			initStringInfo(&joined);
			for (int k = i; k < j; k++)
			{
				if (k > i)
					appendStringInfoString(&joined, sep);
				appendBinaryStringInfo(&joined, kv[k].value, kv[k].valuelen);
			}
			jsonb_push_string(&state, WJB_VALUE, joined.data, joined.len);
		}
		else
		{
			pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
			for (int k = i; k < j; k++)
				jsonb_push_string(&state, WJB_ELEM, kv[k].value, kv[k].valuelen);
			pushJsonbValue(&state, WJB_END_ARRAY, NULL);
		}
		i = j;
	}
	return JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL));
}

/* Pushes a string (a key or a value) into a jsonb being built. */
void
jsonb_push_string(JsonbParseState **state, JsonbIteratorToken tok, const char *s, size_t len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = (int) len;
	pushJsonbValue(state, tok, &v);
}

/* Decodes "a=1&b=x+y" into a jsonb object. */
Jsonb *
form_to_jsonb(const char *s, size_t len)
{
	KeyValue   *pairs;
	int			npairs = 0;
	int			cap = 8;
	size_t		pos = 0;
	FormSpan	span;

	pairs = palloc(sizeof(KeyValue) * cap);
	while (form_next(s, len, &pos, &span))
	{
		if (npairs == cap)
		{
			cap *= 2;
			pairs = repalloc(pairs, sizeof(KeyValue) * cap);
		}
		pairs[npairs].key = decode_part(span.key, span.keylen,
										&pairs[npairs].keylen, "query parameter name");
		if (span.value)
			pairs[npairs].value = decode_part(span.value, span.valuelen,
											  &pairs[npairs].valuelen, "query parameter value");
		else
		{
			pairs[npairs].value = "";
			pairs[npairs].valuelen = 0;
		}
		pairs[npairs].order = npairs;
		npairs++;
	}

	return keyvalues_to_jsonb(pairs, npairs, NULL);
}
