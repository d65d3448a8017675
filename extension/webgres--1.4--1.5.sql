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

-- ==== rate limits (docs/rate-limits.md) ====
-- A route's owner limits the route's requests: a rate in requests a second
-- (NULL: no limit of the route's own), a burst over it, and whose budget a
-- request counts against.  Row-level security on webgres.routes already
-- lets only the owner (or a superuser) set them.

ALTER TABLE webgres.routes ADD COLUMN rate_limit double precision
	CHECK (rate_limit >= 0.001 AND rate_limit <= 1000000);
ALTER TABLE webgres.routes ADD COLUMN rate_burst integer NOT NULL DEFAULT 0
	CHECK (rate_burst >= 0 AND rate_burst <= 1000000);
ALTER TABLE webgres.routes ADD COLUMN rate_key text NOT NULL DEFAULT 'address'
	CHECK (rate_key IN ('address', 'route', 'role') OR rate_key ~ '^claim:.+$');
COMMENT ON COLUMN webgres.routes.rate_limit IS
  'Requests a second the route allows each client (see rate_key), as nginx''s limit_req rate; NULL: no limit of its own. Over it: 429 with Retry-After.';
COMMENT ON COLUMN webgres.routes.rate_burst IS
  'Requests over rate_limit a client may make at once, served without delay (nginx''s burst with nodelay).';
COMMENT ON COLUMN webgres.routes.rate_key IS
  'Whose budget a request counts against: address (the client''s IPv4 address, or its IPv6 /64), route (one budget for everyone), role (the token''s role) or claim:PATH (a claim of the token, e.g. claim:sub); without a token, by address.';

-- The per-route count of requests refused 429 by a rate limit.
DROP VIEW webgres.route_stats;
DROP FUNCTION webgres.route_stats_raw();

CREATE FUNCTION webgres.route_stats_raw(
	OUT route_id bigint, OUT requests bigint,
	OUT responses_1xx bigint, OUT responses_2xx bigint, OUT responses_3xx bigint,
	OUT responses_4xx bigint, OUT responses_5xx bigint,
	OUT handler_errors bigint, OUT timeouts bigint, OUT queue_full bigint,
	OUT bytes_out bigint, OUT total_time_ms double precision,
	OUT p50_ms double precision, OUT p90_ms double precision, OUT p99_ms double precision,
	OUT latency_buckets bigint[], OUT rate_limited bigint)
	RETURNS SETOF record
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_stats';

COMMENT ON FUNCTION webgres.route_stats_raw() IS
  'Per route counted since the last reset: requests, responses by status class, handler errors, timeouts (504), queue-full refusals, body bytes sent, total and quantile latencies, the latency histogram (counts per bucket of webgres.route_latency_bounds(), then one past the last bound), and requests refused 429 by a rate limit.';

CREATE VIEW webgres.route_stats AS
	SELECT s.route_id, r.method, r.path, r.owner,
		   s.requests, s.responses_1xx, s.responses_2xx, s.responses_3xx,
		   s.responses_4xx, s.responses_5xx, s.handler_errors, s.timeouts,
		   s.queue_full, s.rate_limited, s.bytes_out, s.total_time_ms,
		   s.p50_ms, s.p90_ms, s.p99_ms, s.latency_buckets
	FROM webgres.route_stats_raw() s
		LEFT JOIN webgres.routes r ON r.id = s.route_id;

COMMENT ON VIEW webgres.route_stats IS
  'Per route: requests, responses by status class, handler errors, timeouts, queue-full refusals, rate-limit refusals (429), bytes out and latency (total, p50, p90, p99 in milliseconds, and the histogram whose bucket bounds webgres.route_latency_bounds() gives). Latency runs from when the worker began routing the request to when its response was handed to the connection (a stream: to its end). Method, path and owner are NULL for a deleted route.';

REVOKE ALL ON FUNCTION webgres.route_stats_raw() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.route_stats_raw() TO pg_monitor;
REVOKE ALL ON webgres.route_stats FROM PUBLIC;
GRANT SELECT ON webgres.route_stats TO pg_monitor;
