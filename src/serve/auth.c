/*
 * auth.c
 *		A request's JSON Web Token: found, verified, cached, and turned into
 *		the handler's role and the request.* settings.  Contract in auth.h.
 *
 * Written here because libh2o has no token authentication; the model is
 * PostgREST's (the route owner is the "authenticator", the token's role
 * claim the role switched to, request.jwt.claims the claims), so that row
 * level security policies written for PostgREST work unchanged.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_authid.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "common/settings.h"
#include "message/querystring.h"
#include "message/response.h"
#include "parse/jwt.h"
#include "serve/auth.h"
#include "serve/cors.h"
#include "serve/jwt_keys.h"

/*
 * Verified tokens kept per process, at most this many and this much memory
 * (a token may be 8 kB, its claims nearly as much).  When it is full it is
 * emptied: a token then costs one more verification, and memory stays
 * bounded.
 */
#define TOKEN_CACHE_MAX_ENTRIES 1024
#define TOKEN_CACHE_MAX_BYTES	(4 * 1024 * 1024)
/* Blocks small beside the bound, so that what is counted is what is used. */
#define TOKEN_CACHE_MAX_BLOCK	(64 * 1024)

/*
 * The cache's key: the whole token, compared byte for byte, so that a
 * token differing anywhere (its signature too) never finds another's
 * entry.  Hashed with hash_bytes(): a cryptographic digest would add
 * nothing to an exact comparison but its cost.
 */
typedef struct TokenKey
{
	const char *token;			/* in token_cxt once entered */
	size_t		len;
} TokenKey;

/* A verified token, and the last route owner its role was checked for. */
typedef struct CachedToken
{
	TokenKey	key;
	char	   *claims;
	char	   *role;			/* NULL: the token claims no role */
	JwtTimes	times;
	Oid			checked_owner;	/* InvalidOid: not checked yet */
	Oid			roleid;			/* role's OID then; InvalidOid: refused */
	uint64		checked_generation; /* role_generation then */
} CachedToken;

static HTAB *token_cache = NULL;
static MemoryContext token_cxt = NULL;

/*
 * Bumped whenever a role or a role membership changes (syscache
 * invalidation), which makes every cached role check stale.
 */
static uint64 role_generation = 1;

/* Bumped whenever the cache is emptied: an AuthState's entry is then gone. */
static uint64 cache_epoch = 1;

/* Requests with these methods change nothing, so need no CSRF check. */
static bool
is_safe_method(h2o_req_t *req)
{
	return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
		h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")) ||
		h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS"));
}

/* Starts a request: no token looked at yet. */
void
auth_begin(AuthState *st)
{
	memset(st, 0, sizeof(*st));
}

/* Forgets keys and verified tokens after a reload. */
void
auth_reload(void)
{
	jwt_keys_reload();
	if (token_cache != NULL)
	{
		hash_destroy(token_cache);
		token_cache = NULL;
	}
	if (token_cxt != NULL)
		MemoryContextReset(token_cxt);
}

/* The token cache's hash function: of the token's bytes. */
static uint32
token_key_hash(const void *key, Size keysize)
{
	const TokenKey *k = key;

	return hash_bytes((const unsigned char *) k->token, (int) k->len);
}

/* The token cache's comparison: 0 if the two tokens are the same bytes. */
static int
token_key_match(const void *key1, const void *key2, Size keysize)
{
	const TokenKey *a = key1;
	const TokenKey *b = key2;

	return a->len == b->len && memcmp(a->token, b->token, a->len) == 0 ? 0 : 1;
}

/* Syscache callback: a role or a membership changed; role checks are stale. */
static void
roles_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	role_generation++;
}

