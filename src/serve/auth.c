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

#include "access/transam.h"
#include "catalog/catalog.h"
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

#include "message/querystring.h"
#include "message/response.h"
#include "parse/auth_headers.h"
#include "parse/jwt.h"
#include "serve/auth.h"
#include "serve/cors.h"
#include "serve/jwt_keys.h"
#include "serve/jwt_secret.h"
#include "serve/phase.h"
#include "serve/refusal_log.h"

/* webgres.jwt_leeway: its default and most, in seconds. */
#define AUTH_JWT_LEEWAY_DEFAULT 30
#define AUTH_JWT_LEEWAY_MAX 3600

/* The settings of authentication (auth_define_settings). */
static char *webgres_jwt_audience;
static char *webgres_jwt_issuer;
static int	webgres_jwt_leeway = AUTH_JWT_LEEWAY_DEFAULT;
static char *webgres_jwt_role_claim;
static char *webgres_anon_role;
static char *webgres_jwt_cookie;
static bool webgres_postgrest_request_settings = false;
static char *webgres_csrf_trusted_origins;

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

/* Whether a route's owner may run a handler as a role, and if not why. */
typedef enum RoleVerdict
{
	ROLE_ALLOWED,
	ROLE_UNKNOWN,				/* no such role */
	ROLE_NOT_MEMBER,			/* the owner is not a member of it */
	ROLE_SUPERUSER,				/* never: role_kind() */
	ROLE_BYPASSRLS,
	ROLE_PREDEFINED
} RoleVerdict;

/* A verified token, and the last route owner its role was checked for. */
typedef struct CachedToken
{
	TokenKey	key;
	char	   *claims;
	char	   *role;			/* NULL: the token claims no role */
	JwtTimes	times;
	Oid			checked_owner;	/* InvalidOid: not checked yet */
	Oid			roleid;			/* role's OID then, if it exists */
	RoleVerdict verdict;		/* the check's verdict then */
	uint64		checked_generation; /* role_generation then */
	bool		hs_signed;		/* signed with the HS secret, not a key */
	bool		role_refusal_logged;	/* a refusal of its role was logged */
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

/* jwt_secret_generation() when the cache was last emptied. */
static uint64 cache_secret_generation = 0;

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

/*
 * Empties the token cache (creating it the first time): the HS secret may
 * have changed, and a token it verified before is then no longer known
 * good.  Taking the secret file away or changing its content is how
 * docs/authentication.md says to revoke every HS-signed token.
 */
static void
forget_tokens(void)
{
	cache_secret_generation = jwt_secret_generation();
	if (token_cache != NULL)
	{
		hash_destroy(token_cache);
		token_cache = NULL;
		MemoryContextReset(token_cxt);
	}
	create_cache();
}

/* A place in a request's Cookie headers, for next_cookie(). */
typedef struct CookieCursor
{
	h2o_req_t  *req;
	ssize_t		header;			/* the Cookie header being read; -1: none yet */
	CookieScan	scan;			/* what is left of it (parse/auth_headers.h) */
} CookieCursor;

/* Starts reading req's cookies. */
static void
cookies_begin(CookieCursor *c, h2o_req_t *req)
{
	c->req = req;
	c->header = -1;
	c->scan.p = c->scan.end = NULL;
}

/*
 * The next name=value pair of the request's Cookie headers, in the order
 * sent; false after the last.
 */
static bool
next_cookie(CookieCursor *c, const char **name, size_t *namelen,
			const char **value, size_t *valuelen)
{
	while (!cookie_scan_next(&c->scan, name, namelen, value, valuelen))
	{
		c->header = h2o_find_header(&c->req->headers, H2O_TOKEN_COOKIE, c->header);
		if (c->header == -1)
			return false;
		cookie_scan_begin(&c->scan, c->req->headers.entries[c->header].value.base,
						  c->req->headers.entries[c->header].value.len);
	}
	return true;
}

/*
 * How many cookies named name the request has, counting to two (enough to
 * refuse them); *value is the first one's, without quotes.
 */
static int
count_cookies(h2o_req_t *req, const char *name, const char **value, size_t *len)
{
	size_t		namelen = strlen(name);
	CookieCursor c;
	const char *n;
	size_t		nlen;
	const char *v;
	size_t		vlen;
	int			found = 0;

	cookies_begin(&c, req);
	while (found < 2 && next_cookie(&c, &n, &nlen, &v, &vlen))
	{
		if (nlen != namelen || memcmp(n, name, namelen) != 0)
			continue;
		if (found++ == 0)
		{
			cookie_value_unquote(&v, &vlen);
			*value = v;
			*len = vlen;
		}
	}
	return found;
}

/* What find_token() found. */
typedef enum TokenSource
{
	TOKEN_NONE,					/* no token */
	TOKEN_HEADER,				/* Authorization: Bearer */
	TOKEN_COOKIE,				/* the webgres.jwt_cookie cookie */
	TOKEN_COOKIE_TWICE			/* two or more such cookies: none is trusted */
} TokenSource;

/*
 * The request's token: from "Authorization: Bearer", else from the
 * webgres.jwt_cookie cookie.  Two cookies of that name are no token: a
 * sibling subdomain can set one beside the site's own, and which one a
 * browser sends first is not the site's to choose.
 */
static TokenSource
find_token(h2o_req_t *req, const char **token, size_t *len)
{
	ssize_t		i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);

	if (i != -1 && bearer_token(req->headers.entries[i].value.base,
								req->headers.entries[i].value.len, token, len))
		return TOKEN_HEADER;
	if (webgres_jwt_cookie == NULL || webgres_jwt_cookie[0] == '\0')
		return TOKEN_NONE;
	switch (count_cookies(req, webgres_jwt_cookie, token, len))
	{
		case 0:
			return TOKEN_NONE;
		case 1:
			return TOKEN_COOKIE;
		default:
			return TOKEN_COOKIE_TWICE;
	}
}

