/*
 * h2o_hello: the bare libh2o reference for webgres' /plaintext and /json.
 *
 * The same HTTP layer webgres is built on (libh2o's evloop), with nothing
 * behind it: N processes, each with its own SO_REUSEPORT listening socket and
 * one event loop, answering
 *
 *   GET /plaintext   200 text/plain         Hello, World!
 *   GET /json        200 application/json   {"message":"Hello, World!"}
 *
 * with Server, Date (h2o's, cached per second) and Content-Length headers.
 * The JSON body is serialised per request, as the TechEmpower rules ask.
 * The ratio "webgres / h2o_hello" is therefore the price of everything
 * webgres adds on top of libh2o: routing, a transaction, SPI, the handler.
 *
 *   h2o_hello PORT [PROCESSES]      (listens on 127.0.0.1 only)
 *
 * Build: cc -O2 -DH2O_USE_LIBUV=0 -o h2o_hello h2o_hello.c -lh2o-evloop
 * SIGTERM or SIGINT to the parent stops every process.
 */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "h2o.h"

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;

static void set_common(h2o_req_t *req, const char *type, size_t type_len, size_t len)
{
	req->res.status = 200;
	req->res.reason = "OK";
	req->res.content_length = len;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, type_len);
}

static int on_plaintext(h2o_handler_t *self, h2o_req_t *req)
{
	static const char body[] = "Hello, World!";

	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
		return -1;
	set_common(req, H2O_STRLIT("text/plain"), sizeof(body) - 1);
	h2o_send_inline(req, body, sizeof(body) - 1);
	return 0;
}

/* A deliberately small but real serialiser: one object of string members. */
static size_t json_string(char *out, const char *s)
{
	char *p = out;

	*p++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char) c;
		} else if (c < 0x20) {
			p += sprintf(p, "\\u%04x", c);
		} else
			*p++ = (char) c;
	}
	*p++ = '"';
	return p - out;
}

static int on_json(h2o_handler_t *self, h2o_req_t *req)
{
	struct member { const char *key, *value; } object[] = {{"message", "Hello, World!"}};
	char *buf, *p;
	size_t i, cap = 2;

	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")))
		return -1;
	for (i = 0; i < sizeof(object) / sizeof(object[0]); i++)
		cap += 6 * (strlen(object[i].key) + strlen(object[i].value)) + 6;
	p = buf = h2o_mem_alloc_pool(&req->pool, cap);
	*p++ = '{';
	for (i = 0; i < sizeof(object) / sizeof(object[0]); i++) {
		if (i)
			*p++ = ',';
		p += json_string(p, object[i].key);
		*p++ = ':';
		p += json_string(p, object[i].value);
	}
	*p++ = '}';
	set_common(req, H2O_STRLIT("application/json"), p - buf);
	h2o_send_inline(req, buf, p - buf);
	return 0;
}

static void register_handler(h2o_hostconf_t *host, const char *path, int (*fn)(h2o_handler_t *, h2o_req_t *))
{
	h2o_pathconf_t *pathconf = h2o_config_register_path(host, path, 0);
	h2o_handler_t *handler = h2o_create_handler(pathconf, sizeof(*handler));

	handler->on_req = fn;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err != NULL)
		return;
	if ((sock = h2o_evloop_socket_accept(listener)) == NULL)
		return;
	h2o_accept(&accept_ctx, sock);
}

static int open_listener(int port)
{
	struct sockaddr_in addr;
	int fd, on = 1;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons(port);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
	    bind(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		perror("h2o_hello: listen");
		exit(1);
	}
	return fd;
}

static void serve(int port)
{
	h2o_evloop_t *loop = h2o_evloop_create();
	h2o_socket_t *listener;

	h2o_context_init(&ctx, loop, &config);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;
	listener = h2o_evloop_socket_create(loop, open_listener(port), H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(listener, on_accept);
	while (h2o_evloop_run(loop, INT32_MAX) == 0)
		;
	exit(1);
}

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	stopping = 1;
}

int main(int argc, char **argv)
{
	h2o_hostconf_t *host;
	int port, nproc, i;
	pid_t *children;

	if (argc < 2 || (port = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: h2o_hello PORT [PROCESSES]\n");
		return 2;
	}
	nproc = argc > 2 ? atoi(argv[2]) : 1;
	if (nproc < 1)
		nproc = 1;

	signal(SIGPIPE, SIG_IGN);
	h2o_config_init(&config);
	config.server_name = h2o_iovec_init(H2O_STRLIT("h2o_hello"));
	host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	register_handler(host, "/plaintext", on_plaintext);
	register_handler(host, "/json", on_json);

	children = calloc(nproc, sizeof(pid_t));
	for (i = 0; i < nproc; i++) {
		if ((children[i] = fork()) == 0) {
			signal(SIGTERM, SIG_DFL);
			signal(SIGINT, SIG_DFL);
			serve(port);
		} else if (children[i] < 0) {
			perror("h2o_hello: fork");
			return 1;
		}
	}

	/* The parent only waits: a signal stops everyone, a dead child stops the rest. */
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	while (!stopping) {
		if (wait(NULL) > 0 || errno != EINTR)
			break;
	}
	for (i = 0; i < nproc; i++)
		kill(children[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
}
