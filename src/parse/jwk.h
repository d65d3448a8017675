/*
 * jwk.h
 *		JSON Web Key sets (RFC 7517) read into plain bytes, and ECDSA
 *		signatures turned from JWS form into DER.
 *
 * Pure C on palloc alone, so that the fuzzer builds it outside a backend
 * (fuzz/fuzz_jwk.c).  What it returns is what serve/jwt_keys.c hands to
 * OpenSSL: the big-endian numbers of an RSA key, the uncompressed point of
 * an EC key, the raw bytes of an Ed25519 key.
 */
#ifndef WEBGRES_JWK_H
#define WEBGRES_JWK_H

#include "parse/jwt.h"

/* The longest r or s of an ECDSA signature webgres checks (P-521). */
#define JWS_EC_MAX_HALF 66
/* The longest DER an ECDSA signature of those becomes (ecdsa_jws_to_der). */
#define ECDSA_DER_MAX (3 + 2 * (2 + 1 + JWS_EC_MAX_HALF))

/* What became of one member of a key set's "keys" array. */
typedef enum JwkStatus
{
	JWK_USABLE,					/* a signature key, read into the fields below */
	JWK_SKIPPED,				/* not for signatures: "use" is not "sig", or an
								 * "oct" secret (those belong in the secret
								 * settings), or a kty webgres does not know */
	JWK_MALFORMED				/* meant for signatures, but unreadable */
} JwkStatus;

typedef enum JwkType
{
	JWK_RSA,
	JWK_EC,
	JWK_OKP						/* Ed25519 */
} JwkType;

typedef struct JwkKey
{
	JwkStatus	status;
	const char *kty;			/* as written; NULL if the member has none */
	JwkType		type;			/* JWK_USABLE only, as the rest */
	const char *kid;			/* NULL: none */
	const char *alg;			/* NULL: any algorithm that fits */
	bool		has_private;	/* it holds private parameters ("d", ...) */
	unsigned char *n;			/* RSA modulus, big-endian */
	size_t		nlen;
	unsigned char *e;			/* RSA exponent, big-endian */
	size_t		elen;
	const char *curve;			/* EC: OpenSSL's group name */
	unsigned char *point;		/* EC: 0x04 || x || y (SEC 1 2.3.3);
								 * OKP: the public key's raw bytes */
	size_t		pointlen;
} JwkKey;

/*
 * Reads a JWKS document: *keys gets one entry per member of its "keys"
 * array, in order, with *nkeys of them.  False, with *error, if it is not
 * JSON or has no "keys" array.
 */
extern bool jwks_parse(const char *text, size_t len, JwkKey **keys, int *nkeys,
					   const char **error);

/*
 * Turns a JWS ECDSA signature (r || s, each half bytes, RFC 7518 3.4) into
 * the DER SEQUENCE of two INTEGERs that OpenSSL checks, into out (room for
 * ECDSA_DER_MAX bytes).  False if siglen is not twice half or half is over
 * JWS_EC_MAX_HALF.
 */
extern bool ecdsa_jws_to_der(const unsigned char *sig, size_t siglen, size_t half,
							 unsigned char *out, size_t *outlen);

#endif
