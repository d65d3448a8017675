/*
 * response.c
 *		Shapes an HTTP response from a handler's result row.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/errors.h"
#include "message/response.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"

/* True for an RFC 9110 token character. */
static bool
is_tchar(unsigned char c)
{
	/* RFC 9110 token characters */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Raises an error for a header a handler may not set, or one malformed. */
static void
check_header(const char *name, size_t namelen, const char *value, size_t valuelen)
{
	static const char *const reserved[] = {
		"content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "date", NULL
	};

	if (namelen == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("handler returned a header with an empty name")));
	for (size_t i = 0; i < namelen; i++)
		if (!is_tchar((unsigned char) name[i]))
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned an invalid header name \"%.*s\"",
							(int) Min(namelen, 100), name),
					 errhint("Header names may only hold RFC 9110 token characters.")));
	for (size_t i = 0; i < valuelen; i++)
	{
		unsigned char c = (unsigned char) value[i];

		if (c == '\r' || c == '\n' || c == '\0' || (c < 0x20 && c != '\t') || c == 0x7f)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned header \"%.*s\" with a control character in its value",
							(int) Min(namelen, 100), name),
					 errhint("CR, LF and other control characters are never sent in headers.")));
	}
	for (int i = 0; reserved[i]; i++)
		if (strlen(reserved[i]) == namelen && pg_strncasecmp(reserved[i], name, namelen) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handlers cannot set the \"%.*s\" header", (int) namelen, name),
					 errhint("webgres sets it from the response it sends.")));
}

/* A NUL-terminated copy of s[0..len) in req's pool. */
static char *
pool_copy(h2o_req_t *req, const char *s, size_t len)
{
	char	   *p = h2o_mem_alloc_pool(&req->pool, len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* Adds one header from a handler, checked, its name lower-cased. */
static void
add_header(h2o_req_t *req, const char *name, size_t namelen, const char *value, size_t valuelen)
{
	char	   *lname;

	check_header(name, namelen, value, valuelen);
	lname = pool_copy(req, name, namelen);
	for (size_t i = 0; i < namelen; i++)
		lname[i] = pg_ascii_tolower(lname[i]);
	h2o_add_header_by_str(&req->pool, &req->res.headers, lname, namelen, 1, NULL,
						  pool_copy(req, value, valuelen), valuelen);
}

/* Each key of a jsonb object becomes a header; an array value, one header per element. */
static void
add_headers_from_jsonb(h2o_req_t *req, Jsonb *jb)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;
	int			namelen = 0;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("handler's headers column must hold a JSON object")));

	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			name = v.val.string.val;
			namelen = v.val.string.len;
		}
		else if (tok == WJB_VALUE || tok == WJB_ELEM)
		{
			char	   *s;

			switch (v.type)
			{
				case jbvNull:
					continue;
				case jbvString:
					add_header(req, name, namelen, v.val.string.val, v.val.string.len);
					continue;
				case jbvNumeric:
					s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
					break;
				case jbvBool:
					s = v.val.boolean ? "true" : "false";
					break;
				default:
					ereport(ERROR,
							(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
							 errmsg("handler returned header \"%.*s\" with a value that is not a string, number, boolean or array of them",
									namelen, name)));
			}
			add_header(req, name, namelen, s, strlen(s));
		}
		else if (tok == WJB_BEGIN_OBJECT && name != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned header \"%.*s\" with an object as its value",
							namelen, name)));
	}
}

/* Adds each key of a JSON object as a response header. */
void
response_add_headers(h2o_req_t *req, Jsonb *headers)
{
	add_headers_from_jsonb(req, headers);
}

/* The status column's value, checked to be from 200 to 599. */
static inline int
status_from_column(Form_pg_attribute att, Datum value)
{
	int64		s;

	switch (att->atttypid)
	{
		case INT2OID:
			s = DatumGetInt16(value);
			break;
		case INT4OID:
			s = DatumGetInt32(value);
			break;
		case INT8OID:
			s = DatumGetInt64(value);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler's status column must be an integer")));
	}
	if (s < HTTP_STATUS_MIN || s > HTTP_STATUS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("handler returned status %lld; a status must be from 200 to 599",
						(long long) s),
				 s >= 100 && s < HTTP_STATUS_MIN ?
				 errhint("A 1xx status is an interim response, which a handler cannot send.") : 0));
	return (int) s;
}

