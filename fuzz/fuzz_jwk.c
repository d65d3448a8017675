/*
 * Fuzzes the JSON Web Key set reader and the ECDSA signature conversion
 * (src/parse/jwk.c).  The whole input is read as a JWKS document: every
 * key called usable has the parts its type needs, of the sizes its curve
 * gives.  It is also read as a JWS ECDSA signature, its first byte choosing
 * the curve: the DER made of it must be, byte for byte, what OpenSSL's own
 * encoder makes of the same r and s, and must decode back to them.
 */
#include <assert.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>

#include "postgres.h"
#include "parse/jwk.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Every usable key holds together. */
static void
check_jwks(const char *text, size_t len)
{
	JwkKey	   *keys;
	int			n;
	const char *error = NULL;

	if (!jwks_parse(text, len, &keys, &n, &error))
	{
		assert(error != NULL);
		return;
	}
	assert(n >= 0 && n <= JWT_MAX_MEMBERS);
	for (int i = 0; i < n; i++)
	{
		const JwkKey *k = &keys[i];

		assert(k->status == JWK_USABLE || k->status == JWK_SKIPPED || k->status == JWK_MALFORMED);
		if (k->status != JWK_USABLE)
			continue;
		assert(k->kty != NULL);
		switch (k->type)
		{
			case JWK_RSA:
				assert(k->n != NULL && k->nlen > 0 && k->e != NULL && k->elen > 0);
				break;
			case JWK_EC:
				assert(k->curve != NULL && k->point[0] == 0x04);
				assert(k->pointlen == 65 || k->pointlen == 97 || k->pointlen == 133);
				break;
			case JWK_OKP:
				assert(k->point != NULL && k->pointlen > 0);
				break;
		}
	}
}

/* Our DER of r || s is OpenSSL's, and decodes back to r and s. */
static void
check_ecdsa(const unsigned char *data, size_t size)
{
	static const size_t halves[] = {32, 48, 66};
	size_t		half;
	unsigned char der[ECDSA_DER_MAX];
	size_t		derlen;
	ECDSA_SIG  *sig;
	BIGNUM	   *r;
	BIGNUM	   *s;
	unsigned char *theirs = NULL;
	int			theirlen;
	const unsigned char *p;
	const BIGNUM *r2;
	const BIGNUM *s2;

	if (size < 1)
		return;
	half = halves[data[0] % 3];
	data++, size--;
	if (!ecdsa_jws_to_der(data, size, half, der, &derlen))
	{
		assert(size != 2 * half);
		return;
	}
	assert(derlen <= ECDSA_DER_MAX);
	r = BN_bin2bn(data, (int) half, NULL);
	s = BN_bin2bn(data + half, (int) half, NULL);
	sig = ECDSA_SIG_new();
	assert(r != NULL && s != NULL && sig != NULL && ECDSA_SIG_set0(sig, r, s));
	theirlen = i2d_ECDSA_SIG(sig, &theirs);
	assert(theirlen > 0 && (size_t) theirlen == derlen && memcmp(theirs, der, derlen) == 0);
	OPENSSL_free(theirs);
	ECDSA_SIG_free(sig);

	p = der;
	sig = d2i_ECDSA_SIG(NULL, &p, (long) derlen);
	assert(sig != NULL && p == der + derlen);
	ECDSA_SIG_get0(sig, &r2, &s2);
	r = BN_bin2bn(data, (int) half, NULL);
	s = BN_bin2bn(data + half, (int) half, NULL);
	assert(BN_cmp(r, r2) == 0 && BN_cmp(s, s2) == 0);
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(sig);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* An exact-size copy, so that ASan sees any read past the end. */
	char	   *text = palloc(size ? size : 1);

	memcpy(text, data, size);
	check_jwks(text, size);
	check_ecdsa(data, size);
	shim_reset();
	return 0;
}
