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
