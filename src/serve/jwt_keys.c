/*
 * jwt_keys.c
 *		Reads JWT keys (secret, JWKS, PEM) and checks signatures with OpenSSL.
 *
 * Nothing here is offered by libh2o, which uses OpenSSL only for TLS; the
 * JWS algorithms of RFC 7518 map onto OpenSSL's EVP interface directly.
 */
#include "postgres.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "common/hashfn.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "parse/jwk.h"
#include "serve/jwt_keys.h"
#include "serve/jwt_secret.h"

/* A keys file larger than this is refused. */
#define KEYS_FILE_MAX_BYTES (1024 * 1024)
/* RSA keys shorter than this are not used (RFC 7518 section 3.3). */
#define RSA_MIN_BITS 2048
/* The longest curve name OpenSSL reports that we compare. */
#define CURVE_NAME_LEN 64

/* webgres.jwt_keys_file (jwt_keys_define_settings). */
static char *webgres_jwt_keys_file;

/* How an algorithm checks its signature. */
typedef enum JwsFamily
{
	JWS_HMAC,
	JWS_RSA_PKCS1,
	JWS_RSA_PSS,
	JWS_ECDSA,
	JWS_EDDSA
} JwsFamily;

typedef struct JwsAlgorithm
{
	const char *name;
	JwsFamily	family;
	const EVP_MD *(*md) (void);
	int			ec_bytes;		/* ECDSA: the length of r and of s */
	const char *curve;			/* ECDSA: OpenSSL's name of the curve */
} JwsAlgorithm;

/* The algorithms accepted; "none" and anything else are not. */
static const JwsAlgorithm algorithms[] = {
	{"HS256", JWS_HMAC, EVP_sha256, 0, NULL},
	{"HS384", JWS_HMAC, EVP_sha384, 0, NULL},
	{"HS512", JWS_HMAC, EVP_sha512, 0, NULL},
	{"RS256", JWS_RSA_PKCS1, EVP_sha256, 0, NULL},
	{"RS384", JWS_RSA_PKCS1, EVP_sha384, 0, NULL},
	{"RS512", JWS_RSA_PKCS1, EVP_sha512, 0, NULL},
	{"PS256", JWS_RSA_PSS, EVP_sha256, 0, NULL},
	{"PS384", JWS_RSA_PSS, EVP_sha384, 0, NULL},
	{"PS512", JWS_RSA_PSS, EVP_sha512, 0, NULL},
	{"ES256", JWS_ECDSA, EVP_sha256, 32, "prime256v1"},
	{"ES384", JWS_ECDSA, EVP_sha384, 48, "secp384r1"},
	{"ES512", JWS_ECDSA, EVP_sha512, 66, "secp521r1"},
	{"EdDSA", JWS_EDDSA, NULL, 0, NULL},
};

/* A public key from the keys file. */
typedef struct JwtKey
{
	char	   *kid;			/* NULL: none (PEM keys, JWKS keys without one) */
	char	   *alg;			/* the JWKS key's alg, or NULL for any that fits */
	EVP_PKEY   *pkey;
} JwtKey;

static MemoryContext keys_cxt = NULL;
static JwtKey *keys = NULL;
static int	nkeys = 0;
static bool keys_loaded = false;

/*
 * One more each time a reload finds the keys file's content changed
 * (jwt_keys_generation()); keys_digest is a hash of the content last read
 * (0 for none: no file, unreadable, too large).
 */
static uint64 keys_generation = 1;
static uint64 keys_digest = 0;

/* The algorithm named name, or NULL. */
static const JwsAlgorithm *
find_algorithm(const char *name)
{
	for (size_t i = 0; i < lengthof(algorithms); i++)
		if (strcmp(algorithms[i].name, name) == 0)
			return &algorithms[i];
	return NULL;
}

/* Frees every key read from the file. */
static void
free_keys(void)
{
	for (int i = 0; i < nkeys; i++)
		EVP_PKEY_free(keys[i].pkey);
	keys = NULL;
	nkeys = 0;
	if (keys_cxt != NULL)
		MemoryContextReset(keys_cxt);
}

/* Forgets the keys read from the file: they are read again when needed. */
void
jwt_keys_reload(void)
{
	free_keys();
	keys_loaded = false;
}

