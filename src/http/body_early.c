/*
 * body_early.c
 *		A route's own body limit, applied while an HTTP/1 body still
 *		arrives (body_early.h).
 */
#include "postgres.h"

#include <sys/socket.h>
#include <unistd.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/body_early.h"
#include "parse/pattern.h"
#include "parse/screen.h"
#include "routes/routes.h"

/*
 * A chunked body is decoded in place as it arrives: the bytes after the
 * head are the body so far plus at most a chunk header not yet decoded.
 * A chunked body is refused early only when past its limit by more.
 */
#define CHUNKED_SLACK		4096

/* Room for the 413 response, head and body. */
#define EARLY_RESPONSE_MAX	768

/* Whether route r takes a request with this method (HEAD takes GET routes). */
static bool
method_matches(const Route *r, const char *method, size_t len)
{
	size_t		rlen;

	if (r->method == NULL)
		return true;
	rlen = strlen(r->method);
	if (len == 4 && memcmp(method, "HEAD", 4) == 0)
		return rlen == 3 && memcmp(r->method, "GET", 3) == 0;
	return rlen == len && memcmp(r->method, method, len) == 0;
}

/* The first route of the table as last loaded that takes the request, or NULL. */
static const Route *
route_for(const ScreenResult *res)
{
	RouteTable *routes = routes_peek();
	const char *path = res->target + res->path_offset;
	size_t		len = res->target_len - res->path_offset;
	const char *q = memchr(path, '?', len);
	PathSegments segs;
	PathCapture *caps;
	RouteMatch	m;
	Route	   *r;
	int			ncaps;

	if (routes == NULL || !routes->installed)
		return NULL;
	if (q != NULL)
		len = (size_t) (q - path);
	if (len == 0 || path[0] != '/' || !path_split(path, len, &segs))
		return NULL;
	caps = palloc(sizeof(PathCapture) * (routes->max_captures + 1));
	routes_match_init(&m, routes, &segs);
	while ((r = routes_match_next(&m, &ncaps, caps)) != NULL)
		if (method_matches(r, res->method, res->method_len))
			break;
	routes_match_end(&m);
	pfree(caps);
	return r;
}

/* Answers 413 with message on c's socket (not over TLS) and shuts it down. */
static void
answer_413(Http1ConnHead *c, const char *message)
{
	char		resp[EARLY_RESPONSE_MAX];
	int			fd = h2o_mirror_socket_fd(c->sock);
	int			n;

	n = snprintf(resp, sizeof(resp),
				 "HTTP/1.1 413 Payload Too Large\r\n"
				 "Connection: close\r\n"
				 "Content-Type: text/plain; charset=utf-8\r\n"
				 "Content-Length: %zu\r\n"
				 "\r\n"
				 "%s\n", strlen(message) + 1, message);
	if (c->sock->ssl == NULL && n > 0 && n < (int) sizeof(resp) && write(fd, resp, n) < 0)
	{
		/* The client is gone or not reading: closing is all that is left. */
	}
	shutdown(fd, SHUT_RDWR);
}

/* True if c's body is over its route's limit, after answering 413. */
bool
body_early_refuse(Http1ConnHead *c)
{
	h2o_buffer_t *in = c->sock->input;
	ScreenResult res;
	const Route *r;
	uint64_t	size;
	char		message[EARLY_RESPONSE_MAX / 2];

	if (in == NULL || !screen_request(in->bytes, in->size, &res) || !res.has_body)
		return false;
	if (res.chunked)
	{
		size = in->size - res.head_len;
		if (size <= CHUNKED_SLACK)
			return false;
		size -= CHUNKED_SLACK;
	}
	else
		size = res.content_length;
	r = route_for(&res);
	if (r == NULL || r->max_body_size < 0 || size <= (uint64_t) r->max_body_size)
		return false;
	if (res.chunked)
		snprintf(message, sizeof(message), "the request body is over %lld bytes; route %s takes at most %lld",
				 (long long) r->max_body_size, r->label, (long long) r->max_body_size);
	else
		snprintf(message, sizeof(message), "the request body is %llu bytes; route %s takes at most %lld",
				 (unsigned long long) size, r->label, (long long) r->max_body_size);
	ereport(DEBUG1,
			(errmsg_internal("webgres refused a request body while it arrived: %s", message)));
	answer_413(c, message);
	return true;
}
