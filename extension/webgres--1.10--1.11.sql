-- webgres 1.10 to 1.11
-- Every change here is made in webgres--1.11.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.11'" to load this file. \quit

-- ==== a query run for each element, and JSON objects of an array (docs/routes.md) ====
-- select_each runs a query once for each element of an array, each run a
-- statement of its own; json_rows_of writes an array of rows as a JSON
-- array of objects, json_row_of one row as an object.  Together they read rows one statement each and write
-- them in a handler that is one row of expressions.

CREATE FUNCTION webgres.select_each(type anyelement, query text, args anycompatiblearray)
	RETURNS anyarray
	LANGUAGE c STABLE
	AS 'MODULE_PATHNAME', 'webgres_select_each';
COMMENT ON FUNCTION webgres.select_each(anyelement, text, anycompatiblearray) IS
  'A read-only query (one SELECT) run once for each element of args, that element as its parameter $1, each run a statement of its own with its plan kept for the backend; element i of the result is run i''s first row as a value of the first argument''s type (a row type, or the type of its one column), NULL when that run returned no row.';

CREATE FUNCTION webgres.json_rows_of(rows anyarray, VARIADIC keys_and_columns text[])
	RETURNS json
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_json_rows_of';
COMMENT ON FUNCTION webgres.json_rows_of(anyarray, VARIADIC text[]) IS
  'A JSON array of one object for each element of an array of a row type, in its order: for each pair of a key and a column name a member, the column''s value written as webgres.json_build writes it; a NULL element is null, NULL for a NULL array.';

CREATE FUNCTION webgres.json_row_of(item anyelement, VARIADIC keys_and_columns text[])
	RETURNS json
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_json_row_of';
COMMENT ON FUNCTION webgres.json_row_of(anyelement, VARIADIC text[]) IS
  'The JSON object of one row of a named row type: for each pair of a key and a column name a member, the column''s value written as webgres.json_build writes it; NULL for a NULL row.';
