/*
 * rate_limit.c
 *		Rate limits: the access check that answers 429 (rate_limit.h).
 *
 * A limit of R requests a second with a burst of B lets B + 1 requests
 * through at once and then one every 1/R seconds, as nginx's
 * "limit_req ... burst=B nodelay" does.  A bucket's key is the limit's
 * scope (the server's, or a route's with how it keys) and the client's key
 * in it: an IPv4 address, the leading bits of an IPv6 address
 * (webgres.rate_limit_ipv6_prefix), or a hash of the role or claim value.
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "access/htup_details.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "port/pg_bswap.h"
#include "utils/guc.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "core/rate_buckets.h"
#include "message/response.h"
#include "parse/jwt.h"
#include "routes/route_stats.h"
#include "serve/auth.h"
#include "serve/phase.h"
#include "serve/rate_limit.h"

/* Bounds of the settings. */
#define RATE_LIMIT_MAX_RATE 1000000.0	/* requests a second */
#define RATE_LIMIT_MAX_BURST 1000000
#define RATE_LIMIT_MIN_SLOTS 64
#define RATE_LIMIT_MAX_SLOTS (16 * 1024 * 1024)
#define RATE_LIMIT_DEFAULT_SLOTS 65536

/* Scopes: a bucket's limit is the route id shifted past its key kind. */
#define SCOPE_SERVER 1
#define SCOPE_KIND_BITS 3

/* Whose budget a route's own limit counts a request against (its rate_key). */
typedef enum RateKeyKind
{
	RATE_BY_ADDRESS,			/* the client's address (IPv6: its prefix) */
	RATE_BY_ROUTE,				/* one budget for the whole route */
	RATE_BY_ROLE,				/* the role authentication chose */
	RATE_BY_CLAIM				/* a claim of the request's token */
} RateKeyKind;

/*
 * A route's own limit, from its columns (route_columns): the route's
 * module_conf, NULL when the route has no limit of its own.
 */
typedef struct RouteRateLimit
{
	double		rate;			/* requests a second, > 0 */
	int			burst;			/* requests allowed over the rate at once */
	RateKeyKind key;
	char	   *claim;			/* RATE_BY_CLAIM: the claim's path */
} RouteRateLimit;

/* Route r's own limit, or NULL. */
#define ROUTE_LIMIT(r) ((const RouteRateLimit *) PHASE_MODULE_CONF(r, rate_limit))

/* The module's columns of webgres.routes, as name and SQL type. */
static const char *const route_columns[] = {
	"rate_limit", "float8",
	"rate_burst", "integer",
	"rate_key", "text",
	NULL
};

/*
 * Routes whose own limits one request's state remembers having counted; a
 * request that matches more limited routes than this counts again (never
 * less) in the ones beyond.
 */
#define RATE_LIMIT_MAX_COUNTED 8

/*
 * What the limits have counted of one request: the module's slot of its
 * PhaseStates (serve/phase.h).
 */
typedef struct RateLimitState
{
	h2o_conn_t *client;			/* whose address; NULL: see has_key */
	bool		has_key;		/* no client: key is its address key */
	uint64		key[2];			/* the client's address key, if has_key */
	TimestampTz now;			/* the request's clock */
	bool		server_done;	/* the server's limit counted it */
	int			ndone;			/* entries in route_done */
	int64		route_done[RATE_LIMIT_MAX_COUNTED];	/* routes whose own limit counted it */
} RateLimitState;

/*
 * The state in a REQUEST frame (state_encode): a flags byte, the address
 * key, the count of routes and their ids, integers big-endian.
 */
#define WIRE_HAS_KEY 0x01
#define WIRE_SERVER_DONE 0x02
#define WIRE_FIXED_SIZE (1 + 8 + 8 + 1)

/* webgres.rate_limit and its companions. */
static double server_rate = 0;
static int	server_burst = 0;
static int	bucket_slots = RATE_LIMIT_DEFAULT_SLOTS;
static int	ipv6_prefix = 64;

