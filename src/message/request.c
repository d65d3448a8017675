/*
 * request.c
 *		Builds the values of the `request` relation from an h2o request.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "parse/percent.h"
#include "message/querystring.h"
#include "message/request.h"

const Oid	request_param_types[REQ_NPARAMS] = {
	TEXTOID, TEXTOID, JSONBOID, TEXTOID, JSONBOID, JSONBOID, BYTEAOID, BOOLOID, JSONBOID
};

/*
 * The one request of this process whose body is already a bytea in memory
 * (request_use_body_datum), and that bytea: an executor's, which holds one
 * request at a time.
 */
static const h2o_req_t *in_place_req = NULL;
static bytea *in_place_body = NULL;

/* RFC 9110 joins repeated fields with commas; cookies use "; " (RFC 6265). */
static const char *
header_separator(const char *name, size_t len)
{
	return (len == 6 && memcmp(name, "cookie", 6) == 0) ? "; " : ", ";
}

/* Header names lower-cased; repeated headers joined as RFC 9110 allows. */
static Datum
build_headers(h2o_req_t *req)
{
	int			n = (int) req->headers.size;
	KeyValue   *pairs = palloc(sizeof(KeyValue) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		h2o_header_t *h = &req->headers.entries[i];

		pairs[i].keylen = h->name->len;
		pairs[i].key = palloc(h->name->len);
		for (size_t k = 0; k < h->name->len; k++)
			pairs[i].key[k] = pg_ascii_tolower(h->name->base[k]);
		check_text(pairs[i].key, pairs[i].keylen, "a request header name");
		/* RFC 9112: whitespace around a field value is not part of it. */
		pairs[i].value = h->value.base;
		pairs[i].valuelen = h->value.len;
		while (pairs[i].valuelen > 0 && (pairs[i].value[0] == ' ' || pairs[i].value[0] == '\t'))
		{
			pairs[i].value++;
			pairs[i].valuelen--;
		}
		while (pairs[i].valuelen > 0 && (pairs[i].value[pairs[i].valuelen - 1] == ' ' ||
										 pairs[i].value[pairs[i].valuelen - 1] == '\t'))
			pairs[i].valuelen--;
		check_text(pairs[i].value, pairs[i].valuelen, "a request header value");
		pairs[i].order = i;
	}
	return JsonbPGetDatum(keyvalues_to_jsonb(pairs, n, header_separator));
}

/* The params parameter: the route's captures as a jsonb object. */
static Datum
build_params(RequestData *rd)
{
	JsonbParseState *state = NULL;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < rd->ncaps; i++)
	{
		PathCapture *c = &rd->caps[i];
		char	   *buf = palloc(c->valuelen + 1);
		long		len = percent_decode(c->value, c->valuelen, buf, false);

		if (len < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_ESCAPE_SEQUENCE),
					 errmsg("path segment \"%.*s\" has a malformed percent-escape",
							(int) Min(c->valuelen, 200), c->value)));
		check_text(buf, len, "a path parameter");
		jsonb_push_string(&state, WJB_KEY, c->name, c->namelen);
		jsonb_push_string(&state, WJB_VALUE, buf, len);
	}
	return JsonbPGetDatum(JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL)));
}

/* s[0..len) as a text datum, checked to be valid text. */
static Datum
text_datum(const char *s, size_t len, const char *what)
{
	check_text(s, len, what);
	return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
}

/* paramFetch hook: builds a request parameter on first use. */
static ParamExternData *
fetch_param(ParamListInfo params, int paramid, bool speculative,
			ParamExternData *workspace)
{
	RequestData *rd = (RequestData *) params->paramFetchArg;
	h2o_req_t  *req = rd->req;
	ParamExternData *prm;
	MemoryContext oldcxt;

	if (paramid < 1 || paramid > REQ_NPARAMS)
		elog(ERROR, "invalid request parameter number %d", paramid);
	prm = &params->params[paramid - 1];
	if (rd->fetched & (1u << paramid))
		return prm;

	oldcxt = MemoryContextSwitchTo(rd->cxt);
	prm->isnull = false;
	switch (paramid)
	{
		case REQ_METHOD:
			prm->value = text_datum(req->method.base, req->method.len, "the request method");
			break;
		case REQ_PATH:
			prm->value = text_datum(rd->path, rd->pathlen, "the request path");
			break;
		case REQ_PARAMS:
			prm->value = build_params(rd);
			break;
		case REQ_QUERY_STRING:
			if (req->query_at == SIZE_MAX)
				prm->isnull = true;
			else
				prm->value = text_datum(req->path.base + req->query_at + 1,
										req->path.len - req->query_at - 1,
										"the query string");
			break;
		case REQ_QUERY:
			if (req->query_at == SIZE_MAX)
				prm->value = JsonbPGetDatum(form_to_jsonb("", 0));
			else
				prm->value = JsonbPGetDatum(form_to_jsonb(req->path.base + req->query_at + 1,
														  req->path.len - req->query_at - 1));
			break;
		case REQ_HEADERS:
			prm->value = build_headers(req);
			break;
		case REQ_BODY:
			if (req->entity.base == NULL)
				prm->isnull = true;
			else if (req == in_place_req && in_place_body != NULL &&
					 VARDATA(in_place_body) == req->entity.base)
			{
				/* The frame the executor read: handlers never write a datum. */
				prm->value = PointerGetDatum(in_place_body);
			}
			else
			{
				bytea	   *b = palloc(VARHDRSZ + req->entity.len);

				SET_VARSIZE(b, VARHDRSZ + req->entity.len);
				memcpy(VARDATA(b), req->entity.base, req->entity.len);
				prm->value = PointerGetDatum(b);
			}
			break;
		case REQ_TLS:
			/* The worker sets the scheme from the connection (http_guard.c). */
			prm->value = BoolGetDatum(req->scheme == &H2O_URL_SCHEME_HTTPS);
			break;
		case REQ_CLAIMS:
			/* Verified and checked to be JSON by serve/auth.c. */
			if (rd->claims == NULL)
				prm->isnull = true;
			else
				prm->value = DirectFunctionCall1(jsonb_in, CStringGetDatum(rd->claims));
			break;
	}
	MemoryContextSwitchTo(oldcxt);

	prm->ptype = request_param_types[paramid - 1];
	prm->pflags = PARAM_FLAG_CONST;
	rd->fetched |= (1u << paramid);
	return prm;
}

