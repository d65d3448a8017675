/*
 * jwt_keys.h
 *		The keys JSON Web Tokens are checked against, and the check itself.
 *
 * HS256/384/512 use the secret (serve/jwt_secret.h); RS256/384/512, PS256/384/512,
 * ES256/384/512 and EdDSA (Ed25519) use the public keys of
 * webgres.jwt_keys_file (a JWKS document or PEM), read when first needed
 * and again after each reload.  An algorithm is only ever checked with a
 * key of its own kind: an HS token is never checked against a public key
 * (the "algorithm confusion" attack), and a JWKS key that names its alg is
 * used for that algorithm alone.  Signatures are checked with OpenSSL 3,
 * which libh2o links already.
 */
#ifndef WEBGRES_JWT_KEYS_H
#define WEBGRES_JWT_KEYS_H

#include "parse/jwt.h"

/*
 * True if token's signature is good for its alg with a configured key;
 * else *error says why, for the log.
 */
extern bool jwt_keys_verify(const JwtToken *token, const char **error);

/* Forgets the keys read from the file: they are read again when needed. */
extern void jwt_keys_reload(void);

/*
 * A number (never 0) that changes when a reload finds the keys file's
 * content changed; reads the file if it is due.
 */
extern uint64 jwt_keys_generation(void);

/*
 * Signs claims (a JSON object's text) with the secret as HS256 and
 * returns the compact token; raises an error if there is no secret.
 */
extern char *jwt_keys_sign(const char *claims_json);

/* Whether webgres.jwt_keys_file names a file. */
extern bool jwt_keys_file_set(void);

/* Defines webgres.jwt_keys_file; from _PG_init. */
extern void jwt_keys_define_settings(void);

#endif							/* WEBGRES_JWT_KEYS_H */
