/*
 * form_data.c
 *		A form body's fields and files as SQL values (form_data.h).
 *
 * The body is already whole in memory, as the request's body bytea; parts
 * are read as spans of it (parse/multipart.c) and copied once, into the
 * values handed to SQL.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "message/form_data.h"
#include "message/querystring.h"
#include "parse/multipart.h"

/* SQLSTATE WG415: the body is not a form (HTTP 415, errors.c). */
#define ERRCODE_NOT_A_FORM		MAKE_SQLSTATE('W', 'G', '4', '1', '5')

/* True if the media type of ct (before any parameter) is type, any case. */
static bool
media_type_is(const char *ct, const char *type)
{
	size_t		n = strlen(type);

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (pg_strncasecmp(ct, type, n) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

/* Raises the 400 of a malformed multipart body. */
static void
malformed(const MultipartScan *scan, const char *why)
{
	if (scan != NULL && scan->started)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed multipart/form-data body: %s (after part %d)", why, scan->nparts)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("malformed multipart/form-data body: %s", why)));
}

/* Starts scanning a multipart body, or raises 415 or 400. */
static void
begin_multipart(MultipartScan *scan, const char *body, size_t len, const char *ct)
{
	const char *boundary;
	size_t		blen;
	const char *error;

	if (!multipart_boundary(ct, strlen(ct), &boundary, &blen, &error))
		malformed(NULL, error);
	multipart_begin(scan, body, len, boundary, blen);
}

/* A parameter value as palloc'd text (NUL-terminated), checked to be text. */
static char *
value_text(const MultipartValue *v, size_t *len, const char *what)
{
	char	   *out = palloc(v->len + 1);

	*len = multipart_value_copy(v, out);
	out[*len] = '\0';
	check_text(out, *len, what);
	return out;
}

/*
 * The part's file name as text: filename* (RFC 8187) when it decodes,
 * else filename; NULL if the part has neither (it is a field).
 */
static text *
part_filename(const MultipartPart *part)
{
	if (part->filename_ext.s != NULL)
	{
		char	   *raw = palloc(part->filename_ext.len + 1);
		bool		latin1;
		long		n = multipart_ext_value_decode(&part->filename_ext, raw, &latin1);

		if (n >= 0)
		{
			char	   *conv = (char *) pg_do_encoding_conversion((unsigned char *) raw, (int) n,
																  latin1 ? PG_LATIN1 : PG_UTF8,
																  GetDatabaseEncoding());

			if (conv == raw)
				check_text(raw, n, "a file name");
			else
				n = (long) strlen(conv);
			return cstring_to_text_with_len(conv, (int) n);
		}
	}
	if (part->filename.s != NULL)
	{
		size_t		n;
		char	   *s = value_text(&part->filename, &n, "a file name");

		return cstring_to_text_with_len(s, (int) n);
	}
	return NULL;
}

/* The form's fields as a jsonb object. */
Jsonb *
form_data_fields(const char *body, size_t len, const char *ct)
{
	MultipartScan scan;
	MultipartPart part;
	KeyValue   *pairs;
	int			npairs = 0;
	int			cap = 8;
	int			rc;

	if (ct == NULL || media_type_is(ct, "application/x-www-form-urlencoded"))
		return form_to_jsonb(body, len);
	if (!media_type_is(ct, "multipart/form-data"))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_A_FORM),
				 errmsg("the body is %s, not a form", ct),
				 errhint("Send application/x-www-form-urlencoded or multipart/form-data.")));

	begin_multipart(&scan, body, len, ct);
	pairs = palloc(sizeof(KeyValue) * cap);
	while ((rc = multipart_next(&scan, &part)) == 1)
	{
		if (part.filename.s != NULL || part.filename_ext.s != NULL)
			continue;
		if (npairs == cap)
		{
			cap *= 2;
			pairs = repalloc(pairs, sizeof(KeyValue) * cap);
		}
		pairs[npairs].key = value_text(&part.name, &pairs[npairs].keylen, "a form field's name");
		check_text(part.data, part.datalen, "a form field's value");
		pairs[npairs].value = part.data;
		pairs[npairs].valuelen = part.datalen;
		pairs[npairs].order = npairs;
		npairs++;
	}
	if (rc < 0)
		malformed(&scan, scan.error);
	return keyvalues_to_jsonb(pairs, npairs, NULL);
}

/* A row for each multipart part with a filename. */
void
form_data_files(const char *body, size_t len, const char *ct,
				Tuplestorestate *tupstore, TupleDesc desc)
{
	MultipartScan scan;
	MultipartPart part;
	int			rc;

	if (ct == NULL || media_type_is(ct, "application/x-www-form-urlencoded"))
		return;
	if (!media_type_is(ct, "multipart/form-data"))
		ereport(ERROR,
				(errcode(ERRCODE_NOT_A_FORM),
				 errmsg("the body is %s, not a form", ct),
				 errhint("Send multipart/form-data.")));

	begin_multipart(&scan, body, len, ct);
	while ((rc = multipart_next(&scan, &part)) == 1)
	{
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		text	   *filename = part_filename(&part);
		size_t		n;
		bytea	   *content;

		if (filename == NULL)
			continue;
		values[0] = PointerGetDatum(cstring_to_text(value_text(&part.name, &n, "a form field's name")));
		values[1] = PointerGetDatum(filename);
		if (part.content_type != NULL)
		{
			check_text(part.content_type, part.content_type_len, "a part's content type");
			values[2] = PointerGetDatum(cstring_to_text_with_len(part.content_type,
																 (int) part.content_type_len));
		}
		else
			nulls[2] = true;
		values[3] = Int64GetDatum((int64) part.datalen);
		content = palloc(VARHDRSZ + part.datalen);
		SET_VARSIZE(content, VARHDRSZ + part.datalen);
		memcpy(VARDATA(content), part.data, part.datalen);
		values[4] = PointerGetDatum(content);
		tuplestore_putvalues(tupstore, desc, values, nulls);
		pfree(content);
	}
	if (rc < 0)
		malformed(&scan, scan.error);
}