/* Adds pkey to the set, if it is strong enough; takes it over either way. */
static void
add_key(EVP_PKEY *pkey, const char *kid, const char *alg, const char *file)
{
	int			id = EVP_PKEY_get_base_id(pkey);

	if ((id == EVP_PKEY_RSA || id == EVP_PKEY_RSA_PSS) && EVP_PKEY_get_bits(pkey) < RSA_MIN_BITS)
	{
		ereport(WARNING,
				(errmsg("webgres.jwt_keys_file \"%s\": RSA key%s%s of %d bits is not used",
						file, kid ? " " : "", kid ? kid : "", EVP_PKEY_get_bits(pkey)),
				 errhint("RSA keys must have at least %d bits.", RSA_MIN_BITS)));
		EVP_PKEY_free(pkey);
		return;
	}
	keys = keys == NULL ? MemoryContextAlloc(keys_cxt, sizeof(JwtKey)) :
		repalloc(keys, sizeof(JwtKey) * (nkeys + 1));
	keys[nkeys].kid = kid ? MemoryContextStrdup(keys_cxt, kid) : NULL;
	keys[nkeys].alg = alg ? MemoryContextStrdup(keys_cxt, alg) : NULL;
	keys[nkeys].pkey = pkey;
	nkeys++;
}

/* Builds a public key of type name (RSA, EC) from the parameters in bld. */
static EVP_PKEY *
pkey_from_params(const char *name, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL);
	EVP_PKEY   *pkey = NULL;

	if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
		EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pkey;
}

/* An RSA public key from a JWK's n and e. */
static EVP_PKEY *
rsa_from_jwk(const JwkKey *jwk)
{
	BIGNUM	   *n = BN_bin2bn(jwk->n, (int) jwk->nlen, NULL);
	BIGNUM	   *e = BN_bin2bn(jwk->e, (int) jwk->elen, NULL);
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY   *pkey = NULL;

	if (n != NULL && e != NULL && bld != NULL &&
		OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) &&
		OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
		pkey = pkey_from_params("RSA", bld);
	OSSL_PARAM_BLD_free(bld);
	BN_free(n);
	BN_free(e);
	return pkey;
}

/* An EC public key from a JWK's curve and point. */
static EVP_PKEY *
ec_from_jwk(const JwkKey *jwk)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY   *pkey = NULL;

	if (bld != NULL &&
		OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, jwk->curve, 0) &&
		OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, jwk->point, jwk->pointlen))
		pkey = pkey_from_params("EC", bld);
	OSSL_PARAM_BLD_free(bld);
	return pkey;
}

/* Adds the signing keys of a JWKS document (RFC 7517 section 5), read by parse/jwk.c. */
static void
load_jwks(const char *text, size_t len, const char *file)
{
	const char *error = NULL;
	JwkKey	   *set;
	int			n;

	if (!jwks_parse(text, len, &set, &n, &error))
	{
		ereport(WARNING,
				(errmsg("webgres.jwt_keys_file \"%s\" is not a JWKS document: %s", file, error)));
		return;
	}
	for (int i = 0; i < n; i++)
	{
		const JwkKey *jwk = &set[i];
		EVP_PKEY   *pkey = NULL;

		if (jwk->has_private)
			ereport(WARNING,
					(errmsg("webgres.jwt_keys_file \"%s\": key %d holds a private key", file, i),
					 errdetail("Only its public part is used."),
					 errhint("Publish only public keys in the file: whoever can read a private key can sign tokens.")));
		if (jwk->status == JWK_SKIPPED)
			continue;
		if (jwk->status == JWK_USABLE)
		{
			if (jwk->type == JWK_RSA)
				pkey = rsa_from_jwk(jwk);
			else if (jwk->type == JWK_EC)
				pkey = ec_from_jwk(jwk);
			else
				pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, jwk->point,
												   jwk->pointlen);
		}
		if (pkey == NULL)
		{
			ERR_clear_error();
			ereport(WARNING,
					(errmsg("webgres.jwt_keys_file \"%s\": key %d (kty %s) is malformed and not used",
							file, i, jwk->kty ? jwk->kty : "?")));
			continue;
		}
		add_key(pkey, jwk->kid, jwk->alg, file);
	}
}

