-- webgres 1.6 to 1.7
-- Every change here is made in webgres--1.7.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.7'" to load this file. \quit

-- ==== HTML rows (docs/routes.md) ====
-- An aggregate that renders its rows as HTML table rows, each cell escaped,
-- sorted by a key in byte order: a server-side template for a table, in C.

CREATE FUNCTION webgres.html_rows_add(internal, key text, VARIADIC cells "any")
	RETURNS internal
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_html_rows_add';
COMMENT ON FUNCTION webgres.html_rows_add(internal, text, VARIADIC "any") IS
  'The transition function of webgres.html_rows.';

CREATE FUNCTION webgres.html_rows_final(internal) RETURNS text
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_html_rows_final';
COMMENT ON FUNCTION webgres.html_rows_final(internal) IS
  'The final function of webgres.html_rows.';

CREATE AGGREGATE webgres.html_rows(key text, VARIADIC cells "any") (
	SFUNC = webgres.html_rows_add,
	STYPE = internal,
	FINALFUNC = webgres.html_rows_final,
	FINALFUNC_MODIFY = READ_ONLY,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE webgres.html_rows(text, VARIADIC "any") IS
  'The rows as HTML table rows, <tr><td>cell</td>...</tr> each, every cell as text (its output function) with & < > " and '' escaped and NULL empty, sorted by key in byte order (COLLATE "C", code-point order in UTF-8) with NULL keys last and ties in arrival order; NULL when there are no rows.';
