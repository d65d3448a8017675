/*
 * tls_tickets.h
 *		TLS session ticket keys shared by every worker, rotated on a schedule.
 */
#ifndef WEBGRES_TLS_TICKETS_H
#define WEBGRES_TLS_TICKETS_H

#include <openssl/ssl.h>

/* Module load: ask for the keys' shared memory (when preloaded). */
extern void tls_tickets_shmem_request(void);

/*
 * Makes ctx encrypt session tickets (TLS 1.2 and 1.3) with the shared
 * current key and take tickets of the current and the previous one; a
 * session lives webgres.tls_ticket_rotation at most.
 */
extern void tls_tickets_install(SSL_CTX *ctx);

/* Defines webgres.tls_ticket_rotation; from _PG_init. */
extern void tls_tickets_define_settings(void);

#endif