/* Creates the (empty) token cache. */
static void
create_cache(void)
{
	HASHCTL		ctl;

	if (token_cxt == NULL)
	{
		/* Once per process. */
		token_cxt = AllocSetContextCreate(TopMemoryContext, "webgres verified tokens",
										  ALLOCSET_DEFAULT_MINSIZE, ALLOCSET_DEFAULT_INITSIZE,
										  TOKEN_CACHE_MAX_BLOCK);
		/* As Postgres' own membership cache (acl.c) is invalidated. */
		CacheRegisterSyscacheCallback(AUTHOID, roles_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, roles_changed, (Datum) 0);
	}
	cache_epoch++;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(TokenKey);
	ctl.entrysize = sizeof(CachedToken);
	ctl.hash = token_key_hash;
	ctl.match = token_key_match;
	ctl.hcxt = token_cxt;
	token_cache = hash_create("webgres verified tokens", TOKEN_CACHE_MAX_ENTRIES,
							  &ctl, HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

/* A place in a request's Cookie headers, for next_cookie(). */
typedef struct CookieCursor
{
	h2o_req_t  *req;
	ssize_t		header;			/* the Cookie header being read; -1: none yet */
	const char *p;				/* what is left of it */
	const char *end;
} CookieCursor;

/* Starts reading req's cookies. */
static void
cookies_begin(CookieCursor *c, h2o_req_t *req)
{
	c->req = req;
	c->header = -1;
	c->p = c->end = NULL;
}

/*
 * The next name=value pair of the request's Cookie headers (RFC 6265 5.4:
 * pairs split by ";", blanks around them dropped); false after the last.
 * Pairs without a name or "=" are passed over.
 */
static bool
next_cookie(CookieCursor *c, const char **name, size_t *namelen,
			const char **value, size_t *valuelen)
{
	for (;;)
	{
		const char *semi;
		const char *stop;
		const char *eq;

		if (c->p >= c->end)
		{
			c->header = h2o_find_header(&c->req->headers, H2O_TOKEN_COOKIE, c->header);
			if (c->header == -1)
				return false;
			c->p = c->req->headers.entries[c->header].value.base;
			c->end = c->p + c->req->headers.entries[c->header].value.len;
			continue;
		}
		semi = memchr(c->p, ';', c->end - c->p);
		stop = semi ? semi : c->end;
		while (c->p < stop && (*c->p == ' ' || *c->p == '\t'))
			c->p++;
		eq = memchr(c->p, '=', stop - c->p);
		if (eq != NULL && eq > c->p)
		{
			*name = c->p;
			*namelen = eq - c->p;
			*value = eq + 1;
			*valuelen = stop - *value;
			while (*valuelen > 0 && ((*value)[*valuelen - 1] == ' ' ||
									 (*value)[*valuelen - 1] == '\t'))
				(*valuelen)--;
			c->p = stop + 1;
			return true;
		}
		c->p = stop + 1;
	}
}

/* Finds the value of cookie name in the request's Cookie headers. */
static bool
find_cookie(h2o_req_t *req, const char *name, const char **value, size_t *len)
{
	size_t		namelen = strlen(name);
	CookieCursor c;
	const char *n;
	size_t		nlen;

	cookies_begin(&c, req);
	while (next_cookie(&c, &n, &nlen, value, len))
	{
		if (nlen != namelen || memcmp(n, name, namelen) != 0)
			continue;
		/* RFC 6265 allows the value in double quotes. */
		if (*len >= 2 && (*value)[0] == '"' && (*value)[*len - 1] == '"')
			(*value)++, *len -= 2;
		return true;
	}
	return false;
}

/*
 * The request's token: from "Authorization: Bearer", else from the
 * webgres.jwt_cookie cookie.  False if it sent none.
 */
static bool
find_token(h2o_req_t *req, const char **token, size_t *len, bool *from_cookie)
{
	ssize_t		i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);

	*from_cookie = false;
	if (i != -1)
	{
		const char *v = req->headers.entries[i].value.base;
		size_t		n = req->headers.entries[i].value.len;

		if (n > 7 && h2o_lcstris(v, 6, H2O_STRLIT("bearer")) && (v[6] == ' ' || v[6] == '\t'))
		{
			v += 7, n -= 7;
			while (n > 0 && (*v == ' ' || *v == '\t'))
				v++, n--;
			while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			*token = v;
			*len = n;
			return true;
		}
	}
	if (webgres_jwt_cookie != NULL && webgres_jwt_cookie[0] != '\0' &&
		find_cookie(req, webgres_jwt_cookie, token, len))
	{
		*from_cookie = true;
		return true;
	}
	return false;
}

/* Logs why a token was refused; the client learns only "invalid_token". */
static void
log_refusal(const Route *r, const char *reason)
{
	ereport(LOG,
			(errmsg("webgres route %s: a JSON Web Token was refused: %s", r->label, reason),
			 errhidestmt(true)));
}

/*
 * Verifies a token not found in the cache and adds it there.  Returns the
 * entry, or NULL with *reason.
 */
static CachedToken *
verify_and_cache(const TokenKey *key, const char **reason)
{
	JwtToken	t;
	const JwtJson *role;
	CachedToken *entry;
	bool		found;

	if (!jwt_parse(key->token, key->len, &t, reason) || !jwt_keys_verify(&t, reason))
		return NULL;
	if (!jwt_has_audience(&t, webgres_jwt_audience))
	{
		*reason = "the token's aud does not name webgres.jwt_audience";
		return NULL;
	}
	if (!jwt_has_issuer(&t, webgres_jwt_issuer))
	{
		*reason = "the token's iss is not webgres.jwt_issuer";
		return NULL;
	}
	role = jwt_claim_at(t.claims, webgres_jwt_role_claim ? webgres_jwt_role_claim : "role");
	if (role != NULL && (role->kind != JWT_JSON_STRING || role->len == 0 ||
						 role->len >= NAMEDATALEN))
	{
		*reason = "the role claim is not a role name";
		return NULL;
	}
	if (hash_get_num_entries(token_cache) >= TOKEN_CACHE_MAX_ENTRIES ||
		MemoryContextMemAllocated(token_cxt, true) >= TOKEN_CACHE_MAX_BYTES)
	{
		ereport(DEBUG1,
				(errmsg_internal("webgres: the cache of verified tokens is full (%ld tokens, %zu bytes); emptied",
								 hash_get_num_entries(token_cache),
								 MemoryContextMemAllocated(token_cxt, true))));
		hash_destroy(token_cache);
		MemoryContextReset(token_cxt);
		create_cache();
	}
	entry = hash_search(token_cache, key, HASH_ENTER, &found);
	/* The key was copied as it is: it must point at the cache's own copy. */
	entry->key.token = MemoryContextAlloc(token_cxt, key->len);
	memcpy((char *) entry->key.token, key->token, key->len);
	entry->claims = MemoryContextStrdup(token_cxt, t.payload_text);
	entry->role = role ? MemoryContextStrdup(token_cxt, role->str) : NULL;
	entry->times = t.times;
	entry->checked_owner = InvalidOid;
	return entry;
}

/*
 * Looks for the request's token and checks it, once per request: fills st
 * with its claims and role, or with the status that refuses it.
 */
static void
authenticate(h2o_req_t *req, const Route *r, AuthState *st, MemoryContext cxt)
{
	TokenKey	key;
	CachedToken *entry;
	const char *reason = NULL;
	bool		found;

	st->looked = true;
	if (!find_token(req, &key.token, &key.len, &st->from_cookie))
		return;
	st->invalid_token = true;
	st->status = 401;
	if (key.len > JWT_MAX_TOKEN_LEN)
	{
		log_refusal(r, "token too long");
		return;
	}
	if (token_cache == NULL)
		create_cache();
	entry = hash_search(token_cache, &key, HASH_FIND, &found);
	if (entry == NULL && (entry = verify_and_cache(&key, &reason)) == NULL)
	{
		log_refusal(r, reason);
		return;
	}
	/* Times are checked on every use: a cached token expires all the same. */
	if (!jwt_check_times(&entry->times, (double) time(NULL), webgres_jwt_leeway, &reason))
	{
		log_refusal(r, reason);
		return;
	}
	st->invalid_token = false;
	st->status = 0;
	/* The request's memory: an event stream reads them after this transaction. */
	st->claims = MemoryContextStrdup(cxt, entry->claims);
	st->role = entry->role ? MemoryContextStrdup(cxt, entry->role) : NULL;
	st->has_exp = entry->times.has_exp;
	st->exp = entry->times.exp;
	st->token = entry;
	st->token_epoch = cache_epoch;
}

/* The scheme and authority of an origin, as in "https://example.com:8443". */
static bool
origin_equals(const char *a, size_t alen, const char *b, size_t blen)
{
	while (alen > 0 && a[alen - 1] == '/')
		alen--;
	while (blen > 0 && b[blen - 1] == '/')
		blen--;
	return alen == blen && pg_strncasecmp(a, b, alen) == 0;
}

/*
 * True if origin (scheme://host[:port]) is the server's own, one of
 * webgres.csrf_trusted_origins, or one route r's CORS settings allow by
 * name (serve/cors.h; "*" does not count).
 */
static bool
origin_allowed(h2o_req_t *req, const Route *r, const char *origin, size_t len)
{
	const char *list = webgres_csrf_trusted_origins;
	char	   *own = psprintf("%s://%.*s", req->scheme ? req->scheme->name.base : "http",
							   (int) req->authority.len, req->authority.base);

	if (origin_equals(origin, len, own, strlen(own)) || cors_origin_allowed(r, origin, len))
		return true;
	while (list != NULL && *list != '\0')
	{
		const char *comma = strchr(list, ',');
		const char *end = comma ? comma : list + strlen(list);

		while (list < end && (*list == ' ' || *list == '\t'))
			list++;
		while (end > list && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end > list && origin_equals(origin, len, list, end - list))
			return true;
		list = comma ? comma + 1 : "";
	}
	return false;
}

/*
 * The CSRF rule: a request authenticated by a cookie that may change
 * something must say where it comes from (Origin, else Referer), and that
 * must be this server, a trusted origin or one the route's CORS allows.  A browser sends the cookie with
 * any site's form post unless SameSite stops it; this stops the rest.
 */
static bool
csrf_allowed(h2o_req_t *req, const Route *r)
{
	ssize_t		i;
	const char *v;
	size_t		n;

	if (is_safe_method(req))
		return true;
	if ((i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1)) != -1)
	{
		v = req->headers.entries[i].value.base;
		n = req->headers.entries[i].value.len;
		return !h2o_memis(v, n, H2O_STRLIT("null")) && origin_allowed(req, r, v, n);
	}
	if ((i = h2o_find_header(&req->headers, H2O_TOKEN_REFERER, -1)) != -1)
	{
		const char *scheme_end;
		const char *path;

		v = req->headers.entries[i].value.base;
		n = req->headers.entries[i].value.len;
		/* The referrer's origin: everything before the path after "://". */
		if ((scheme_end = memmem(v, n, "://", 3)) == NULL)
			return false;
		path = memchr(scheme_end + 3, '/', v + n - scheme_end - 3);
		return origin_allowed(req, r, v, path ? (size_t) (path - v) : n);
	}
	return false;
}