/*
 * Logs why a token was refused, within the log's rate limit
 * (serve/refusal_log.h); the client learns only "invalid_token".
 */
static void
log_refusal(const Route *r, const char *reason)
{
	if (refusal_log_allowed(reason))
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
	TokenKey	copy;
	char	   *claims;
	char	   *rolename;
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
	/*
	 * Everything the entry points at is copied into the cache's memory
	 * first: an out-of-memory error here then leaves no entry behind, and
	 * none whose key points into the request's memory, which is freed
	 * with the request.
	 */
	copy.token = memcpy(MemoryContextAlloc(token_cxt, key->len), key->token, key->len);
	copy.len = key->len;
	claims = MemoryContextStrdup(token_cxt, t.payload_text);
	rolename = role ? MemoryContextStrdup(token_cxt, role->str) : NULL;
	entry = hash_search(token_cache, &copy, HASH_ENTER, &found);
	entry->claims = claims;
	entry->role = rolename;
	entry->times = t.times;
	entry->hs_signed = strncmp(t.alg, "HS", 2) == 0;
	entry->checked_owner = InvalidOid;
	entry->role_refusal_logged = false;
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
	TokenSource source = find_token(req, &key.token, &key.len);

	st->looked = true;
	if (source == TOKEN_NONE)
		return;
	st->from_cookie = (source != TOKEN_HEADER);
	st->invalid_token = true;
	st->status = 401;
	if (source == TOKEN_COOKIE_TWICE)
	{
		/* Perhaps not the client's doing: the body says what to clear. */
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		st->message = psprintf("Unauthorized: the request has more than one \"%s\" cookie",
							   webgres_jwt_cookie);
		MemoryContextSwitchTo(oldcxt);
		log_refusal(r, st->message + strlen("Unauthorized: "));
		return;
	}
	if (key.len > JWT_MAX_TOKEN_LEN)
	{
		log_refusal(r, "token too long");
		return;
	}
	if (token_cache == NULL || jwt_secret_generation() != cache_secret_generation)
		forget_tokens();
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
	/* The cache holds only tokens verified under the secret it was emptied for. */
	st->secret_generation = entry->hs_signed ? cache_secret_generation : 0;
	/* A reload empties the cache: a cached token's keys are the ones loaded. */
	st->keys_generation = entry->hs_signed ? 0 : jwt_keys_generation();
	st->token = entry;
	st->token_epoch = cache_epoch;
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
	const char *item;
	size_t		itemlen;
	char	   *own = psprintf("%s://%.*s", req->scheme ? req->scheme->name.base : "http",
							   (int) req->authority.len, req->authority.base);

	if (origin_equals(origin, len, own, strlen(own)) || cors_origin_allowed(r, origin, len))
		return true;
	while (list_next_item(&list, &item, &itemlen))
		if (origin_equals(origin, len, item, itemlen))
			return true;
	return false;
}

