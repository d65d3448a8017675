/*
 * timeouts.h
 *		Client timeouts: idle keep-alive, request head, request body, and
 *		the send timeout.
 */
#ifndef WEBGRES_TIMEOUTS_H
#define WEBGRES_TIMEOUTS_H

struct st_h2o_context_t;

/* Starts watching the context's connections (HTTP/1 and HTTP/2); call once. */
extern void timeouts_start(struct st_h2o_context_t *ctx);

/* h2o's own request timeout: a backstop, longer than any of webgres'. */
extern unsigned long timeouts_backstop_ms(void);

/* webgres.header_timeout in milliseconds, which also bounds a TLS handshake (tls.c). */
extern int	timeouts_header_ms(void);

/* Defines the client timeouts (docs/settings.md); from _PG_init. */
extern void timeouts_define_settings(void);

#endif