/* Adds the public keys of a PEM file. */
static void
load_pem(const char *text, size_t len, const char *file)
{
	BIO		   *bio = BIO_new_mem_buf(text, (int) len);
	EVP_PKEY   *pkey;
	int			before = nkeys;

	while (bio != NULL && (pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL)) != NULL)
		add_key(pkey, NULL, NULL, file);
	ERR_clear_error();
	BIO_free(bio);
	if (nkeys == before)
		ereport(WARNING,
				(errmsg("webgres.jwt_keys_file \"%s\" holds no PEM public key", file),
				 errhint("Use -----BEGIN PUBLIC KEY----- blocks, or a JWKS document.")));
}

/* Notes the digest of the content read; a new one is a new generation. */
static void
note_keys_digest(uint64 digest)
{
	if (digest != keys_digest)
		keys_generation++;
	keys_digest = digest;
}

/* Reads webgres.jwt_keys_file, once after each reload. */
static void
load_keys(void)
{
	const char *file = webgres_jwt_keys_file;
	FILE	   *f;
	char	   *text;
	size_t		len;

	keys_loaded = true;
	if (file == NULL || file[0] == '\0')
	{
		note_keys_digest(0);
		return;
	}
	if (keys_cxt == NULL)
		keys_cxt = AllocSetContextCreate(TopMemoryContext, "webgres JWT keys",
										 ALLOCSET_SMALL_SIZES);
	if ((f = fopen(file, "rb")) == NULL)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not open webgres.jwt_keys_file \"%s\": %m", file)));
		note_keys_digest(0);
		return;
	}
	text = palloc(KEYS_FILE_MAX_BYTES + 1);
	len = fread(text, 1, KEYS_FILE_MAX_BYTES + 1, f);
	fclose(f);
	if (len > KEYS_FILE_MAX_BYTES)
	{
		ereport(WARNING,
				(errmsg("webgres.jwt_keys_file \"%s\" is larger than %d bytes and is not used",
						file, KEYS_FILE_MAX_BYTES)));
		note_keys_digest(0);
		return;
	}
	/* 0 is kept for "no keys"; a file's digest is never taken for it. */
	note_keys_digest(hash_bytes_extended((const unsigned char *) text, (int) len, 0) | 1);
	while (len > 0 && (text[0] == ' ' || text[0] == '\n' || text[0] == '\r' || text[0] == '\t'))
		text++, len--;
	if (len > 0 && text[0] == '{')
		load_jwks(text, len, file);
	else
		load_pem(text, len, file);
}

/*
 * A number that changes when a reload finds the keys file's content changed
 * (not at every reload): tokens verified under an older one may have lost
 * their key.  Reads the file if a reload made it due; call it where
 * allocations are freed (a transaction).
 */
uint64
jwt_keys_generation(void)
{
	if (!keys_loaded)
		load_keys();
	return keys_generation;
}

/* True if key may check alg's signatures: its kind and any alg it names fit. */
static bool
key_fits(const JwtKey *key, const JwsAlgorithm *alg)
{
	int			id = EVP_PKEY_get_base_id(key->pkey);
	char		curve[CURVE_NAME_LEN];

	if (key->alg != NULL && strcmp(key->alg, alg->name) != 0)
		return false;
	switch (alg->family)
	{
		case JWS_RSA_PKCS1:
		case JWS_RSA_PSS:
			return id == EVP_PKEY_RSA || id == EVP_PKEY_RSA_PSS;
		case JWS_ECDSA:
			return id == EVP_PKEY_EC &&
				EVP_PKEY_get_utf8_string_param(key->pkey, OSSL_PKEY_PARAM_GROUP_NAME,
											   curve, sizeof(curve), NULL) &&
				strcmp(curve, alg->curve) == 0;
		case JWS_EDDSA:
			return id == EVP_PKEY_ED25519;
		case JWS_HMAC:
			return false;
	}
	return false;
}

/* True if t's signature checks out with the public key pkey. */
static bool
verify_with(const JwtToken *t, const JwsAlgorithm *alg, EVP_PKEY *pkey)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	const unsigned char *sig = t->signature;
	size_t		siglen = t->siglen;
	unsigned char der[ECDSA_DER_MAX];
	bool		ok = false;

	/* JWS writes r || s; OpenSSL checks DER (parse/jwk.c). */
	if (alg->family == JWS_ECDSA)
	{
		if (!ecdsa_jws_to_der(t->signature, t->siglen, alg->ec_bytes, der, &siglen))
		{
			EVP_MD_CTX_free(ctx);
			return false;
		}
		sig = der;
	}
	if (ctx != NULL &&
		EVP_DigestVerifyInit(ctx, &pctx, alg->md ? alg->md() : NULL, NULL, pkey) > 0 &&
		(alg->family != JWS_RSA_PSS ||
		 (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
		  EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0)))
		ok = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *) t->signing_input,
							  t->signing_input_len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* True if t's HMAC matches the secret's (serve/jwt_secret.h). */
