-- webgres 1.9 to 1.10
-- Every change here is made in webgres--1.10.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.10'" to load this file. \quit

-- ==== every row of a query, and HTML rows of an array (docs/routes.md) ====
-- select_rows is select_row keeping every row, as an array; html_rows_of
-- renders such an array as html_rows renders its rows.  Together they read
-- and render a table in a handler that is one row of expressions.

CREATE FUNCTION webgres.select_rows(type anyelement, query text)
	RETURNS anyarray
	LANGUAGE c STABLE
	AS 'MODULE_PATHNAME', 'webgres_select_rows';
CREATE FUNCTION webgres.select_rows(type anyelement, query text, VARIADIC args "any")
	RETURNS anyarray
	LANGUAGE c STABLE
	AS 'MODULE_PATHNAME', 'webgres_select_rows';
COMMENT ON FUNCTION webgres.select_rows(anyelement, text) IS
  'Every row of a read-only query (one SELECT), run as a statement of its own with its plan kept for the backend, as an array of the first argument''s type (a row type, or the type of its one column); empty when it returns no row.';
COMMENT ON FUNCTION webgres.select_rows(anyelement, text, VARIADIC "any") IS
  'Every row of a read-only query (one SELECT) with parameters $1, $2... taken from args, run as a statement of its own with its plan kept for the backend, as an array of the first argument''s type (a row type, or the type of its one column); empty when it returns no row.';

CREATE FUNCTION webgres.html_rows_of(rows anyarray, key text, VARIADIC columns text[])
	RETURNS text
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_html_rows_of';
COMMENT ON FUNCTION webgres.html_rows_of(anyarray, text, VARIADIC text[]) IS
  'HTML table rows, one for each element of an array of a row type, the named columns as cells rendered as webgres.html_rows renders them, ordered by the text of the column key names in byte order (NULL keys last, ties and a NULL key in the array''s order); NULL for a NULL array.';
