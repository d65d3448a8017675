/*
 * tls.h
 *		TLS listeners: certificates, handshakes, HTTP/2 or HTTP/1.1 by ALPN.
 */
#ifndef WEBGRES_TLS_H
#define WEBGRES_TLS_H

#include <stdbool.h>
#include <stddef.h>

struct st_h2o_accept_ctx_t;
struct st_h2o_req_t;
struct st_h2o_socket_t;

/* webgres.tls_listen as written ("" when unset), which the worker's start-up line names too. */
extern const char *tls_listen_setting(void);

/* Defines webgres.tls_* (but the ticket keys', tls_tickets.h); from _PG_init. */
extern void tls_define_settings(void);

/* h2o's h2o_socket_cb: what a listener runs when a connection waits. */
typedef void (*TlsListenerCallback) (struct st_h2o_socket_t *listener, const char *err);

/*
 * Opens the webgres.tls_listen sockets and loads the certificate, once per
 * worker after the cleartext listeners; a setting that cannot be used ends
 * the worker with an error naming it.  Connections are served with the
 * hosts and context of plain; on_accept is the listeners' callback.
 */
extern void tls_start(struct st_h2o_accept_ctx_t *plain, TlsListenerCallback on_accept);

/* After a reload: loads the certificate again, keeping the old one on failure. */
extern void tls_reload(void);

/*
 * With webgres.tls_redirect on, a request that came without TLS is answered
 * 308 to its https:// URL: the module tls_redirect_module of PHASE_REDIRECT
 * (serve/phase.h).
 */

#endif