static bool
verify_hmac(const JwtToken *t, const JwsAlgorithm *alg, const char **error)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	const unsigned char *secret;
	size_t		len;

	if (!jwt_secret_get(&secret, &len, error))
	{
		if (*error == NULL)
			*error = "an HS-signed token, but no secret is set (webgres.jwt_secret_file, webgres.jwt_secret)";
		return false;
	}
	if (HMAC(alg->md(), secret, (int) len,
			 (const unsigned char *) t->signing_input, t->signing_input_len,
			 mac, &maclen) == NULL)
	{
		*error = "HMAC failed";
		return false;
	}
	if (t->siglen != maclen || CRYPTO_memcmp(mac, t->signature, maclen) != 0)
	{
		*error = "wrong signature";
		return false;
	}
	return true;
}

/* True if the token's signature is good for its alg with a configured key. */
bool
jwt_keys_verify(const JwtToken *token, const char **error)
{
	const JwsAlgorithm *alg = find_algorithm(token->alg);
	bool		tried = false;

	if (alg == NULL)
	{
		*error = "the token's alg is not accepted";
		return false;
	}
	if (alg->family == JWS_HMAC)
		return verify_hmac(token, alg, error);

	if (!keys_loaded)
		load_keys();
	for (int i = 0; i < nkeys; i++)
	{
		/* A key with a kid checks only tokens naming it; one without, any. */
		if (token->kid != NULL && keys[i].kid != NULL && strcmp(keys[i].kid, token->kid) != 0)
			continue;
		if (!key_fits(&keys[i], alg))
			continue;
		tried = true;
		if (verify_with(token, alg, keys[i].pkey))
			return true;
	}
	*error = tried ? "wrong signature" :
		(token->kid != NULL ? "no key with the token's kid fits its alg" :
		 "no key fits the token's alg");
	return false;
}

/* Signs a claims object's text as HS256 with the secret (serve/jwt_secret.h). */
char *
jwt_keys_sign(const char *claims_json)
{
	static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	const unsigned char *secret;
	size_t		len;
	const char *error;
	char	   *h64;
	char	   *p64;
	char	   *input;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;

	if (!jwt_secret_get(&secret, &len, &error))
	{
		if (error == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no secret to sign JSON Web Tokens with is set"),
					 errhint("Put a secret of at least %d bytes in a file only the server's user can read, set webgres.jwt_secret_file to its path and reload.",
							 JWT_MIN_SECRET_LEN)));
		/* The caller may be any role granted EXECUTE: the details go to the log. */
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the secret to sign JSON Web Tokens with cannot be read"),
				 errdetail_log("%s", error)));
	}
	h64 = jwt_base64url_encode((const unsigned char *) header, strlen(header));
	p64 = jwt_base64url_encode((const unsigned char *) claims_json, strlen(claims_json));
	input = psprintf("%s.%s", h64, p64);
	if (HMAC(EVP_sha256(), secret, (int) len, (const unsigned char *) input,
			 strlen(input), mac, &maclen) == NULL)
		elog(ERROR, "HMAC failed");
	return psprintf("%s.%s", input, jwt_base64url_encode(mac, maclen));
}

/* Whether webgres.jwt_keys_file names a file. */
bool
jwt_keys_file_set(void)
{
	return webgres_jwt_keys_file != NULL && webgres_jwt_keys_file[0] != '\0';
}

/* Defines webgres.jwt_keys_file; from _PG_init. */
void
jwt_keys_define_settings(void)
{
	DefineCustomStringVariable("webgres.jwt_keys_file",
							   "File of public keys for JSON Web Tokens signed with RSA, ECDSA or EdDSA.",
							   "A JWKS document (keys chosen by kid) or PEM public keys; read "
							   "again on reload. Empty accepts no such token.",
							   &webgres_jwt_keys_file,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
}
