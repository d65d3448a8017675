/*
 * cors.c
 *		CORS on the wire: preflights answered from the route table, and the
 *		allow headers on the responses of routes that have origins allowed.
 *
 * Written by hand: libh2o 2.2.5 has no CORS handler, and what a route
 * allows lives in the route table, which h2o's configuration cannot see.
 * What applies to a route is cors_policy.c's; this file only reads the
 * request's Origin and Access-Control-Request-* headers and writes the
 * answer.  See docs/cors.md.
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/response.h"
#include "serve/cors.h"
#include "serve/cors_policy.h"
#include "serve/phase.h"

/*
 * The value of the Vary header this module adds.  Its address, not its
 * text, marks a response that already has the CORS headers: a handler's
 * own "Vary: Origin" is a copy elsewhere and does not count.
 */
static const char vary_origin[] = "Origin";

/* Varies a preflight's answer: the three request headers it reads. */
#define PREFLIGHT_VARY "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"

/* The value of the request header name (lower case), if it has one. */
static bool
request_header(h2o_req_t *req, const char *name, size_t len, h2o_iovec_t *value)
{
	for (size_t i = 0; i < req->headers.size; i++)
	{
		h2o_header_t *h = &req->headers.entries[i];

		if (h2o_lcstris(h->name->base, h->name->len, name, len))
		{
			*value = h->value;
			return true;
		}
	}
	return false;
}

/* Adds a response header by its lower-case name. */
static void
add_header(h2o_req_t *req, const char *name, const char *value, size_t len)
{
	h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, value, len);
}

/* A list's entries joined by ", ", in the request's pool. */
static h2o_iovec_t
joined(h2o_req_t *req, const CorsList *list)
{
	size_t		len = 0;
	char	   *buf;
	char	   *p;

	for (int i = 0; i < list->n; i++)
		len += strlen(list->items[i]) + 2;
	p = buf = h2o_mem_alloc_pool(&req->pool, len + 1);
	for (int i = 0; i < list->n; i++)
	{
		size_t		n = strlen(list->items[i]);

		if (i > 0)
		{
			memcpy(p, ", ", 2);
			p += 2;
		}
		memcpy(p, list->items[i], n);
		p += n;
	}
	*p = '\0';
	return h2o_iovec_init(buf, p - buf);
}

/*
 * Access-Control-Allow-Origin for an allowed origin: the origin itself when
 * an entry named it, with Allow-Credentials if those are allowed; "*" when
 * only "*" let it in, never with credentials.
 */
static void
add_allow_origin(h2o_req_t *req, const CorsEffective *e, h2o_iovec_t origin, bool by_entry)
{
	if (!by_entry)
	{
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN,
					   NULL, H2O_STRLIT("*"));
		return;
	}
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN,
				   NULL, origin.base, origin.len);
	if (e->credentials)
		add_header(req, "access-control-allow-credentials", H2O_STRLIT("true"));
}

/* Whether the response already has this module's headers. */
static bool
already_added(h2o_req_t *req)
{
	for (size_t i = 0; i < req->res.headers.size; i++)
		if (req->res.headers.entries[i].value.base == vary_origin)
			return true;
	return false;
}

/* The allow headers on an answer of route (cors.h). */
void
cors_respond(h2o_req_t *req, const Route *route)
{
	CorsEffective e;
	h2o_iovec_t origin;
	bool		by_entry;

	if (route == NULL || !cors_effective(route, &e) || already_added(req))
		return;
	/* Caches must not give one origin's answer to another. */
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL,
				   vary_origin, sizeof(vary_origin) - 1);
	if (!request_header(req, H2O_STRLIT("origin"), &origin) ||
		!cors_list_allows_origin(e.origins, origin.base, origin.len, true, &by_entry))
		return;
	add_allow_origin(req, &e, origin, by_entry);
	if (e.exposed->n > 0)
	{
		h2o_iovec_t v = joined(req, e.exposed);

		add_header(req, "access-control-expose-headers", v.base, v.len);
	}
}

/* Whether route r takes requests of method (HEAD: GET routes too). */
static bool
takes_method(const Route *r, h2o_iovec_t method)
{
	size_t		len;

	if (r->method == NULL)
		return true;
	len = strlen(r->method);
	if (h2o_memis(method.base, method.len, H2O_STRLIT("HEAD")) && len == 3 &&
		memcmp(r->method, "GET", 3) == 0)
		return true;
	return len == method.len && memcmp(r->method, method.base, len) == 0;
}

/* The first route of table matching segs that takes method; NULL if none does. */
static Route *
route_for(const RouteTable *table, const PathSegments *segs, const h2o_iovec_t *method)
{
	PathCapture caps[MAX_PATH_SEGMENTS + 1];
	RouteMatch	m;
	Route	   *r;
	int			ncaps;

	routes_match_init(&m, table, segs);
	while ((r = routes_match_next(&m, &ncaps, caps)) != NULL)
		if (method == NULL || takes_method(r, *method))
			break;
	routes_match_end(&m);
	return r;
}

/* The first route at the path, whose settings cover a 405 (cors.h). */
Route *
cors_route_at(const RouteTable *table, const PathSegments *segs)
{
	return route_for(table, segs, NULL);
}