/* Defines webgres.rate_limit and its companions. */
void
rate_limit_define_settings(void)
{
	DefineCustomRealVariable("webgres.rate_limit",
							 "Requests a second each client address may make to routes, server-wide.",
							 "A leaky bucket as nginx's limit_req: webgres.rate_limit_burst more "
							 "may come at once. Counts every request that matches a route, "
							 "before the route's own limit; 0 turns it off.",
							 &server_rate,
							 0, 0, RATE_LIMIT_MAX_RATE,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.rate_limit_burst",
							"Requests over webgres.rate_limit a client address may make at once.",
							"As nginx's burst with nodelay: they are served at once, and the "
							"bucket refills at the rate.",
							&server_burst,
							0, 0, RATE_LIMIT_MAX_BURST,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.rate_limit_slots",
							"Rate-limit buckets kept in shared memory.",
							"One per client and limit in use; when more are in use, the one "
							"of its set of 8 used longest ago is forgotten. About 50 bytes each.",
							&bucket_slots,
							RATE_LIMIT_DEFAULT_SLOTS, RATE_LIMIT_MIN_SLOTS, RATE_LIMIT_MAX_SLOTS,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.rate_limit_ipv6_prefix",
							"Leading bits of an IPv6 client address that rate limits key on.",
							"A client usually has a whole /64; 128 keys on the full address.",
							&ipv6_prefix,
							64, 16, 128,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}

/*
 * Reads a route's rate_limit, rate_burst and rate_key columns, from column
 * first on; no rate (NULL, or before the columns existed) is no limit of
 * its own and leaves the route's conf NULL.  The table's checks admit only
 * keys this knows.
 */
static void
read_route(HeapTuple tup, TupleDesc desc, int first, Route *r)
{
	bool		isnull;
	Datum		rate = SPI_getbinval(tup, desc, first, &isnull);
	Datum		burst;
	RouteRateLimit *lim;
	char	   *key;

	if (isnull || DatumGetFloat8(rate) <= 0)
		return;
	lim = palloc0(sizeof(RouteRateLimit));
	lim->rate = DatumGetFloat8(rate);
	burst = SPI_getbinval(tup, desc, first + 1, &isnull);
	lim->burst = isnull ? 0 : DatumGetInt32(burst);
	lim->key = RATE_BY_ADDRESS;
	key = SPI_getvalue(tup, desc, first + 2);
	if (key != NULL && strcmp(key, "route") == 0)
		lim->key = RATE_BY_ROUTE;
	else if (key != NULL && strcmp(key, "role") == 0)
		lim->key = RATE_BY_ROLE;
	else if (key != NULL && strncmp(key, "claim:", 6) == 0)
	{
		lim->key = RATE_BY_CLAIM;
		lim->claim = key + 6;
	}
	PHASE_MODULE_CONF(r, rate_limit) = lim;
}

/*
 * The routes trigger's check of rate_key (the table's own CHECK admits any
 * claim:PATH): a claim's path must be well formed.
 */
static void
check_route(HeapTuple tuple, TupleDesc desc)
{
	int			att = SPI_fnumber(desc, "rate_key");
	char	   *key;
	const char *error;

	if (att <= 0 || (key = SPI_getvalue(tuple, desc, att)) == NULL ||
		strncmp(key, "claim:", 6) != 0)
		return;
	if (!jwt_path_valid(key + 6, &error))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid claim path in rate_key \"%s\": %s", key, error),
				 errhint("Write claim:sub, claim:.tenant.id or claim:.\"https://example.com/claims\".org, as webgres.jwt_role_claim paths.")));
}

/* Asks for the buckets' shared memory; at module load. */
static void
shmem_request(void)
{
	rate_buckets_shmem_request(bucket_slots);
}

/* state_begin: a request that came on client (NULL: none) at now, nothing counted. */
static void
state_begin(void *state, h2o_conn_t *client, TimestampTz now)
{
	RateLimitState *st = state;

	st->client = client;
	st->has_key = false;
	st->key[0] = st->key[1] = 0;
	st->now = now;
	st->server_done = false;
	st->ndone = 0;
}

/* Whether route_id's own limit counted the request already. */
static bool
route_counted(const RateLimitState *st, int64 route_id)
{
	for (int i = 0; i < st->ndone; i++)
		if (st->route_done[i] == route_id)
			return true;
	return false;
}

/* Notes that route_id's own limit counted the request (while there is room). */
static void
note_counted(RateLimitState *st, int64 route_id)
{
	if (st->ndone < RATE_LIMIT_MAX_COUNTED)
		st->route_done[st->ndone++] = route_id;
}