/*
 * Makes req's body column the bytea body, which holds req->entity's bytes,
 * rather than a copy of them; (NULL, NULL) forgets it.
 */
void
request_use_body_datum(const h2o_req_t *req, bytea *body)
{
	Assert(body == NULL || VARSIZE(body) - VARHDRSZ == req->entity.len);
	in_place_req = req;
	in_place_body = body;
}

/* The request relation's headers column, built now if no handler read it yet. */
Jsonb *
request_headers(RequestData *rd)
{
	ParamExternData workspace;

	return DatumGetJsonbP(fetch_param(rd->params, REQ_HEADERS, false, &workspace)->value);
}

/* Sets up rd for req, its parameters built on first use. */
void
request_init(RequestData *rd, h2o_req_t *req, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

	rd->req = req;
	rd->cxt = cxt;
	rd->path = req->path.base;
	rd->pathlen = (req->query_at == SIZE_MAX) ? req->path.len : req->query_at;
	rd->caps = NULL;
	rd->ncaps = 0;
	rd->fetched = 0;
	rd->wrote = false;
	rd->run_as = InvalidOid;
	rd->authenticator = InvalidOid;
	rd->claims = NULL;
	rd->expires_at = 0;
	rd->secret_generation = 0;
	rd->keys_generation = 0;
	rd->nsettings = 0;
	rd->upgrade = NULL;
	rd->params = makeParamList(REQ_NPARAMS);
	rd->params->paramFetch = fetch_param;
	rd->params->paramFetchArg = rd;
	for (int i = 0; i < REQ_NPARAMS; i++)
	{
		rd->params->params[i].ptype = request_param_types[i];
		rd->params->params[i].isnull = true;
	}
	MemoryContextSwitchTo(oldcxt);
}

/* Makes params reflect the captures of the route about to run. */
void
request_set_captures(RequestData *rd, PathCapture *caps, int ncaps)
{
	rd->caps = caps;
	rd->ncaps = ncaps;
	rd->fetched &= ~(1u << REQ_PARAMS);
}

/* Sets the role the next handler runs as and its claims (NULL: none). */
void
request_set_identity(RequestData *rd, Oid run_as, const char *claims)
{
	rd->run_as = run_as;
	rd->authenticator = InvalidOid;
	rd->expires_at = 0;
	rd->secret_generation = 0;
	rd->keys_generation = 0;
	if (rd->claims != claims)
		rd->fetched &= ~(1u << REQ_CLAIMS);
	rd->claims = claims;
}

/*
 * Adds a setting (such as request.jwt.claims) the request's handlers run
 * with; name and value are kept, not copied (request.h).
 */
void
request_add_setting(RequestData *rd, const char *name, const char *value)
{
	if (rd->nsettings >= REQ_MAX_SETTINGS)
		elog(ERROR, "too many request settings");
	rd->setting_names[rd->nsettings] = name;
	rd->setting_values[rd->nsettings] = value;
	rd->nsettings++;
}

/*
 * Puts the request's settings in effect until request_clear_settings().
 *
 * They are set as an override, not stacked at the handlers' nest level:
 * Postgres 15 ends a nest level in which anything was stacked by walking
 * every setting there is (AtEOXact_GUC), a third of a microsecond a
 * request.  What a handler sets on top (SET LOCAL, set_config()) is still
 * stacked and undone at the level's end.
 */
void
request_apply_settings(const RequestData *rd)
{
	for (int i = 0; i < rd->nsettings; i++)
		(void) set_config_option(rd->setting_names[i], rd->setting_values[i],
								 PGC_USERSET, PGC_S_OVERRIDE, GUC_ACTION_SET, true, 0, false);
}

/*
 * Takes the request's settings away again (empty, as an unset placeholder
 * reads), so that no later request sees them; in or out of a transaction,
 * after its handlers ran or failed.
 */
void
request_clear_settings(const RequestData *rd)
{
	for (int i = 0; i < rd->nsettings; i++)
		(void) set_config_option(rd->setting_names[i], "",
								 PGC_USERSET, PGC_S_OVERRIDE, GUC_ACTION_SET, true, 0, false);
}
