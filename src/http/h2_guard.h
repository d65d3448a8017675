/*
 * h2_guard.h
 *		HTTP/2, cleartext (h2c, behind webgres.http2) or negotiated over TLS,
 *		screened by h2_screen.
 */
#ifndef WEBGRES_H2_GUARD_H
#define WEBGRES_H2_GUARD_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/time.h>

struct st_h2o_accept_ctx_t;
struct st_h2o_context_t;
struct st_h2o_socket_t;
struct st_h2o_req_t;

/* Once per worker, after h2o_context_init: h2o itself never switches to HTTP/2. */
extern void h2_guard_init(struct st_h2o_context_t *ctx);

/* After h2o_accept: watches the connection's first bytes for the h2c preface. */
extern void h2_guard_accepted(struct st_h2o_socket_t *sock);

/*
 * After a TLS handshake that chose "h2" by ALPN: starts h2o's HTTP/2 on the
 * connection with the same screening as h2c.
 */
extern void h2_guard_accepted_tls(struct st_h2o_accept_ctx_t *actx, struct st_h2o_socket_t *sock,
								  struct timeval connected_at);

/*
 * For an HTTP/2 request, before it is routed: false if it must not be run
 * (its stream is already reset, or its header list is too large); the
 * answer is then in req->res and *body.
 */
extern bool h2_guard_check(struct st_h2o_req_t *req, char **body, size_t *bodylen);

/* After an HTTP/2 request was answered with bodylen bytes of body. */
extern void h2_guard_answered(struct st_h2o_req_t *req, size_t bodylen);

/* Defines webgres.http2 and webgres.http2_max_resets; from _PG_init. */
extern void h2_guard_define_settings(void);

#endif
