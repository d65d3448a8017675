-- webgres 1.3 to 1.4
-- Every change here is made in webgres--1.4.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.4'" to load this file. \quit

-- ==== observability: per-route statistics ====
-- Counted in shared memory by the workers and executors (route_stats.c);
-- the view names each route from webgres.routes.

CREATE FUNCTION webgres.route_stats_raw(
	OUT route_id bigint, OUT requests bigint,
	OUT responses_1xx bigint, OUT responses_2xx bigint, OUT responses_3xx bigint,
	OUT responses_4xx bigint, OUT responses_5xx bigint,
	OUT handler_errors bigint, OUT timeouts bigint, OUT queue_full bigint,
	OUT bytes_out bigint, OUT total_time_ms double precision,
	OUT p50_ms double precision, OUT p90_ms double precision, OUT p99_ms double precision,
	OUT latency_buckets bigint[])
	RETURNS SETOF record
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_stats';

COMMENT ON FUNCTION webgres.route_stats_raw() IS
  'Per route counted since the last reset: requests, responses by status class, handler errors, timeouts (504), queue-full refusals, body bytes sent, total and quantile latencies, and the latency histogram (counts per bucket of webgres.route_latency_bounds(), then one past the last bound).';

CREATE FUNCTION webgres.route_latency_bounds() RETURNS double precision[]
	LANGUAGE c IMMUTABLE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_latency_bounds';

COMMENT ON FUNCTION webgres.route_latency_bounds() IS
  'Upper bounds, in milliseconds, of the latency histogram buckets of webgres.route_stats; a last bucket takes what is above them.';

CREATE FUNCTION webgres.route_latency_quantile(route bigint, q double precision)
	RETURNS double precision
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_latency_quantile';

COMMENT ON FUNCTION webgres.route_latency_quantile(bigint, double precision) IS
  'The q-quantile (0 to 1) of the route''s latency in milliseconds, estimated from its histogram as Prometheus'' histogram_quantile does; NULL before its first request.';

CREATE FUNCTION webgres.route_stats_reset(route bigint DEFAULT NULL) RETURNS void
	LANGUAGE c VOLATILE
	AS 'MODULE_PATHNAME', 'webgres_route_stats_reset';

COMMENT ON FUNCTION webgres.route_stats_reset(bigint) IS
  'Sets the route''s counters to zero; with no route, forgets every route''s counters. Superusers only unless granted.';

CREATE VIEW webgres.route_stats AS
	SELECT s.route_id, r.method, r.path, r.owner,
		   s.requests, s.responses_1xx, s.responses_2xx, s.responses_3xx,
		   s.responses_4xx, s.responses_5xx, s.handler_errors, s.timeouts,
		   s.queue_full, s.bytes_out, s.total_time_ms,
		   s.p50_ms, s.p90_ms, s.p99_ms, s.latency_buckets
	FROM webgres.route_stats_raw() s
		LEFT JOIN webgres.routes r ON r.id = s.route_id;

COMMENT ON VIEW webgres.route_stats IS
  'Per route: requests, responses by status class, handler errors, timeouts, queue-full refusals, bytes out and latency (total, p50, p90, p99 in milliseconds, and the histogram whose bucket bounds webgres.route_latency_bounds() gives). Latency runs from when the worker began routing the request to when its response was handed to the connection (a stream: to its end). Method, path and owner are NULL for a deleted route.';

REVOKE ALL ON FUNCTION webgres.route_stats_raw() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.route_stats_raw() TO pg_monitor;
REVOKE ALL ON FUNCTION webgres.route_latency_quantile(bigint, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.route_latency_quantile(bigint, double precision) TO pg_monitor;
REVOKE ALL ON FUNCTION webgres.route_stats_reset(bigint) FROM PUBLIC;
REVOKE ALL ON webgres.route_stats FROM PUBLIC;
GRANT SELECT ON webgres.route_stats TO pg_monitor;
-- The request relation gained a column: tls, whether the client's connection is TLS.
COMMENT ON COLUMN webgres.routes.handler IS
  'One SQL statement that may read the relation request(method, path, params, query_string, query, headers, body, tls) and returns columns status, content_type, headers and body.';