/*
 * request.cookies: the Cookie headers' pairs as a JSON object, the last of
 * a repeated name winning (as jsonb keeps it).  The caller has checked the
 * headers to be valid text, and a cookie is a piece of one.
 */
static char *
cookies_json(h2o_req_t *req)
{
	JsonbParseState *state = NULL;
	CookieCursor c;
	const char *name;
	const char *value;
	size_t		namelen;
	size_t		valuelen;
	Jsonb	   *cookies;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	cookies_begin(&c, req);
	while (next_cookie(&c, &name, &namelen, &value, &valuelen))
	{
		jsonb_push_string(&state, WJB_KEY, name, namelen);
		jsonb_push_string(&state, WJB_VALUE, value, valuelen);
	}
	cookies = JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL));
	return JsonbToCString(NULL, &cookies->root, VARSIZE(cookies));
}

/*
 * PostgREST's per-request settings: request.jwt.claims (the claims, or
 * {"role": anon} without a token, so that ::jsonb casts never fail), and
 * with webgres.postgrest_request_settings request.method, request.path,
 * request.headers (the request relation's headers, as text) and
 * request.cookies.  Built in the request's memory and set once: they last
 * until the request ends (request_clear_settings()).
 */
static void
set_request_settings(h2o_req_t *req, RequestData *rd, AuthState *st, const char *role)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rd->cxt);

	if (st->claims != NULL)
		request_add_setting(rd, "request.jwt.claims", st->claims);
	else
	{
		StringInfoData anon;

		initStringInfo(&anon);
		appendStringInfoString(&anon, "{\"role\":");
		escape_json(&anon, role);
		appendStringInfoChar(&anon, '}');
		request_add_setting(rd, "request.jwt.claims", anon.data);
	}
	if (webgres_postgrest_request_settings)
	{
		/* Raises 22021 (400) for a header that is not valid text. */
		Jsonb	   *headers = request_headers(rd);

		request_add_setting(rd, "request.method", pnstrdup(req->method.base, req->method.len));
		request_add_setting(rd, "request.path", pnstrdup(rd->path, rd->pathlen));
		request_add_setting(rd, "request.headers",
							JsonbToCString(NULL, &headers->root, VARSIZE(headers)));
		request_add_setting(rd, "request.cookies", cookies_json(req));
	}
	MemoryContextSwitchTo(oldcxt);
	request_apply_settings(rd);
	st->settings_done = true;
}

