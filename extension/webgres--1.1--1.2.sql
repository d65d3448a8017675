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
-- ==== execution model ====
-- Where each route's handlers run, and how many of its requests may run at
-- once on executors.

ALTER TABLE webgres.routes
	ADD COLUMN mode text NOT NULL DEFAULT 'auto'
		CONSTRAINT routes_mode_check CHECK (mode IN ('auto', 'inline', 'executor', 'stream')),
	ADD COLUMN max_concurrency integer
		CONSTRAINT routes_max_concurrency_check CHECK (max_concurrency > 0);

COMMENT ON COLUMN webgres.routes.mode IS
  'Where the handler runs: auto (on the event loop while it finishes within webgres.inline_budget, else on an executor), inline (always on the event loop) executor (always on an executor) or stream (on an executor, the rows streamed as a JSON array, NDJSON or CSV as they are fetched).';
COMMENT ON COLUMN webgres.routes.max_concurrency IS
  'Most requests of this route running on executors at once, across all workers; NULL for half of webgres.executors (at least 1). More wait, up to webgres.max_queue, then get 503.';

CREATE FUNCTION webgres.route_execution(
	OUT route_id bigint, OUT slow boolean, OUT running integer, OUT queued integer)
	RETURNS SETOF record
	LANGUAGE c VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'webgres_route_execution';

COMMENT ON FUNCTION webgres.route_execution() IS
  'Per route that has run on executors: whether mode auto currently sends it there (slow), and how many of its requests run on executors and wait for one, across all workers.';

-- ==== streaming ====
-- A route in mode 'stream' (allowed by the mode check of the execution
-- model block above) answers with its handler's rows as a document written
-- while they are fetched.  Its extra response headers come from the route.

ALTER TABLE webgres.routes
	ADD COLUMN stream_headers jsonb
		CONSTRAINT routes_stream_headers_check
		CHECK (stream_headers IS NULL OR (jsonb_typeof(stream_headers) = 'object' AND mode = 'stream'));

COMMENT ON COLUMN webgres.routes.stream_headers IS
  'For a route in mode stream: extra response headers, as a JSON object of names to strings (for example {"content-disposition": "attachment; filename=users.csv"}); NULL for none.';
-- ==== routes: search_path, backups and path ownership ====

-- A route records the search_path its handler was checked with, as a
-- function's SET search_path does, and the workers plan and run it with
-- that.  Routes saved before 1.2 get the default search_path.  A new row
-- without one gets the saving session's (the route_check trigger fills it,
-- since a column default could not tell a restore from an INSERT).
ALTER TABLE webgres.routes ADD COLUMN search_path text NOT NULL DEFAULT '"$user", public';
ALTER TABLE webgres.routes ALTER COLUMN search_path DROP DEFAULT;
COMMENT ON COLUMN webgres.routes.search_path IS
  'search_path the handler is checked and run with; set from the saving session''s search_path when not given (and when an UPDATE changes the handler but not this).';

-- Restored routes keep their ids, so the id sequence must follow them.
SELECT pg_catalog.pg_extension_config_dump('webgres.routes_id_seq', '');

CREATE FUNCTION webgres.paths_overlap(a text, b text) RETURNS boolean
	LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_paths_overlap';
COMMENT ON FUNCTION webgres.paths_overlap(text, text) IS
  'True if some request path matches both route path patterns; routes of two roles may not overlap.';
