/*
 * Fuzzes the JSON Web Token parser (src/parse/jwt.c): the input is a claim
 * path, a newline and a token.  Parsing must never crash or read outside
 * the input; what it accepts must hold together: the signing input is the
 * token up to its second dot, the claims text parses again to an object,
 * and base64url decoding then encoding gives back what was decoded.  The
 * whole input is also parsed as JSON and as base64url on its own.
 */
#include <assert.h>

#include "postgres.h"
#include "parse/jwt.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Decoding then encoding base64url gives the input back, when it decodes. */
static void
check_base64url(const char *in, size_t len)
{
	unsigned char *raw;
	size_t		rawlen;

	if (jwt_base64url_decode(in, len, &raw, &rawlen))
	{
		char	   *again = jwt_base64url_encode(raw, rawlen);

		assert(strlen(again) == len && memcmp(again, in, len) == 0);
	}
}

/* What jwt_parse accepted holds together. */
static void
check_token(const char *path, const char *token, size_t len)
{
	JwtToken	t;
	const char *error = NULL;

	if (!jwt_parse(token, len, &t, &error))
	{
		assert(error != NULL);
		return;
	}
	assert(len <= JWT_MAX_TOKEN_LEN);
	assert(t.signing_input == token && t.signing_input_len < len);
	assert(token[t.signing_input_len] == '.');
	assert(t.alg != NULL && t.claims->kind == JWT_JSON_OBJECT);
	assert(jwt_json_parse(t.payload_text, strlen(t.payload_text), &error) != NULL);
	(void) jwt_check_times(&t.times, 1700000000.0, 30, &error);
	(void) jwt_has_audience(&t, "webgres");
	(void) jwt_has_issuer(&t, "webgres");
	if (jwt_path_valid(path, &error))
	{
		const JwtJson *v = jwt_claim_at(t.claims, path);

		assert(v == NULL || v->kind <= JWT_JSON_OBJECT);
	}
	else
		assert(jwt_claim_at(t.claims, path) == NULL);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *in = (const char *) data;
	const char *nl = memchr(in, '\n', size);
	const char *error;

	if (nl != NULL && memchr(in, '\0', nl - in) == NULL)
	{
		char	   *path = pnstrdup(in, nl - in);

		check_token(path, nl + 1, size - (nl - in) - 1);
	}
	(void) jwt_json_parse(in, size, &error);
	check_base64url(in, size);
	shim_reset();
	return 0;
}