/* Answers 401 (with WWW-Authenticate, RFC 6750) or 403. */
static bool
refuse(h2o_req_t *req, int status, bool invalid_token, char **body, size_t *bodylen)
{
	response_simple(req, status, status == 401 ? "Unauthorized" : "Forbidden", body, bodylen);
	if (status == 401)
	{
		const char *value = invalid_token ? "Bearer error=\"invalid_token\"" : "Bearer";

		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
					   value, strlen(value));
	}
	return false;
}

/*
 * The role to run as: the token's role claim, or webgres.anon_role without
 * a token or without the claim.  NULL: there is none to run as (401).
 */
static const char *
role_name(const AuthState *st)
{
	if (st->role != NULL)
		return st->role;
	if (webgres_anon_role != NULL && webgres_anon_role[0] != '\0')
		return webgres_anon_role;
	return NULL;
}

/*
 * The OID of the role owner may run a handler as, or InvalidOid if it may
 * not: the owner is the authenticator, it may become only roles it is a
 * member of, and never a superuser it is not.  A token's verdict is kept
 * in its cache entry until roles or memberships change.
 */
static Oid
role_for_owner(const AuthState *st, Oid owner, const char *role)
{
	CachedToken *entry = NULL;
	Oid			roleid;

	/* Only the token's own role claim: webgres.anon_role may change. */
	if (st->token != NULL && st->token_epoch == cache_epoch && st->role != NULL)
		entry = st->token;
	if (entry != NULL && entry->checked_owner == owner &&
		entry->checked_generation == role_generation)
		return entry->roleid;
	roleid = get_role_oid(role, true);
	if (OidIsValid(roleid) &&
		(!is_member_of_role(owner, roleid) || (roleid != owner && superuser_arg(roleid))))
		roleid = InvalidOid;
	if (entry != NULL)
	{
		entry->checked_owner = owner;
		entry->roleid = roleid;
		entry->checked_generation = role_generation;
	}
	return roleid;
}

