-- webgres 1.5 to 1.6
-- Every change here is made in webgres--1.6.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.6'" to load this file. \quit

-- ==== uploads and bulk ingest (docs/uploads.md) ====
-- Form bodies by their content type: url-encoded or multipart/form-data
-- fields as jsonb, and a multipart body's files as rows with their content
-- as bytea.

CREATE FUNCTION webgres.body_form(body bytea, body_type text) RETURNS jsonb
	LANGUAGE c IMMUTABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_body_form_typed';
COMMENT ON FUNCTION webgres.body_form(bytea, text) IS
  'A form body''s fields as a jsonb object (a repeated name''s values as an array): application/x-www-form-urlencoded (also when body_type, the request''s Content-Type, is NULL) or the parts of a multipart/form-data body that carry no filename. A malformed body is a 400 saying what is wrong; another content type a 415.';

CREATE FUNCTION webgres.body_files(body bytea, body_type text,
	OUT field text, OUT filename text, OUT content_type text, OUT size bigint, OUT content bytea)
	RETURNS SETOF record
	LANGUAGE c IMMUTABLE PARALLEL SAFE ROWS 4
	AS 'MODULE_PATHNAME', 'webgres_body_files';
COMMENT ON FUNCTION webgres.body_files(bytea, text) IS
  'The files of a multipart/form-data body, one row per part with a filename, in order: its field name, its filename (filename* when given, decoded; data, never a path), its Content-Type (NULL when the part names none), its size in bytes and its content. A url-encoded body has none.';

CREATE FUNCTION webgres.ingest(target regclass, body bytea, body_type text) RETURNS bigint
	LANGUAGE c VOLATILE
	AS 'MODULE_PATHNAME', 'webgres_ingest';
COMMENT ON FUNCTION webgres.ingest(regclass, bytea, text) IS
  'Inserts the rows of a request body into target as the calling role (privileges, constraints, triggers and row-level security apply) and returns how many were inserted. body_type chooses the format: text/csv (the first record names the columns unless header=absent), application/x-ndjson (an object a line) or application/json (an array of objects; the first object''s keys choose the columns). A row that does not convert or insert is an error naming its line (or element) and column; the request''s transaction then keeps none.';
