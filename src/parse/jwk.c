/*
 * jwk.c
 *		Reads a JSON Web Key set into bytes, and ECDSA signatures into DER.
 *
 * The key file is the operator's, but its contents usually come from an
 * identity provider's published set, and a token's signature comes from
 * anyone: both are read here, apart from OpenSSL and Postgres, so that a
 * fuzzer can reach them.  The JSON itself is parse/jwt.c's strict parser.
 */
#include "postgres.h"

#include "parse/jwk.h"

/* A member's string value, or NULL. */
static const char *
member_string(const JwtJson *obj, const char *name)
{
	for (int i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], name) == 0 && obj->items[i].kind == JWT_JSON_STRING)
			return obj->items[i].str;
	return NULL;
}

/* True if the object has a member of that name, of any kind. */
static bool
has_member(const JwtJson *obj, const char *name)
{
	for (int i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], name) == 0)
			return true;
	return false;
}

/* A member's base64url value decoded; false if missing, malformed or empty. */
static bool
member_bytes(const JwtJson *obj, const char *name, unsigned char **out, size_t *len)
{
	const char *s = member_string(obj, name);

	return s != NULL && jwt_base64url_decode(s, strlen(s), out, len) && *len > 0;
}

/* Reads an RSA key's n and e; false if either is missing or malformed. */
static bool
read_rsa(const JwtJson *jwk, JwkKey *key)
{
	key->type = JWK_RSA;
	return member_bytes(jwk, "n", &key->n, &key->nlen) &&
		member_bytes(jwk, "e", &key->e, &key->elen);
}

/* Reads an EC key's curve and point; false for an unknown curve or wrong sizes. */
static bool
read_ec(const JwtJson *jwk, JwkKey *key)
{
	const char *crv = member_string(jwk, "crv");
	unsigned char *x;
	unsigned char *y;
	size_t		xlen;
	size_t		ylen;
	size_t		size;

	key->type = JWK_EC;
	if (crv == NULL)
		return false;
	if (strcmp(crv, "P-256") == 0)
		key->curve = "prime256v1", size = 32;
	else if (strcmp(crv, "P-384") == 0)
		key->curve = "secp384r1", size = 48;
	else if (strcmp(crv, "P-521") == 0)
		key->curve = "secp521r1", size = 66;
	else
		return false;
	if (!member_bytes(jwk, "x", &x, &xlen) || !member_bytes(jwk, "y", &y, &ylen) ||
		xlen != size || ylen != size)
		return false;
	key->pointlen = 1 + 2 * size;
	key->point = palloc(key->pointlen);
	key->point[0] = 0x04;
	memcpy(key->point + 1, x, size);
	memcpy(key->point + 1 + size, y, size);
	return true;
}

/* Reads an Ed25519 key's x; false for another curve. */
static bool
read_okp(const JwtJson *jwk, JwkKey *key)
{
	const char *crv = member_string(jwk, "crv");

	key->type = JWK_OKP;
	return crv != NULL && strcmp(crv, "Ed25519") == 0 &&
		member_bytes(jwk, "x", &key->point, &key->pointlen);
}

/* Reads one member of the "keys" array into key. */
static void
read_key(const JwtJson *jwk, JwkKey *key)
{
	const char *use;
	bool		ok;

	memset(key, 0, sizeof(*key));
	key->status = JWK_SKIPPED;
	if (jwk->kind != JWT_JSON_OBJECT)
	{
		key->status = JWK_MALFORMED;
		return;
	}
	key->kty = member_string(jwk, "kty");
	key->kid = member_string(jwk, "kid");
	key->alg = member_string(jwk, "alg");
	/* RFC 7518 6.2.2 and 6.3.2, 8037 2: the private parameters. */
	key->has_private = has_member(jwk, "d") || has_member(jwk, "p") || has_member(jwk, "q");
	/* A key meant for encryption is not one to trust for signatures. */
	if (key->kty == NULL ||
		((use = member_string(jwk, "use")) != NULL && strcmp(use, "sig") != 0))
		return;
	if (strcmp(key->kty, "RSA") == 0)
		ok = read_rsa(jwk, key);
	else if (strcmp(key->kty, "EC") == 0)
		ok = read_ec(jwk, key);
	else if (strcmp(key->kty, "OKP") == 0)
		ok = read_okp(jwk, key);
	else
		return;
	key->status = ok ? JWK_USABLE : JWK_MALFORMED;
}

/* Reads a JWKS document's "keys" array; false if there is none. */
bool
jwks_parse(const char *text, size_t len, JwkKey **keys, int *nkeys, const char **error)
{
	JwtJson    *doc = jwt_json_parse(text, len, error);
	const JwtJson *set = NULL;

	if (doc == NULL)
		return false;
	if (doc->kind == JWT_JSON_OBJECT)
		for (int i = 0; i < doc->n; i++)
			if (strcmp(doc->keys[i], "keys") == 0 && doc->items[i].kind == JWT_JSON_ARRAY)
				set = &doc->items[i];
	if (set == NULL)
	{
		*error = "it has no \"keys\" array";
		return false;
	}
	*nkeys = set->n;
	*keys = palloc(sizeof(JwkKey) * (set->n > 0 ? set->n : 1));
	for (int i = 0; i < set->n; i++)
		read_key(&set->items[i], &(*keys)[i]);
	return true;
}

/*
 * Appends one DER INTEGER of the unsigned big-endian number in[0..len):
 * leading zero bytes dropped (one kept for zero), and a zero byte put in
 * front when the top bit is set, so that it reads as positive (X.690 8.3).
 */
static size_t
der_integer(const unsigned char *in, size_t len, unsigned char *out)
{
	size_t		n = 0;

	while (len > 1 && in[0] == 0)
		in++, len--;
	out[n++] = 0x02;
	out[n++] = (unsigned char) (len + (in[0] & 0x80 ? 1 : 0));
	if (in[0] & 0x80)
		out[n++] = 0;
	memcpy(out + n, in, len);
	return n + len;
}

/* r || s as DER: SEQUENCE { INTEGER r, INTEGER s } (RFC 3279 2.2.3). */
bool
ecdsa_jws_to_der(const unsigned char *sig, size_t siglen, size_t half,
				 unsigned char *out, size_t *outlen)
{
	unsigned char body[ECDSA_DER_MAX];
	size_t		bodylen;
	size_t		n = 0;

	if (half == 0 || half > JWS_EC_MAX_HALF || siglen != 2 * half)
		return false;
	bodylen = der_integer(sig, half, body);
	bodylen += der_integer(sig + half, half, body + bodylen);
	out[n++] = 0x30;
	/* Short form below 128 bytes, else one length byte (X.690 8.1.3). */
	if (bodylen >= 0x80)
		out[n++] = 0x81;
	out[n++] = (unsigned char) bodylen;
	memcpy(out + n, body, bodylen);
	*outlen = n + bodylen;
	return true;
}
