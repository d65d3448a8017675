/*
 * jwt_secret.h
 *		The secret HS256/384/512 tokens are signed and checked with, kept
 *		from every role but superusers.
 *
 * It comes from webgres.jwt_secret_file (a file only the server's OS user
 * may read, checked as Postgres checks ssl_key_file) or, failing that,
 * from webgres.jwt_secret.  The setting's value never reaches anything a
 * role can read: its variable holds a mask whatever it is set to, the
 * secret itself living in the setting's private "extra" data, so that
 * SHOW, current_setting(), pg_settings and the server's "parameter
 * changed" log line all see the mask (docs/security.md says what each
 * path shows).
 */
#ifndef WEBGRES_JWT_SECRET_H
#define WEBGRES_JWT_SECRET_H

/* The secret's shortest allowed length, in bytes. */
#define JWT_MIN_SECRET_LEN 32
/* A secret file longer than this is refused. */
#define JWT_SECRET_FILE_MAX_BYTES 4096
/* Seconds between two looks at the secret file for a cached token. */
#define JWT_SECRET_RECHECK_S 1

/* Defines webgres.jwt_secret and webgres.jwt_secret_file; from _PG_init. */
extern void jwt_secret_define_settings(void);

/*
 * The secret, and its length (it may hold any bytes).  False, with *error
 * saying why for the log, when there is none or the file cannot be used;
 * *error is NULL when neither setting is set.
 */
extern bool jwt_secret_get(const unsigned char **secret, size_t *len, const char **error);

/*
 * A number that changes whenever the secret may have: the file's content
 * or its usability, or the setting.  The file is looked at again at most
 * once every JWT_SECRET_RECHECK_S: what was verified with an older secret
 * is then no longer known good (serve/auth.c empties its token cache).
 */
extern uint64 jwt_secret_generation(void);

/*
 * Warns of a secret file that cannot be used, or of both settings set
 * (the file wins); from auth_check_settings().
 */
extern void jwt_secret_check_settings(void);

#endif							/* WEBGRES_JWT_SECRET_H */