/* A rate in thousandths of a request a second, at least one. */
static int64
rate_milli_of(double rate)
{
	return Max((int64) llround(rate * 1000.0), 1);
}

/*
 * The client's address as a key: IPv6 its first
 * webgres.rate_limit_ipv6_prefix bits, IPv4 whole in its IPv4-mapped form
 * ::ffff:a.b.c.d (which no masked IPv6 address that is not itself mapped
 * can take, so the two never share a key); any other kind of socket is
 * one client.
 */
static void
address_key(h2o_conn_t *client, uint64 key[2])
{
	struct sockaddr_storage ss;
	socklen_t	len = client->callbacks->get_peername(client, (struct sockaddr *) &ss);
	unsigned char bytes[16] = {0};

	if (len != 0 && ss.ss_family == AF_INET)
	{
		bytes[10] = bytes[11] = 0xff;
		memcpy(bytes + 12, &((struct sockaddr_in *) &ss)->sin_addr.s_addr, 4);
	}
	else if (len != 0 && ss.ss_family == AF_INET6)
	{
		const unsigned char *a = ((struct sockaddr_in6 *) &ss)->sin6_addr.s6_addr;

		if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *) a))
			memcpy(bytes, a, 16);
		else
			for (int bit = 0; bit < ipv6_prefix; bit += 8)
				bytes[bit / 8] = a[bit / 8] &
					(unsigned char) (ipv6_prefix - bit >= 8 ? 0xff : 0xff << (8 - (ipv6_prefix - bit)));
	}
	memcpy(&key[0], bytes, 8);
	memcpy(&key[1], bytes + 8, 8);
}

/* The request's address key: from its connection, or as handed over. */
static void
client_key(const RateLimitState *st, uint64 key[2])
{
	if (st->client != NULL)
		address_key(st->client, key);
	else
	{
		key[0] = st->key[0];
		key[1] = st->key[1];
	}
}

/*
 * state_hand_off: the executor counts the routes it runs beyond those
 * counted here, by the address key taken now from the connection, which
 * stays behind.
 */
static void
state_hand_off(void *state)
{
	RateLimitState *st = state;

	if (st->client != NULL && !st->has_key)
	{
		address_key(st->client, st->key);
		st->has_key = true;
	}
	st->client = NULL;
}

/* Appends v big-endian. */
static void
put_u64(StringInfo buf, uint64 v)
{
	uint64		n = pg_hton64(v);

	appendBinaryStringInfo(buf, (const char *) &n, sizeof(n));
}

/* Reads a big-endian u64 at p. */
static uint64
get_u64(const char *p)
{
	uint64		n;

	memcpy(&n, p, sizeof(n));
	return pg_ntoh64(n);
}

/* state_encode: what crosses to the executor (the layout above WIRE_FIXED_SIZE). */
static void
state_encode(StringInfo buf, const void *state)
{
	const RateLimitState *st = state;

	appendStringInfoChar(buf, (char) ((st->has_key ? WIRE_HAS_KEY : 0) |
									  (st->server_done ? WIRE_SERVER_DONE : 0)));
	put_u64(buf, st->key[0]);
	put_u64(buf, st->key[1]);
	appendStringInfoChar(buf, (char) st->ndone);
	for (int i = 0; i < st->ndone; i++)
		put_u64(buf, (uint64) st->route_done[i]);
}

/*
 * state_decode: a state from what state_encode wrote; false for unknown
 * flags, more routes than a state holds, or a length that is not theirs.
 */
static bool
state_decode(const char *data, size_t len, void *state)
{
	RateLimitState *st = state;
	uint8		flags;
	uint8		ndone;

	if (len < WIRE_FIXED_SIZE)
		return false;
	flags = (uint8) data[0];
	ndone = (uint8) data[WIRE_FIXED_SIZE - 1];
	if ((flags & ~(WIRE_HAS_KEY | WIRE_SERVER_DONE)) != 0 || ndone > RATE_LIMIT_MAX_COUNTED ||
		len != WIRE_FIXED_SIZE + 8 * (size_t) ndone)
		return false;
	st->client = NULL;
	st->has_key = (flags & WIRE_HAS_KEY) != 0;
	st->key[0] = get_u64(data + 1);
	st->key[1] = get_u64(data + 9);
	st->now = 0;
	st->server_done = (flags & WIRE_SERVER_DONE) != 0;
	st->ndone = ndone;
	for (int i = 0; i < ndone; i++)
		st->route_done[i] = (int64) get_u64(data + WIRE_FIXED_SIZE + 8 * i);
	return true;
}

