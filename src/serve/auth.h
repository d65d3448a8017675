/*
 * auth.h
 *		Authentication: a request's JSON Web Token becomes the role its
 *		handler runs as, and its claims become visible to SQL.
 *
 * A route's auth column says whether its requests carry a token (see
 * docs/authentication.md).  For a route with auth, the module auth_module
 * (PHASE_AUTHENTICATE, serve/phase.h) calls auth_route() before the
 * handler: the token (Authorization: Bearer, or
 * the webgres.jwt_cookie cookie, of which there must be one) is verified
 * once per request, and at most once per worker while it lasts (a bounded
 * cache keyed by the whole token, signature included); the role it names,
 * or webgres.anon_role, is checked against the route owner's memberships
 * and refused if it is a superuser, has BYPASSRLS or is a predefined role;
 * request.jwt.claims and PostgREST's other request.* settings are set for
 * the transaction.  A failure answers 401 or 403 and the handler does not
 * run; its reason goes to the log, within serve/refusal_log.h's bound.
 */
#ifndef WEBGRES_AUTH_H
#define WEBGRES_AUTH_H

#include "message/request.h"
#include "routes/routes.h"

struct st_h2o_req_t;

/* What one request's token turned out to be; reset by auth_begin(). */
typedef struct AuthState
{
	bool		looked;			/* the token was looked for and checked */
	int			status;			/* 0, or the status refusing it (401, 403) */
	bool		invalid_token;	/* a token was sent and refused */
	bool		from_cookie;	/* it came in webgres.jwt_cookie */
	const char *message;		/* the refusal's body, or NULL: the reason phrase */
	char	   *claims;			/* its claims (JSON), or NULL without one */
	char	   *role;			/* the role it claims, or NULL */
	const char *run_as;			/* the role the handler runs as (the
								 * claimed one or webgres.anon_role), once
								 * auth_route() accepted the request */
	bool		has_exp;
	double		exp;			/* when it expires (seconds since 1970) */
	uint64		secret_generation;	/* HS-signed: jwt_secret_generation() it
									 * was verified under; 0: not HS-signed */
	uint64		keys_generation;	/* verified with the keys file:
									 * jwt_keys_generation() then; 0: not */
	bool		settings_done;	/* request.* settings are set */
	struct CachedToken *token;	/* its entry in the cache of verified tokens */
	uint64		token_epoch;	/* the cache's epoch then (auth.c) */
} AuthState;

/* Starts a request: no token looked at yet. */
extern void auth_begin(AuthState *st);

/*
 * Chooses the role route r's handler runs as for req (rd->run_as,
 * rd->claims) and sets the request.* settings.  Returns true to run the
 * handler; false after answering 401 or 403 into *body.  Call inside the
 * request's transaction, for routes whose auth is not none.
 */
extern bool auth_route(struct st_h2o_req_t *req, const Route *r, AuthState *st,
					   RequestData *rd, char **body, size_t *bodylen);

/*
 * The checks of auth_route() that need no catalog and no transaction, for a
 * request about to wait for an executor, so that requests without a valid
 * token never take a place in the queue: the token, if one was sent, is
 * verified; a required one is there; there is a role to run as; the CSRF
 * rule.  Returns true to hand the request off (the executor runs
 * auth_route() in full); false after answering 401 or 403 into *body.
 * Allocates in cxt.
 */
extern bool auth_admit(struct st_h2o_req_t *req, const Route *r, AuthState *st,
					   MemoryContext cxt, char **body, size_t *bodylen);

/*
 * Whether route owner owner may still run handlers as roleid (auth_route()'s
 * role check, by OID); for event streams, which outlive their request.
 * Call inside a transaction.
 */
extern bool auth_role_allowed(Oid owner, Oid roleid);

/*
 * Whether origin (len bytes, an Origin header's value) is the server's own,
 * one of webgres.csrf_trusted_origins or one route r's CORS settings allow
 * by name; "null" never is.
 */
extern bool auth_origin_allowed(struct st_h2o_req_t *req, const Route *r,
								const char *origin, size_t len);

/*
 * Grows whenever this process sees a role or a role membership change (in
 * the invalidations a transaction's start takes in): role checks made
 * before are stale.
 */
extern uint64 auth_role_generation(void);

/*
 * Warns of settings that weaken authentication (a keys file without an
 * audience) or cannot work (an unusable secret file); at start and after
 * each reload, from the supervisor.
 */
extern void auth_check_settings(void);

/* The settings may have changed (SIGHUP): forget keys and verified tokens. */
extern void auth_reload(void);

/* Defines the webgres.jwt_* settings and their companions; from _PG_init. */
extern void auth_define_settings(void);

#endif							/* WEBGRES_AUTH_H */
