/*
 * jwt_sign.c
 *		webgres.jwt_sign(claims, ttl): issues a JSON Web Token.
 *
 * For login routes: the handler checks a password and answers the token in
 * a cookie or its body.  It signs with the secret (HS256, serve/jwt_secret.h),
 * which the caller never sees; EXECUTE is revoked from PUBLIC, so only roles a
 * superuser grants it to can issue tokens.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "serve/jwt_keys.h"

PG_FUNCTION_INFO_V1(webgres_jwt_sign);

/* A token's lifetime when the caller gives neither a ttl nor an exp: an hour. */
#define JWT_DEFAULT_TTL_SECS 3600

/* Seconds since 1970 of a timestamptz. */
static double
unix_seconds(TimestampTz t)
{
	return (double) (t - SetEpochTimestamp()) / USECS_PER_SEC;
}

/* True if the claims object has a member named name. */
static bool
has_claim(Jsonb *claims, const char *name)
{
	JsonbValue	key;

	key.type = jbvString;
	key.val.string.val = (char *) name;
	key.val.string.len = strlen(name);
	return findJsonbValueFromContainer(&claims->root, JB_FOBJECT, &key) != NULL;
}

/*
 * webgres.jwt_sign(claims jsonb, ttl interval DEFAULT NULL) returns text:
 * the claims signed as HS256, with iat now and exp now + ttl.  Without a
 * ttl the claims' own exp stands, and claims without one get
 * JWT_DEFAULT_TTL_SECS: a token that never expires can only be revoked by
 * changing the secret, so none is issued unless the caller writes its exp.
 */
Datum
webgres_jwt_sign(PG_FUNCTION_ARGS)
{
	Jsonb	   *claims;
	TimestampTz now;
	TimestampTz until;
	char	   *times;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	claims = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_OBJECT(claims) || JB_ROOT_IS_SCALAR(claims))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the claims of a JSON Web Token must be a JSON object")));
	if (PG_ARGISNULL(1) && has_claim(claims, "exp"))
		PG_RETURN_TEXT_P(cstring_to_text(jwt_keys_sign(JsonbToCString(NULL, &claims->root,
																	   VARSIZE(claims)))));
	now = GetCurrentTimestamp();
	if (PG_ARGISNULL(1))
		until = TimestampTzPlusMilliseconds(now, (int64) JWT_DEFAULT_TTL_SECS * 1000);
	else
		until = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														TimestampTzGetDatum(now),
														PG_GETARG_DATUM(1)));
	if (until <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the lifetime of a JSON Web Token must be positive")));
	times = psprintf("{\"iat\": %.0f, \"exp\": %.0f}",
					 floor(unix_seconds(now)), floor(unix_seconds(until)));
	claims = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(claims),
												DirectFunctionCall1(jsonb_in,
																	CStringGetDatum(times))));
	PG_RETURN_TEXT_P(cstring_to_text(jwt_keys_sign(JsonbToCString(NULL, &claims->root,
																   VARSIZE(claims)))));
}
