-- webgres 1.1 to 1.2

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.2'" to load this file. \quit

-- ==== connection capacity ====
-- webgres.workers shows how many client connections each worker holds.

DROP VIEW webgres.workers;
DROP FUNCTION webgres.worker_stats();

CREATE FUNCTION webgres.worker_stats(
	OUT worker integer, OUT pid integer, OUT started timestamptz,
	OUT requests bigint, OUT responses_2xx bigint, OUT responses_3xx bigint,
	OUT responses_4xx bigint, OUT responses_5xx bigint, OUT from_memory bigint,
	OUT handler_errors bigint, OUT route_loads bigint, OUT connections integer)
	RETURNS SETOF record
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_worker_stats';

CREATE VIEW webgres.workers AS SELECT * FROM webgres.worker_stats();
COMMENT ON VIEW webgres.workers IS
  'One row per running HTTP worker: requests and responses by status class since it started, requests answered from memory, requests that ended in an SQL error, route table loads, and the client connections it holds open now.';
REVOKE ALL ON FUNCTION webgres.worker_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION webgres.worker_stats() TO pg_monitor;
REVOKE ALL ON webgres.workers FROM PUBLIC;
GRANT SELECT ON webgres.workers TO pg_monitor;
