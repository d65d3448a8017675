-- webgres 1.4 to 1.5
-- Every change here is made in webgres--1.5.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.5'" to load this file. \quit

-- ==== compression and credentials ====
-- A response to a request with credentials may hold a secret beside text
-- the request chose; compressed, its length leaks the secret (BREACH).
-- compress NULL, the new default, compresses such responses no more; true
-- is the route's opt-in (docs/compression.md#compression-and-secrets).
-- Routes that had the old default, true, take the new one: what they
-- answered to credentialed requests is no longer compressed until their
-- owners opt in again.
ALTER TABLE webgres.routes ALTER COLUMN compress DROP NOT NULL, ALTER COLUMN compress DROP DEFAULT;
UPDATE webgres.routes SET compress = NULL WHERE compress;
COMMENT ON COLUMN webgres.routes.compress IS
  'With webgres.compress on: NULL compresses responses unless the request carries credentials (Authorization or Cookie), true compresses those too (safe only if no response holds a secret beside text an attacker can choose: BREACH), false never compresses.';

-- ==== event streams: notifications whose sender a stream can trust ====
-- Signed with a key that lives only in shared memory (events/notify_sign.c);
-- a stream whose handler returns senders takes only these, from those roles.

CREATE FUNCTION webgres.notify(channel text, payload text) RETURNS void
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_notify';

COMMENT ON FUNCTION webgres.notify(text, text) IS
  'NOTIFY channel with payload, signed as the current user: an event stream whose handler returns a senders column delivers only notifications signed by one of those roles. Any role may call it; it can sign only as itself.';

-- ==== tokens: a lifetime by default ====
COMMENT ON FUNCTION webgres.jwt_sign(jsonb, interval) IS
  'A JSON Web Token of the claims, signed HS256 with the secret of webgres.jwt_secret_file or webgres.jwt_secret; iat is now and exp now + ttl; without a ttl, the claims'' own exp stands, or exp is an hour from now. Only roles granted EXECUTE by a superuser may call it.';