/* origin_allowed() for other steps: a WebSocket's upgrade (ws_admit.c). */
bool
auth_origin_allowed(h2o_req_t *req, const Route *r, const char *origin, size_t len)
{
	return !h2o_memis(origin, len, H2O_STRLIT("null")) && origin_allowed(req, r, origin, len);
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
	size_t		originlen;

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
		v = req->headers.entries[i].value.base;
		n = req->headers.entries[i].value.len;
		return referer_origin(v, n, &originlen) && origin_allowed(req, r, v, originlen);
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

/*
 * Answers 401 (with WWW-Authenticate, RFC 6750) or 403; message, if not
 * NULL, instead of the bare reason phrase.
 */
static bool
refuse(h2o_req_t *req, int status, bool invalid_token, const char *message,
	   char **body, size_t *bodylen)
{
	if (message == NULL)
		message = status == 401 ? "Unauthorized" : "Forbidden";
	response_simple(req, status, message, body, bodylen);
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
 * Whether roleid is a role no request may run as, whoever owns the route:
 * a superuser, a role with BYPASSRLS (row level security is how a token's
 * rows are kept apart), or one of Postgres' predefined roles (created
 * with the cluster, or reserved by their pg_ name: pg_read_server_files,
 * pg_execute_server_program and the like reach outside the database).
 * Must run in a transaction.
 */
static RoleVerdict
role_kind(Oid roleid)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(roleid));
	Form_pg_authid role;
	RoleVerdict verdict = ROLE_ALLOWED;

	if (!HeapTupleIsValid(tup))
		return ROLE_UNKNOWN;
	role = (Form_pg_authid) GETSTRUCT(tup);
	if (role->rolsuper)
		verdict = ROLE_SUPERUSER;
	else if (role->rolbypassrls)
		verdict = ROLE_BYPASSRLS;
	else if (roleid < FirstNormalObjectId || IsReservedName(NameStr(role->rolname)))
		verdict = ROLE_PREDEFINED;
	ReleaseSysCache(tup);
	return verdict;
}

/*
 * Whether route owner owner may run a handler as roleid: the owner is the
 * authenticator, it may become only roles it is a member of, and never one
 * role_kind() forbids.  Must run in a transaction.
 */
static RoleVerdict
owner_may_become(Oid owner, Oid roleid)
{
	RoleVerdict verdict = role_kind(roleid);

	if (verdict == ROLE_ALLOWED && !is_member_of_role(owner, roleid))
		verdict = ROLE_NOT_MEMBER;
	return verdict;
}

/*
 * Whether owner may run a handler as role (a name) and as which OID: a
 * token's verdict is kept in its cache entry until roles or memberships
 * change.
 */
static RoleVerdict
role_for_owner(const AuthState *st, Oid owner, const char *role, Oid *roleid)
{
	CachedToken *entry = NULL;
	RoleVerdict verdict;

	/* Only the token's own role claim: webgres.anon_role may change. */
	if (st->token != NULL && st->token_epoch == cache_epoch && st->role != NULL)
		entry = st->token;
	if (entry != NULL && entry->checked_owner == owner &&
		entry->checked_generation == role_generation)
	{
		*roleid = entry->roleid;
		return entry->verdict;
	}
	*roleid = get_role_oid(role, true);
	verdict = OidIsValid(*roleid) ? owner_may_become(owner, *roleid) : ROLE_UNKNOWN;
	if (entry != NULL)
	{
		entry->checked_owner = owner;
		entry->roleid = *roleid;
		entry->verdict = verdict;
		entry->checked_generation = role_generation;
	}
	return verdict;
}

/*
 * Logs why role may not be used: once per cached token (its entry notes
 * it), and within the log's rate limit.
 */