/* Whether every header name in a preflight's comma-separated list is allowed. */
static bool
headers_allowed(const CorsList *allowed, h2o_iovec_t asked)
{
	const char *p = asked.base;
	const char *end = asked.base + asked.len;

	while (p < end)
	{
		const char *comma = memchr(p, ',', end - p);
		const char *stop = comma ? comma : end;
		const char *last = stop;

		while (p < last && (*p == ' ' || *p == '\t'))
			p++;
		while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
			last--;
		if (last > p && !cors_list_has(allowed, p, last - p, true))
			return false;
		p = stop + 1;
	}
	return true;
}

/* Refuses a preflight: 403, no Access-Control-Allow-* header. */
static void
refuse(h2o_req_t *req, const char *why, char **body, size_t *bodylen)
{
	response_simple(req, 403, why, body, bodylen);
	add_header(req, "vary", H2O_STRLIT(PREFLIGHT_VARY));
}

/* Grants a preflight: 204 and the Access-Control-Allow-* headers. */
static void
grant(h2o_req_t *req, const CorsEffective *e, h2o_iovec_t origin, bool by_entry,
	  h2o_iovec_t method, const h2o_iovec_t *asked, char **body, size_t *bodylen)
{
	h2o_iovec_t v;

	req->res.status = 204;
	req->res.reason = "No Content";
	req->res.content_length = 0;
	*body = h2o_mem_alloc_pool(&req->pool, 1);
	*bodylen = 0;
	add_allow_origin(req, e, origin, by_entry);
	v = e->methods->n > 0 ? joined(req, e->methods) : method;
	add_header(req, "access-control-allow-methods", v.base, v.len);
	if (asked != NULL && asked->len > 0)
	{
		v = e->headers->n > 0 ? joined(req, e->headers) : *asked;
		add_header(req, "access-control-allow-headers", v.base, v.len);
	}
	if (e->max_age >= 0)
	{
		char	   *age = h2o_mem_alloc_pool(&req->pool, 16);

		add_header(req, "access-control-max-age", age, snprintf(age, 16, "%d", e->max_age));
	}
	add_header(req, "vary", H2O_STRLIT(PREFLIGHT_VARY));
}

/* Answers a CORS preflight from the route table (cors.h). */
bool
cors_preflight(h2o_req_t *req, const RouteTable *table, const PathSegments *segs,
			   char **body, size_t *bodylen)
{
	h2o_iovec_t origin;
	h2o_iovec_t method;
	h2o_iovec_t asked;
	bool		has_asked;
	bool		by_entry;
	Route	   *route;
	CorsEffective e;

	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS")) || table == NULL ||
		!request_header(req, H2O_STRLIT("origin"), &origin) ||
		!request_header(req, H2O_STRLIT("access-control-request-method"), &method))
		return false;
	/* The route the request itself would go to decides; none: answered as usual (405). */
	route = route_for(table, segs, &method);
	if (route == NULL || !cors_effective(route, &e))
		return false;

	has_asked = request_header(req, H2O_STRLIT("access-control-request-headers"), &asked);
	if (!cors_list_allows_origin(e.origins, origin.base, origin.len, true, &by_entry))
		refuse(req, "CORS preflight refused: the origin is not allowed", body, bodylen);
	else if (e.methods->n > 0 && !cors_list_has(e.methods, method.base, method.len, false))
		refuse(req, "CORS preflight refused: the method is not allowed", body, bodylen);
	else if (has_asked && e.headers->n > 0 && !headers_allowed(e.headers, asked))
		refuse(req, "CORS preflight refused: a request header is not allowed", body, bodylen);
	else
		grant(req, &e, origin, by_entry, method, has_asked ? &asked : NULL, body, bodylen);
	return true;
}

/* Whether an entry of route's origins names origin (cors.h). */
bool
cors_origin_allowed(const Route *route, const char *origin, size_t len)
{
	CorsEffective e;
	bool		by_entry;

	return route != NULL && cors_effective(route, &e) &&
		cors_list_allows_origin(e.origins, origin, len, false, &by_entry);
}

/* PHASE_PREFLIGHT: answers a CORS preflight from pr->routes; false then. */
static bool
preflight_phase(PhaseRequest *pr, const Route *unused)
{
	return !cors_preflight(pr->req, pr->routes, pr->segs, pr->body, pr->bodylen);
}

/* Whether CORS allows anything to a route of routes (settings or columns). */
static bool
cors_enabled(const RouteTable *routes)
{
	CorsEffective e;

	for (int i = 0; routes != NULL && i < routes->nroutes; i++)
		if (cors_effective(&routes->routes[i], &e))
			return true;
	return false;
}

/* PHASE_FILTER: the allow headers on an answer of route r; always goes on. */
static bool
respond_phase(PhaseRequest *pr, const Route *r)
{
	cors_respond(pr->req, r);
	return true;
}

/*
 * The module: preflights, and the allow headers on answers.  Off the lists
 * while no route allows any origin, so that such a table's answers pay
 * nothing for CORS.
 */
const PhaseModule cors_module = {
	.name = "cors",
	.enabled = cors_enabled,
	.hooks = {[PHASE_PREFLIGHT] = preflight_phase,[PHASE_FILTER] = respond_phase}
};
