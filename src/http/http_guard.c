/*
 * http_guard.c
 *		Screens each request before it is routed.
 *
 * h2o has parsed the head and, when there is one, read the body; the head's
 * bytes are still at the start of the connection's input buffer, where h2o
 * leaves them until the response is sent.  screen_request() reads them
 * again, strictly.  A refused request is answered here and its connection
 * closed, so that bytes h2o would read as a further request (smuggled behind
 * an ambiguous body) are never read.
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/h2_guard.h"
#include "http/http_guard.h"
#include "message/response.h"
#include "parse/screen.h"
#include "serve/phase.h"

/* Answers req with status and reason, closes the connection after, and returns false. */
static bool
refuse(h2o_req_t *req, int status, const char *reason, char **body, size_t *bodylen)
{
	ereport(DEBUG1,
			(errmsg_internal("webgres refused a request with %d: %s", status, reason)));
	req->http1_is_persistent = 0;
	response_simple(req, status, reason, body, bodylen);
	return false;
}

/* Routes "http://host/p?q" as "/p?q", and "http://host?q" as "/?q". */
static void
use_origin_form(h2o_req_t *req, size_t offset)
{
	h2o_iovec_t path = req->path;

	if (offset < path.len && path.base[offset] == '/')
	{
		req->path = h2o_iovec_init(path.base + offset, path.len - offset);
		if (req->query_at != SIZE_MAX)
			req->query_at -= offset;
	}
	else
	{
		size_t		len = path.len - offset + 1;
		char	   *p = h2o_mem_alloc_pool(&req->pool, len);

		p[0] = '/';
		memcpy(p + 1, path.base + offset, len - 1);
		req->path = h2o_iovec_init(p, len);
		req->query_at = (len > 1) ? 1 : SIZE_MAX;
	}
}

/*
 * Whether the request came over TLS, from its connection: an HTTP/2
 * client's :scheme, or an absolute URL's, says what the client claims.
 * The request relation's tls column reads req->scheme (request.c).
 */
static void
set_scheme(h2o_req_t *req, h2o_socket_t *sock)
{
	req->scheme = (sock != NULL && sock->ssl != NULL) ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP;
}

/* True if req may be routed; else the refusal is in req->res and *body. */
static bool
http_guard_check(h2o_req_t *req, char **body, size_t *bodylen)
{
	h2o_socket_t *sock;
	ScreenResult res;

	sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
	set_scheme(req, sock);

	/* HTTP/2 frames its own messages; its screening is per connection. */
	if (req->version >= 0x200)
		return h2_guard_check(req, body, bodylen);

	if (sock == NULL || sock->input == NULL)
		return refuse(req, 400, "the request head could not be read", body, bodylen);

	if (!screen_request(sock->input->bytes, sock->input->size, &res))
		return refuse(req, res.status, res.reason, body, bodylen);

	/* What was screened must be what h2o parsed, byte for byte. */
	if (res.method_len != req->input.method.len ||
		memcmp(res.method, req->input.method.base, res.method_len) != 0 ||
		res.target_len != req->input.path.len ||
		memcmp(res.target, req->input.path.base, res.target_len) != 0)
	{
		ereport(WARNING,
				(errmsg("webgres could not match a request head with what the HTTP parser read")));
		return refuse(req, 400, "the request head could not be read", body, bodylen);
	}

	if (res.path_offset > 0)
		use_origin_form(req, res.path_offset);
	return true;
}

/* PHASE_CONNECTION: the request head's screening; false once refused. */
static bool
guard_phase(PhaseRequest *pr, const Route *unused)
{
	return http_guard_check(pr->req, pr->body, pr->bodylen);
}

/* The module: every request is screened, whatever the settings. */
const PhaseModule http_guard_module = {
	.name = "http_guard",
	.enabled = NULL,
	.hooks = {[PHASE_CONNECTION] = guard_phase}
};
