/*
 * replica.c
 *		What a standby answers to a request it cannot serve.
 *
 * A standby runs handlers read-only.  A request whose route writes (its
 * plan is more than a plain SELECT, known before the handler runs) or
 * answers an event stream (LISTEN cannot run during recovery, and NOTIFY
 * is not replicated) needs the primary.  With webgres.primary_url set it
 * is redirected there with 307, which keeps the method and the body
 * (RFC 9110 15.4.8); a primary never redirects, since only a node in
 * recovery gets here, so the same configuration can sit on every node.
 * Without it the answer is 503 with Retry-After: a promotion may be under
 * way.  A handler that looked read-only and writes anyway (a volatile
 * function) fails with SQLSTATE 25006 before it has changed anything, and
 * gets the same answer.
 */
#include "postgres.h"

#include "utils/guc.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/errors.h"
#include "message/response.h"
#include "serve/replica.h"

/* webgres.primary_url (replica_define_settings). */
static char *webgres_primary_url;

/* Seconds a client is asked to wait when no primary URL is known. */
#define REPLICA_RETRY_AFTER "5"

/* Answers a request that needs the primary: 307 to it, or 503. */
void
replica_answer_needs_primary(h2o_req_t *req, char **body, size_t *bodylen)
{
	req->res.headers = (h2o_headers_t) {NULL};
	if (webgres_primary_url != NULL && webgres_primary_url[0] != '\0')
	{
		size_t		ulen = strlen(webgres_primary_url);
		char	   *location = h2o_mem_alloc_pool(&req->pool, ulen + req->path.len);

		/* req->path is the request target as sent: path and query. */
		memcpy(location, webgres_primary_url, ulen);
		memcpy(location + ulen, req->path.base, req->path.len);
		response_simple(req, 307, "This node is a standby: writes go to the primary.",
						body, bodylen);
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL,
					   location, ulen + req->path.len);
	}
	else
	{
		response_simple(req, 503, "This node is a standby and cannot write.", body, bodylen);
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL,
					   H2O_STRLIT(REPLICA_RETRY_AFTER));
	}
}

/* The primary's URL is empty or an http(s) origin with an optional path prefix. */
static bool
check_primary_url(char **newval, void **extra, GucSource source)
{
	const char *u = *newval;
	const char *rest;

	if (u == NULL || u[0] == '\0')
		return true;
	if (strncmp(u, "https://", 8) == 0)
		rest = u + 8;
	else if (strncmp(u, "http://", 7) == 0)
		rest = u + 7;
	else
		rest = NULL;
	if (rest == NULL || rest[0] == '\0' || rest[0] == '/' ||
		strpbrk(u, "?# \t\r\n") != NULL || u[strlen(u) - 1] == '/')
	{
		GUC_check_errdetail("webgres.primary_url must be an http:// or https:// URL with a host, no query and no trailing slash.");
		GUC_check_errhint("For example 'https://db1.example:8443'.");
		return false;
	}
	return true;
}

/* Defines webgres.primary_url; from _PG_init. */
void
replica_define_settings(void)
{
	DefineCustomStringVariable("webgres.primary_url",
							   "Where a standby sends requests that must write.",
							   "On a standby, a request whose route writes (or is an event "
							   "stream) is answered 307 to this URL plus its path and query. "
							   "Empty: such requests are answered 503 with Retry-After.",
							   &webgres_primary_url,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_primary_url, NULL, NULL);
}
