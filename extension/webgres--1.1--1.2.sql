-- webgres 1.1 to 1.2

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.2'" to load this file. \quit

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