/* Authenticates a request for a route with auth; false after answering 401 or 403. */
bool
auth_route(h2o_req_t *req, const Route *r, AuthState *st, RequestData *rd,
		   char **body, size_t *bodylen)
{
	const char *role;
	Oid			roleid;

	if (!st->looked)
		authenticate(req, r, st, rd->cxt);
	if (st->status != 0)
		return refuse(req, st->status, st->invalid_token, body, bodylen);
	if (st->claims == NULL && r->auth == ROUTE_AUTH_REQUIRED)
		return refuse(req, 401, false, body, bodylen);
	if ((role = role_name(st)) == NULL)
		return refuse(req, 401, false, body, bodylen);
	if (st->from_cookie && !csrf_allowed(req, r))
	{
		log_refusal(r, "a cookie-authenticated request came from another origin");
		return refuse(req, 403, false, body, bodylen);
	}
	if (!OidIsValid(roleid = role_for_owner(st, r->owner, role)))
	{
		ereport(LOG,
				(errmsg("webgres route %s: role \"%s\" may not be used by the route's owner",
						r->label, role),
				 errhint("The route's owner must be a member of the role: GRANT \"%s\" TO the owner.",
						 role),
				 errhidestmt(true)));
		return refuse(req, 403, false, body, bodylen);
	}
	st->run_as = role;
	request_set_identity(rd, roleid, st->claims);
	rd->expires_at = st->has_exp ? (int64) ceil(st->exp) : 0;
	if (!st->settings_done)
		set_request_settings(req, rd, st, role);
	return true;
}