/* state_resume: on the executor, the request's clock is its own. */
static void
state_resume(void *state, TimestampTz now)
{
	((RateLimitState *) state)->now = now;
}

/* A string (a role name, a claim's value) as a key: two independent hashes. */
static void
string_key(const char *s, size_t len, uint64 key[2])
{
	key[0] = hash_bytes_extended((const unsigned char *) s, (int) len, 0);
	key[1] = hash_bytes_extended((const unsigned char *) s, (int) len, 0x9e3779b97f4a7c15ULL);
}

/*
 * The value at the route's claim path in the token's claims, as a key;
 * false if there is no token or no such claim (or no scalar there).
 */
static bool
claim_key(const RouteRateLimit *lim, const AuthState *auth, uint64 key[2])
{
	const char *error;
	JwtJson    *claims;
	const JwtJson *v;
	char		num[64];

	if (auth == NULL || auth->claims == NULL || lim->claim == NULL)
		return false;
	claims = jwt_json_parse(auth->claims, strlen(auth->claims), &error);
	v = claims != NULL ? jwt_claim_at(claims, lim->claim) : NULL;
	if (v == NULL)
		return false;
	if (v->kind == JWT_JSON_STRING)
		string_key(v->str, v->len, key);
	else if (v->kind == JWT_JSON_NUMBER)
	{
		snprintf(num, sizeof(num), "%.17g", v->number);
		string_key(num, strlen(num), key);
	}
	else
		return false;
	return true;
}

/*
 * Answers 429 for a request refused by a limit of rate_milli with burst,
 * called policy in the RateLimit headers (draft-ietf-httpapi-ratelimit-
 * headers): its quota is burst + 1 requests in the window the bucket
 * takes to refill from empty, and the reset is when one more is allowed.
 */
static void
refuse(h2o_req_t *req, const Route *r, const char *policy, int64 rate_milli, int64 burst,
	   const RateTake *take, char **body, size_t *bodylen)
{
	int64		retry = Max((take->wait_ms + 999) / 1000, 1);
	int64		window = Max(((burst + 1) * 1000000 / rate_milli + 999) / 1000, 1);
	char		buf[128];
	int			len;

	response_simple(req, 429, "Too Many Requests", body, bodylen);
	len = snprintf(buf, sizeof(buf), INT64_FORMAT, retry);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
				   h2o_strdup(&req->pool, buf, len).base, len);
	len = snprintf(buf, sizeof(buf), "\"%s\";q=" INT64_FORMAT ";w=" INT64_FORMAT,
				   policy, burst + 1, window);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("ratelimit-policy"), 0, NULL,
						  h2o_strdup(&req->pool, buf, len).base, len);
	len = snprintf(buf, sizeof(buf), "\"%s\";r=0;t=" INT64_FORMAT, policy, retry);
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("ratelimit"), 0, NULL,
						  h2o_strdup(&req->pool, buf, len).base, len);
	route_stats_count_module(r->id, PHASE_MODULE_INDEX(rate_limit));
}

/* Takes one request from the bucket of scope and key; false after refusing it. */
static bool
take(RateLimitState *st, h2o_req_t *req, const Route *r, const char *policy,
	 uint64 scope, const uint64 key[2], double rate, int64 burst, char **body, size_t *bodylen)
{
	RateKey		k;
	RateTake	t;
	int64		rate_milli = rate_milli_of(rate);

	k.scope = scope;
	k.key[0] = key[0];
	k.key[1] = key[1];
	t = rate_buckets_take(&k, rate_milli, burst, st->now);
	if (!t.allowed)
		refuse(req, r, policy, rate_milli, burst, &t, body, bodylen);
	return t.allowed;
}

/* The scope of route r's own limit, keyed by kind. */
static inline uint64
route_scope(const Route *r, RateKeyKind kind)
{
	return ((uint64) r->id << SCOPE_KIND_BITS) | (uint64) (kind + 2);
}