static void
log_role_refusal(const Route *r, const AuthState *st, const char *role, RoleVerdict verdict)
{
	CachedToken *entry = NULL;
	const char *why;

	if (st->token != NULL && st->token_epoch == cache_epoch && st->role != NULL)
		entry = st->token;
	if (entry != NULL && entry->role_refusal_logged)
		return;
	switch (verdict)
	{
		case ROLE_UNKNOWN:
			why = "it does not exist";
			break;
		case ROLE_SUPERUSER:
			why = "it is a superuser";
			break;
		case ROLE_BYPASSRLS:
			why = "it has BYPASSRLS";
			break;
		case ROLE_PREDEFINED:
			why = "it is one of Postgres' predefined roles";
			break;
		default:
			why = "the route's owner is not a member of it";
			break;
	}
	if (entry != NULL)
		entry->role_refusal_logged = true;
	if (!refusal_log_allowed(why))
		return;
	if (verdict == ROLE_NOT_MEMBER)
		ereport(LOG,
				(errmsg("webgres route %s: role \"%s\" may not be used by the route's owner",
						r->label, role),
				 errhint("The route's owner must be a member of the role: GRANT \"%s\" TO the owner.",
						 role),
				 errhidestmt(true)));
	else
		ereport(LOG,
				(errmsg("webgres route %s: no request may run as role \"%s\": %s",
						r->label, role, why),
				 errhint("Tokens and webgres.anon_role must name roles without SUPERUSER or BYPASSRLS, and not pg_ roles."),
				 errhidestmt(true)));
}

/*
 * The checks that need no catalog, once per request: a valid token if one
 * was sent (or one at all, on a required route), a role to run as, and the
 * CSRF rule.  Returns the status refusing the request (with *message for
 * its body, or NULL), or 0 with *role the role to run as.
 */
static int
check_credentials(h2o_req_t *req, const Route *r, AuthState *st, MemoryContext cxt,
				  const char **role, const char **message)
{
	*message = NULL;
	if (!st->looked)
		authenticate(req, r, st, cxt);
	if (st->status != 0)
	{
		*message = st->message;
		return st->status;
	}
	if (st->claims == NULL && r->auth == ROUTE_AUTH_REQUIRED)
		return 401;
	if ((*role = role_name(st)) == NULL)
		return 401;
	if (st->from_cookie && !csrf_allowed(req, r))
	{
		log_refusal(r, "a cookie-authenticated request came from another origin");
		return 403;
	}
	return 0;
}

/* Checks a request before it waits for an executor; false after answering 401 or 403. */
bool
auth_admit(h2o_req_t *req, const Route *r, AuthState *st, MemoryContext cxt,
		   char **body, size_t *bodylen)
{
	const char *role;
	const char *message;
	int			status = check_credentials(req, r, st, cxt, &role, &message);

	if (status != 0)
		return refuse(req, status, st->invalid_token, message, body, bodylen);
	return true;
}

/* Authenticates a request for a route with auth; false after answering 401 or 403. */
bool
auth_route(h2o_req_t *req, const Route *r, AuthState *st, RequestData *rd,
		   char **body, size_t *bodylen)
{
	const char *role;
	const char *message;
	Oid			roleid;
	RoleVerdict verdict;
	int			status = check_credentials(req, r, st, rd->cxt, &role, &message);

	if (status != 0)
		return refuse(req, status, st->invalid_token, message, body, bodylen);
	if ((verdict = role_for_owner(st, r->owner, role, &roleid)) != ROLE_ALLOWED)
	{
		log_role_refusal(r, st, role, verdict);
		return refuse(req, 403, false, NULL, body, bodylen);
	}
	st->run_as = role;
	request_set_identity(rd, roleid, st->claims);
	rd->authenticator = r->owner;
	rd->expires_at = st->has_exp ? (int64) ceil(st->exp) : 0;
	rd->secret_generation = st->secret_generation;
	rd->keys_generation = st->keys_generation;
	if (!st->settings_done)
		set_request_settings(req, rd, st, role);
	return true;
}

/* Whether owner may still run handlers as roleid; in a transaction. */
bool
auth_role_allowed(Oid owner, Oid roleid)
{
	return owner_may_become(owner, roleid) == ROLE_ALLOWED;
}

/* The count of role and membership changes this process has seen. */
uint64
auth_role_generation(void)
{
	return role_generation;
}