/* Adds the headers of the headers column (jsonb or json) to req->res. */
static inline void
headers_from_column(h2o_req_t *req, Form_pg_attribute att, Datum value)
{
	if (att->atttypid == JSONBOID)
		add_headers_from_jsonb(req, DatumGetJsonbP(value));
	else if (att->atttypid == JSONOID)
		add_headers_from_jsonb(req, DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																		CStringGetDatum(TextDatumGetCString(value)))));
	else
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("handler's headers column must be jsonb or json")));
}

/*
 * Copies the body column's value (none if isnull) into req's pool as the
 * body; returns the content type its type implies.
 */
static inline const char *
body_from_column(h2o_req_t *req, Form_pg_attribute att, Datum value, bool isnull,
				 char **body, size_t *bodylen)
{
	const char *default_type;

	switch (att->atttypid)
	{
		case JSONBOID:
			default_type = "application/json";
			if (!isnull)
			{
				Jsonb	   *jb = DatumGetJsonbP(value);
				char	   *s = JsonbToCString(NULL, &jb->root, VARSIZE(jb));

				*bodylen = strlen(s);
				*body = pool_copy(req, s, *bodylen);
			}
			break;
		case JSONOID:
		case TEXTOID:
		case VARCHAROID:
		case BYTEAOID:
			default_type = (att->atttypid == JSONOID) ? "application/json" :
				(att->atttypid == BYTEAOID) ? "application/octet-stream" : TEXT_PLAIN;
			if (!isnull)
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

				*bodylen = VARSIZE_ANY_EXHDR(v);
				*body = pool_copy(req, VARDATA_ANY(v), *bodylen);
			}
			break;
		default:
			default_type = TEXT_PLAIN;
			if (!isnull)
			{
				Oid			typoutput;
				bool		typisvarlena;
				char	   *s;

				getTypeOutputInfo(att->atttypid, &typoutput, &typisvarlena);
				s = OidOutputFunctionCall(typoutput, value);
				*bodylen = strlen(s);
				*body = pool_copy(req, s, *bodylen);
			}
			break;
	}
	return default_type;
}

/* Shapes req->res and the body from a handler's row. */
void
response_from_row(h2o_req_t *req, TupleDesc desc, HeapTuple tuple, char **body, size_t *bodylen)
{
	int			status = 200;
	const char *content_type = NULL;
	bool		has_content_type_header = false;

	*body = NULL;
	*bodylen = 0;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		bool		isnull;
		Datum		value;

		if (att->attisdropped)
			continue;
		value = heap_getattr(tuple, i + 1, desc, &isnull);

		if (strcmp(name, "status") == 0)
		{
			if (!isnull)
				status = status_from_column(att, value);
		}
		else if (strcmp(name, "content_type") == 0)
		{
			char	   *ct;

			if (isnull)
				continue;
			ct = TextDatumGetCString(value);
			check_header("content-type", 12, ct, strlen(ct));
			content_type = pool_copy(req, ct, strlen(ct));
		}
		else if (strcmp(name, "headers") == 0)
		{
			if (!isnull)
				headers_from_column(req, att, value);
		}
		else if (strcmp(name, "body") == 0)
		{
			const char *default_type = body_from_column(req, att, value, isnull, body, bodylen);

			if (content_type == NULL)
				content_type = default_type;
		}
	}

	for (size_t i = 0; i < req->res.headers.size; i++)
		if (req->res.headers.entries[i].name == &H2O_TOKEN_CONTENT_TYPE->buf)
			has_content_type_header = true;

	req->res.status = status;
	req->res.reason = http_reason(status);
	if (content_type != NULL && !has_content_type_header)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
					   content_type, strlen(content_type));
	req->res.content_length = *bodylen;
}