/*
 * PHASE_ACCESS, before authentication: the server's limit, and r's by
 * address or route.  True to go on; false after answering 429.
 */
static bool
admit(PhaseRequest *pr, const Route *r)
{
	RateLimitState *st = phase_module_state(pr, PHASE_MODULE_ID_rate_limit);
	h2o_req_t  *req = pr->req;
	char	  **body = pr->body;
	size_t	   *bodylen = pr->bodylen;
	const RouteRateLimit *lim = ROUTE_LIMIT(r);
	uint64		key[2] = {0, 0};
	bool		have_address = false;

	if (st->client == NULL && !st->has_key)
		return true;
	if (server_rate > 0 && !st->server_done)
	{
		st->server_done = true;
		client_key(st, key);
		have_address = true;
		if (!take(st, req, r, "server", SCOPE_SERVER, key, server_rate, server_burst,
				  body, bodylen))
			return false;
	}
	if (lim == NULL || route_counted(st, r->id) ||
		lim->key == RATE_BY_ROLE || lim->key == RATE_BY_CLAIM)
		return true;
	note_counted(st, r->id);
	if (lim->key == RATE_BY_ROUTE)
		key[0] = key[1] = 0;
	else if (!have_address)
		client_key(st, key);
	return take(st, req, r, "route", route_scope(r, lim->key), key, lim->rate, lim->burst,
				body, bodylen);
}

/*
 * PHASE_ACCESS_IDENTITY, after authentication accepted the request for
 * route r: r's own limit when keyed by role or claim (a request without
 * one is counted by its address).  True to go on; false after answering 429.
 */
static bool
admit_identity(PhaseRequest *pr, const Route *r)
{
	RateLimitState *st = phase_module_state(pr, PHASE_MODULE_ID_rate_limit);
	const AuthState *auth = pr->auth;
	const RouteRateLimit *lim = ROUTE_LIMIT(r);
	uint64		key[2];
	uint64		scope;

	if ((st->client == NULL && !st->has_key) || lim == NULL || route_counted(st, r->id) ||
		(lim->key != RATE_BY_ROLE && lim->key != RATE_BY_CLAIM))
		return true;
	note_counted(st, r->id);
	scope = route_scope(r, lim->key);
	if (lim->key == RATE_BY_ROLE && auth->role != NULL)
		string_key(auth->role, strlen(auth->role), key);
	else if (lim->key != RATE_BY_CLAIM || !claim_key(lim, auth, key))
	{
		/* No token, or no such claim in it: the request counts by its address. */
		client_key(st, key);
		scope = route_scope(r, RATE_BY_ADDRESS);
	}
	return take(st, pr->req, r, "route", scope, key, lim->rate, lim->burst,
				pr->body, pr->bodylen);
}

/* Whether a limit applies anywhere: the server's, or a route's in routes. */
static bool
rate_limit_enabled(const RouteTable *routes)
{
	if (server_rate > 0)
		return true;
	for (int i = 0; routes != NULL && i < routes->nroutes; i++)
		if (ROUTE_LIMIT(&routes->routes[i]) != NULL)
			return true;
	return false;
}

/*
 * The module (serve/phase.h): access checks before and after
 * authentication, and what they counted of a request as its state; beside
 * the request, the buckets' shared memory, the route's own limit from its
 * columns, their trigger check, and the refusals counted per route
 * (webgres_route_rate_limited_total, and the rate_limited column of
 * webgres.route_stats).
 */
const PhaseModule rate_limit_module = {
	.name = "rate_limit",
	.enabled = rate_limit_enabled,
	.hooks = {[PHASE_ACCESS] = admit,[PHASE_ACCESS_IDENTITY] = admit_identity},
	.shmem_request = shmem_request,
	.route = {
		.columns = route_columns,
		.read_route = read_route,
		.check_route = check_route,
		.counter = "rate_limited",
		.counter_help = "Requests refused 429 because a rate limit was reached (docs/rate-limits.md).",
	},
	.state_size = sizeof(RateLimitState),
	.state_begin = state_begin,
	.state_hand_off = state_hand_off,
	.state_encode = state_encode,
	.state_decode = state_decode,
	.state_resume = state_resume
};