/* Warns, once at start and after each reload, of settings that weaken authentication. */
void
auth_check_settings(void)
{
	if (jwt_keys_file_set() &&
		(webgres_jwt_audience == NULL || webgres_jwt_audience[0] == '\0'))
		ereport(WARNING,
				(errmsg("webgres.jwt_keys_file is set but webgres.jwt_audience is empty"),
				 errdetail("Tokens the same identity provider issued for other applications are accepted."),
				 errhint("Set webgres.jwt_audience to the audience your identity provider puts in this application's tokens.")));
	jwt_secret_check_settings();
}

/*
 * PHASE_AUTHENTICATE, for a route with auth: inside the request's
 * transaction (pr->rd) auth_route(), else (admitting it to an executor's
 * queue) auth_admit().  True to go on; false after answering 401 or 403.
 */
static bool
authenticate_phase(PhaseRequest *pr, const Route *r)
{
	if (pr->rd != NULL)
		return auth_route(pr->req, r, pr->auth, pr->rd, pr->body, pr->bodylen);
	return auth_admit(pr->req, r, pr->auth, pr->cxt, pr->body, pr->bodylen);
}

/*
 * The module: always on its list, since a route's auth column, not a
 * setting, asks for it; the pipeline runs the phase only for such routes.
 */
const PhaseModule auth_module = {
	.name = "auth",
	.enabled = NULL,
	.hooks = {[PHASE_AUTHENTICATE] = authenticate_phase}
};

/* webgres.jwt_role_claim: a claim path as PostgREST's jwt-role-claim-key. */
static bool
check_claim_path(char **newval, void **extra, GucSource source)
{
	const char *error;

	if (*newval == NULL || jwt_path_valid(*newval, &error))
		return true;
	GUC_check_errdetail("%s.", error);
	GUC_check_errhint("Write a path such as role, .role, .\"https://example.com/claims\".role or .roles[0].");
	return false;
}

/* Defines the settings of authentication (docs/authentication.md); from _PG_init. */
void
auth_define_settings(void)
{
	DefineCustomStringVariable("webgres.jwt_audience",
							   "Audience a JSON Web Token must name in its aud claim.",
							   "Empty: the aud claim is not checked.",
							   &webgres_jwt_audience,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_issuer",
							   "Issuer a JSON Web Token must name in its iss claim.",
							   "Empty: the iss claim is not checked.",
							   &webgres_jwt_issuer,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.jwt_leeway",
							"Clock skew allowed when checking a JSON Web Token's exp, nbf and iat.",
							NULL,
							&webgres_jwt_leeway,
							AUTH_JWT_LEEWAY_DEFAULT,
							0, AUTH_JWT_LEEWAY_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_role_claim",
							   "Path of the claim that names the role a token's requests run as.",
							   "As PostgREST's jwt-role-claim-key: role, .role, "
							   ".\"https://example.com/claims\".role, .roles[0]. A token "
							   "without it runs as webgres.anon_role.",
							   &webgres_jwt_role_claim,
							   "role",
							   PGC_SIGHUP,
							   0,
							   check_claim_path, NULL, NULL);

	DefineCustomStringVariable("webgres.anon_role",
							   "Role that requests without a token run as on routes whose auth is optional.",
							   "Empty: such requests are answered 401. The route's owner must be a "
							   "member of it.",
							   &webgres_anon_role,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.jwt_cookie",
							   "Name of a cookie that may carry the JSON Web Token.",
							   "For browsers (EventSource sends no Authorization header). A "
							   "cookie-authenticated POST, PUT, PATCH or DELETE must come from "
							   "the server's own origin or one of webgres.csrf_trusted_origins. "
							   "Empty: tokens come only from the Authorization header.",
							   &webgres_jwt_cookie,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomBoolVariable("webgres.postgrest_request_settings",
							 "Also sets PostgREST's request.method, request.path, request.headers and request.cookies for routes with auth.",
							 "request.jwt.claims is always set on such routes. These four cost "
							 "building JSON of every header and three more settings a request; "
							 "handlers read the same from the request relation.",
							 &webgres_postgrest_request_settings,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.csrf_trusted_origins",
							   "Origins besides the server's own that may send cookie-authenticated unsafe requests.",
							   "A comma-separated list such as https://app.example.com.",
							   &webgres_csrf_trusted_origins,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);
}
