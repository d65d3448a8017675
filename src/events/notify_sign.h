/*
 * notify_sign.h
 *		Notifications whose sender an event stream can trust.
 *
 * Postgres keeps no privileges on notification channels: any role that can
 * connect may NOTIFY any channel.  webgres.notify(channel, payload) sends a
 * notification whose payload carries the calling role and a MAC over it,
 * the database, the channel and the payload, keyed by a secret that lives
 * only in shared memory; a stream whose handler names `senders` receives
 * only notifications that verify and were sent by one of them.
 */
#ifndef WEBGRES_NOTIFY_SIGN_H
#define WEBGRES_NOTIFY_SIGN_H

/* Module load: ask for the key's shared memory (when preloaded). */
extern void notify_sign_shmem_request(void);

/*
 * If payload is one webgres.notify() signed for channel in this database,
 * sets *role to its sender and *inner to the payload it was given, and
 * returns true.  Otherwise returns false and sets neither.
 */
extern bool notify_sign_verify(const char *channel, const char *payload,
							   Oid *role, const char **inner);

#endif