/* Checks a handler's result columns when the route is saved. */
void
response_check_columns(TupleDesc desc)
{
	bool		any = false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *name = NameStr(att->attname);
		Oid			t = att->atttypid;

		if (strcmp(name, "status") == 0)
		{
			if (t != INT2OID && t != INT4OID && t != INT8OID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("handler's status column is of type %s, but it must be an integer",
								format_type_be(t))));
			any = true;
		}
		else if (strcmp(name, "headers") == 0)
		{
			if (t != JSONBOID && t != JSONOID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("handler's headers column is of type %s, but it must be jsonb or json",
								format_type_be(t))));
			any = true;
		}
		else if (strcmp(name, "content_type") == 0)
		{
			if (t != TEXTOID && t != VARCHAROID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("handler's content_type column is of type %s, but it must be text",
								format_type_be(t))));
			any = true;
		}
		else if (strcmp(name, "body") == 0)
			any = true;
	}
	if (!any)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("handler returns none of the columns status, content_type, headers and body"),
				 errhint("Name the result columns, as in SELECT 'Hello' AS body; add RETURNING to INSERT, UPDATE or DELETE.")));
}

struct CachedResponse
{
	int			status;
	int			nheaders;
	const h2o_token_t **tokens; /* NULL where the name is not a token */
	char	  **names;
	size_t	   *namelens;
	char	  **values;
	size_t	   *valuelens;
	char	   *body;
	size_t		bodylen;
};

/* Copies a finished response into cxt, to be replayed. */
CachedResponse *
response_capture(h2o_req_t *req, const char *body, size_t bodylen, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	CachedResponse *c = palloc0(sizeof(CachedResponse));
	int			n = (int) req->res.headers.size;

	c->status = req->res.status;
	c->nheaders = n;
	c->tokens = palloc0(sizeof(h2o_token_t *) * Max(n, 1));
	c->names = palloc0(sizeof(char *) * Max(n, 1));
	c->namelens = palloc0(sizeof(size_t) * Max(n, 1));
	c->values = palloc0(sizeof(char *) * Max(n, 1));
	c->valuelens = palloc0(sizeof(size_t) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		h2o_header_t *h = &req->res.headers.entries[i];

		if (h2o_iovec_is_token(h->name))
			c->tokens[i] = (const h2o_token_t *) h->name;
		else
		{
			c->names[i] = pnstrdup(h->name->base, h->name->len);
			c->namelens[i] = h->name->len;
		}
		c->values[i] = pnstrdup(h->value.base, h->value.len);
		c->valuelens[i] = h->value.len;
	}
	c->body = palloc(Max(bodylen, 1));
	/* An empty body may come as NULL, which memcpy must not see. */
	if (bodylen > 0)
		memcpy(c->body, body, bodylen);
	c->bodylen = bodylen;
	MemoryContextSwitchTo(oldcxt);
	return c;
}

/* Answers req with a response captured earlier. */
void
response_replay(h2o_req_t *req, const CachedResponse *c, char **body, size_t *bodylen)
{
	req->res.status = c->status;
	req->res.reason = http_reason(c->status);
	for (int i = 0; i < c->nheaders; i++)
	{
		char	   *value = pool_copy(req, c->values[i], c->valuelens[i]);

		if (c->tokens[i] != NULL)
			h2o_add_header(&req->pool, &req->res.headers, c->tokens[i], NULL, value, c->valuelens[i]);
		else
			h2o_add_header_by_str(&req->pool, &req->res.headers,
								  pool_copy(req, c->names[i], c->namelens[i]), c->namelens[i],
								  0, NULL, value, c->valuelens[i]);
	}
	/* The route's memory may be reset while h2o still writes: send a copy. */
	*body = pool_copy(req, c->body, c->bodylen);
	*bodylen = c->bodylen;
	req->res.content_length = c->bodylen;
}

/* A plain-text response with the given status. */
void
response_simple(h2o_req_t *req, int status, const char *message, char **body, size_t *bodylen)
{
	size_t		len = strlen(message);

	req->res.status = status;
	req->res.reason = http_reason(status);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
				   H2O_STRLIT(TEXT_PLAIN));
	*body = h2o_mem_alloc_pool(&req->pool, len + 1);
	memcpy(*body, message, len);
	(*body)[len] = '\n';
	*bodylen = len + 1;
	req->res.content_length = *bodylen;
}
