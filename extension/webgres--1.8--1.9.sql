-- webgres 1.8 to 1.9
-- Every change here is made in webgres--1.9.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.9'" to load this file. \quit

-- ==== a query's first row (docs/routes.md) ====
-- A read-only query run as a statement of its own, its plan kept for the
-- backend, its first row returned as a value of the type asked for.

CREATE FUNCTION webgres.select_row(type anyelement, query text)
	RETURNS anyelement
	LANGUAGE c STABLE
	AS 'MODULE_PATHNAME', 'webgres_select_row';
CREATE FUNCTION webgres.select_row(type anyelement, query text, VARIADIC args "any")
	RETURNS anyelement
	LANGUAGE c STABLE
	AS 'MODULE_PATHNAME', 'webgres_select_row';
COMMENT ON FUNCTION webgres.select_row(anyelement, text) IS
  'The first row of a read-only query (one SELECT), run as a statement of its own with its plan kept for the backend, as a value of the first argument''s type (a row type, or the type of its one column); NULL when it returns no row.';
COMMENT ON FUNCTION webgres.select_row(anyelement, text, VARIADIC "any") IS
  'The first row of a read-only query (one SELECT) with parameters $1, $2... taken from args, run as a statement of its own with its plan kept for the backend, as a value of the first argument''s type (a row type, or the type of its one column); NULL when it returns no row.';
