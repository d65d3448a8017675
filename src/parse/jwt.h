/*
 * jwt.h
 *		Splits and parses a JSON Web Token (RFC 7519) without verifying it.
 *
 * Pure C on palloc alone, so that the fuzzer builds it outside a backend.
 * The signature is checked by serve/auth.c, which also owns the keys; this
 * file only takes the compact serialization apart, strictly: base64url
 * without padding and with no stray bits, JSON as RFC 8259 has it with no
 * member named twice, and the registered claims with the types RFC 7519
 * gives them.  Anything else is refused with a reason for the log.
 */
#ifndef WEBGRES_JWT_H
#define WEBGRES_JWT_H

/* Tokens longer than this are refused before any decoding. */
#define JWT_MAX_TOKEN_LEN	8192
/* JSON nested deeper than this is refused. */
#define JWT_MAX_DEPTH		32
/* An object or array with more members than this is refused. */
#define JWT_MAX_MEMBERS		256

typedef enum JwtJsonKind
{
	JWT_JSON_NULL,
	JWT_JSON_FALSE,
	JWT_JSON_TRUE,
	JWT_JSON_NUMBER,
	JWT_JSON_STRING,
	JWT_JSON_ARRAY,
	JWT_JSON_OBJECT
} JwtJsonKind;

/* A parsed JSON value. */
typedef struct JwtJson
{
	JwtJsonKind kind;
	double		number;			/* JWT_JSON_NUMBER */
	char	   *str;			/* JWT_JSON_STRING: unescaped UTF-8, NUL-terminated */
	size_t		len;
	int			n;				/* members of an array or object */
	struct JwtJson *items;		/* their values */
	char	  **keys;			/* an object's member names, unescaped */
	size_t	   *keylens;
} JwtJson;

/* A token's registered times (RFC 7519 4.1.4-6), in seconds since 1970. */
typedef struct JwtTimes
{
	bool		has_exp;
	bool		has_nbf;
	bool		has_iat;
	double		exp;
	double		nbf;
	double		iat;
} JwtTimes;

/* A token taken apart; its signature is not yet checked. */
typedef struct JwtToken
{
	const char *signing_input;	/* header "." payload, as sent */
	size_t		signing_input_len;
	unsigned char *signature;
	size_t		siglen;
	char	   *payload_text;	/* the claims as JSON text, NUL-terminated */
	JwtJson    *header;
	JwtJson    *claims;
	const char *alg;			/* header "alg" */
	const char *kid;			/* header "kid", or NULL */
	JwtTimes	times;
} JwtToken;

/*
 * Takes the compact serialization in token[0..len) apart into *out.  False,
 * with *error saying why, for anything malformed; nothing is verified.
 */
extern bool jwt_parse(const char *token, size_t len, JwtToken *out, const char **error);

/*
 * Checks exp, nbf and iat against now (seconds since 1970), each allowed
 * leeway seconds of clock skew.  False, with *error, if the token is not
 * valid at now.
 */
extern bool jwt_check_times(const JwtTimes *times, double now, int leeway,
							const char **error);

/*
 * True if the claims name audience (aud, a string or an array of strings)
 * or issuer (iss); a NULL or empty expectation is always met.
 */
extern bool jwt_has_audience(const JwtToken *token, const char *audience);
extern bool jwt_has_issuer(const JwtToken *token, const char *issuer);

/*
 * The value at path in a claims object, or NULL.  A path is a sequence of
 * .name, ."quoted name" and [index] steps, as PostgREST's jwt-role-claim-key
 * has it; the leading dot may be left out ("role" is ".role").
 */
extern const JwtJson *jwt_claim_at(const JwtJson *claims, const char *path);

/* True if path is a well-formed claim path; else *error says why. */
extern bool jwt_path_valid(const char *path, const char **error);

/*
 * Decodes base64url without padding (RFC 7515 section 2) into a palloc'd
 * buffer; false for any character outside the alphabet, an impossible
 * length or bits left over.
 */
extern bool jwt_base64url_decode(const char *in, size_t len,
								 unsigned char **out, size_t *outlen);

/* Encodes len bytes as base64url without padding, NUL-terminated. */
extern char *jwt_base64url_encode(const unsigned char *in, size_t len);

/* Parses one JSON text; NULL, with *error, if it is malformed. */
extern JwtJson *jwt_json_parse(const char *text, size_t len, const char **error);

#endif							/* WEBGRES_JWT_H */
