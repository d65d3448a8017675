-- webgres.select_row: a read-only query's first row, as a value of the type
-- the first argument names, run as a statement of its own; select_rows:
-- every row, as an array; select_each: the query run once for each element
-- of an array, the first row of each run in an array.
CREATE EXTENSION IF NOT EXISTS webgres;

CREATE TABLE sr_item (id integer PRIMARY KEY, name text, price numeric);
INSERT INTO sr_item VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 3);

-- A whole row of a table's type, by a parameter.
SELECT webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', 2);
SELECT (webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', 1)).name;
-- One column of the type asked for: a row value, or a scalar.
SELECT webgres.select_row(NULL::sr_item, 'SELECT i FROM sr_item AS i WHERE id = $1', 3);
SELECT webgres.select_row(NULL::text, 'SELECT name FROM sr_item WHERE id = $1', 3);
-- A column that is NULL, and a query with no row, both give NULL.
SELECT webgres.select_row(NULL::numeric, 'SELECT price FROM sr_item WHERE id = $1', 2) IS NULL AS null_column;
SELECT webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', 42) IS NULL AS no_row;
-- Only the first row is returned.
SELECT webgres.select_row(NULL::integer, 'SELECT id FROM sr_item ORDER BY id DESC');
-- No parameters; several of different types; a NULL one; an untyped literal
-- is text; VARIADIC arrays, and VARIADIC NULL (no parameters).
SELECT webgres.select_row(NULL::bigint, 'SELECT count(*) FROM sr_item');
SELECT webgres.select_row(NULL::text, 'SELECT name || $2 FROM sr_item WHERE id = $1 AND price > $3', 3, '!', 2.5);
SELECT webgres.select_row(NULL::bigint, 'SELECT count(*) FROM sr_item WHERE price IS NOT DISTINCT FROM $1', NULL::numeric);
SELECT webgres.select_row(NULL::integer, 'SELECT id FROM sr_item WHERE name = $1', 'two');
SELECT webgres.select_row(NULL::integer, 'SELECT $1 + $2', VARIADIC ARRAY[2, 3]);
SELECT webgres.select_row(NULL::integer, 'SELECT 7', VARIADIC NULL::integer[]);
-- Once per row of the outer query, each run its own statement.
SELECT g, (webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', g)).name
FROM generate_series(0, 4) AS g ORDER BY g;
-- A query that differs from row to row, past the plans a backend keeps:
-- those beyond are planned for the call.
SELECT sum(webgres.select_row(NULL::integer, 'SELECT ' || g || ' + $1', 1))
FROM generate_series(1, 300) AS g;

-- webgres.select_rows: every row, as an array of the type asked for, in the
-- order the query returns them; empty when none.
SELECT webgres.select_rows(NULL::sr_item, 'SELECT * FROM sr_item ORDER BY id DESC');
SELECT webgres.select_rows(NULL::text, 'SELECT name FROM sr_item WHERE id > $1 ORDER BY id', 1);
SELECT webgres.select_rows(NULL::integer, 'SELECT id FROM sr_item WHERE id > $1', 42) AS none,
       cardinality(webgres.select_rows(NULL::integer, 'SELECT id FROM sr_item WHERE id > $1', 42)) AS n;
-- NULL columns stay NULL elements; a row type's columns map by position.
SELECT webgres.select_rows(NULL::numeric, 'SELECT price FROM sr_item ORDER BY id');
SELECT (webgres.select_rows(NULL::sr_item, 'SELECT id, upper(name), price FROM sr_item ORDER BY id'))[2].name;
-- More rows than its first allocation holds.
SELECT cardinality(a), a[1], a[1000]
FROM (SELECT webgres.select_rows(NULL::integer, 'SELECT g FROM generate_series(1, 1000) AS g')) AS t(a);
-- select_rows returns its rows as an expanded array, which || and
-- array_append add to in place: what is then stored, compared, sent or read
-- is the array a flat one would be, NULL elements and all, and growing it
-- past the room it was made with (16 rows) moves its elements.
-- select_each's flat array, beside it, is added to as any other.
CREATE TEMP TABLE sr_grown AS
SELECT webgres.select_rows(NULL::sr_item, 'SELECT * FROM sr_item ORDER BY id')
         || ROW(4, 'four', 4)::sr_item AS items,
       array_append(webgres.select_rows(NULL::numeric, 'SELECT price FROM sr_item ORDER BY id'), 9.5) AS prices,
       webgres.select_each(NULL::text, 'SELECT name FROM sr_item WHERE id = $1', ARRAY[3, 42, 1])
         || 'x'::text || NULL::text AS names,
       webgres.select_rows(NULL::integer, 'SELECT g FROM generate_series(1, 16) AS g')
         || 17 || 18 AS sixteen,
       webgres.select_each(NULL::integer, 'SELECT $1 * 10', ARRAY[1, 2, 3]) || 40 AS each_full,
       webgres.select_rows(NULL::integer, 'SELECT id FROM sr_item WHERE id > 42') || 1 AS from_none;
SELECT items, array_dims(items), prices, array_dims(prices), names, sixteen,
       array_dims(sixteen), each_full, from_none, array_dims(from_none)
FROM sr_grown;
-- The same bytes as the array made from the same values: no null bitmap
-- where no element is NULL, one where one is.
SELECT array_send(items) = array_send(ARRAY(SELECT s FROM sr_item AS s ORDER BY id) || ROW(4, 'four', 4)::sr_item) AS items_same,
       array_send(prices) = array_send(ARRAY[1.5, NULL, 3, 9.5]) AS prices_same,
       array_send(sixteen) = array_send(ARRAY(SELECT generate_series(1, 18))) AS sixteen_same,
       array_send(webgres.select_rows(NULL::integer, 'SELECT id FROM sr_item ORDER BY id'))
         = array_send(ARRAY[1, 2, 3]) AS unchanged_same
FROM sr_grown;
DROP TABLE sr_grown;
-- One value read twice is not changed by adding to it the first time.
SELECT a || 10 AS first, a || 20 AS second, a
FROM (SELECT webgres.select_rows(NULL::integer, 'SELECT id FROM sr_item ORDER BY id') OFFSET 0) AS t(a);
-- PL/pgSQL takes the array over and changes it in place; a copy taken
-- before keeps its elements.
DO $$
DECLARE
  a integer[] := webgres.select_rows(NULL::integer, 'SELECT g + 100 FROM generate_series(1, 2) AS g');
  b integer[];
BEGIN
  b := a;
  a[3] := 103;
  a := a || 104;
  a[1] := NULL;
  RAISE NOTICE 'a % %, b % %', a, array_dims(a), b, array_dims(b);
END
$$;
-- Its errors name it.
SELECT webgres.select_rows(NULL::text, 'SELECT id FROM sr_item');
SELECT webgres.select_rows(NULL::integer, 'DELETE FROM sr_item RETURNING id');
SELECT webgres.select_rows(NULL::integer, 'SELECT 1; SELECT 2');
SELECT webgres.select_rows(NULL::record, 'SELECT 1');
SELECT webgres.select_rows(NULL::integer, NULL);
SELECT webgres.select_rows(NULL::integer, 'SELECT 10 / $1', 0);
SELECT count(*) FROM sr_item;

-- webgres.select_each: the query once for each element as $1, each run a
-- statement of its own; element i is run i's first row, NULL when it
-- returned none, in the elements' order.
SELECT webgres.select_each(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', ARRAY[3, 42, 1]);
SELECT webgres.select_each(NULL::text, 'SELECT name FROM sr_item WHERE id = $1', ARRAY[2, 2, NULL]);
SELECT webgres.select_each(NULL::integer, 'SELECT id FROM sr_item WHERE id > $1 ORDER BY id', ARRAY[0, 1]);
-- Elements of any type; a row type's columns map by position; more runs
-- than the plans a backend keeps are still one kept plan.
SELECT webgres.select_each(NULL::integer, 'SELECT id FROM sr_item WHERE name = $1', ARRAY['three', 'one']);
SELECT (webgres.select_each(NULL::sr_item, 'SELECT id, upper(name), price FROM sr_item WHERE id = $1', ARRAY[1]))[1].name;
SELECT cardinality(a), a[1], a[500]
FROM (SELECT webgres.select_each(NULL::integer, 'SELECT $1 * 2', array_agg(g)) FROM generate_series(1, 500) AS g) AS t(a);
-- An empty array gives an empty one, a NULL array NULL.
SELECT webgres.select_each(NULL::integer, 'SELECT $1', '{}'::integer[]) AS empty,
       webgres.select_each(NULL::integer, 'SELECT $1', NULL::integer[]) IS NULL AS null_args;
-- Its errors name it.
SELECT webgres.select_each(NULL::text, 'SELECT id FROM sr_item WHERE id = $1', ARRAY[1]);
SELECT webgres.select_each(NULL::integer, 'DELETE FROM sr_item WHERE id = $1 RETURNING id', ARRAY[1]);
SELECT webgres.select_each(NULL::record, 'SELECT $1', ARRAY[1]);
SELECT webgres.select_each(NULL::integer, NULL, ARRAY[1]);
SELECT webgres.select_each(NULL::integer, 'SELECT 10 / $1', ARRAY[5, 0]);
SELECT webgres.select_each(NULL::integer, 'SELECT $1', ARRAY[[1, 2], [3, 4]]);
SELECT webgres.select_each(NULL::integer, 'SELECT $2', ARRAY[1]);
SELECT count(*) FROM sr_item;

-- A table's row is handed over as it is stored, with a value kept out of
-- line (TOAST) brought into the row value, as a row value must hold it:
-- the value is whole after the table row is gone.
CREATE TABLE sr_long (id integer, body text);
ALTER TABLE sr_long ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO sr_long SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 300) AS g;
CREATE TEMP TABLE sr_kept AS
  SELECT webgres.select_rows(NULL::sr_long, 'SELECT * FROM sr_long') AS rows,
         webgres.select_row(NULL::sr_long, 'SELECT * FROM sr_long WHERE id = $1', 1) AS one;
SELECT pg_column_size(rows) > 9600 AS rows_whole, pg_column_size(one) > 9600 AS one_whole FROM sr_kept;
DELETE FROM sr_long;
VACUUM sr_long;
SELECT length((rows[1]).body), (rows[1]).body = (one).body AS same,
       md5((one).body) = md5((SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) AS g)) AS intact
FROM sr_kept;
DROP TABLE sr_kept, sr_long;

-- The kept plan follows the table: a new column, then a dropped one (the
-- row type keeps a dropped slot; the query's columns map onto the rest).
ALTER TABLE sr_item ADD COLUMN stock integer DEFAULT 5;
SELECT webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', 1);
ALTER TABLE sr_item DROP COLUMN price;
SELECT webgres.select_row(NULL::sr_item, 'SELECT * FROM sr_item WHERE id = $1', 1);
-- ... and the search_path.
CREATE SCHEMA sr_a;
CREATE SCHEMA sr_b;
CREATE TABLE sr_a.sr_where (v text);
CREATE TABLE sr_b.sr_where (v text);
INSERT INTO sr_a.sr_where VALUES ('in a');
INSERT INTO sr_b.sr_where VALUES ('in b');
SET search_path = sr_a, public;
SELECT webgres.select_row(NULL::text, 'SELECT v FROM sr_where');
SET search_path = sr_b, public;
SELECT webgres.select_row(NULL::text, 'SELECT v FROM sr_where');
RESET search_path;

-- It runs as the current user: privileges and row-level security hold,
-- with the same kept plan for two roles.
CREATE ROLE sr_alice;
CREATE ROLE sr_bob;
CREATE ROLE sr_nobody;
CREATE TABLE sr_note (owner text, body text);
INSERT INTO sr_note VALUES ('sr_alice', 'alice''s'), ('sr_bob', 'bob''s');
ALTER TABLE sr_note ENABLE ROW LEVEL SECURITY;
CREATE POLICY sr_own ON sr_note USING (owner = current_user);
GRANT SELECT ON sr_note TO sr_alice, sr_bob;
SET ROLE sr_alice;
SELECT webgres.select_row(NULL::text, 'SELECT string_agg(body, '','') FROM sr_note');
SELECT webgres.select_rows(NULL::sr_note, 'SELECT * FROM sr_note');
SELECT webgres.select_each(NULL::text, 'SELECT body FROM sr_note WHERE owner = $1', ARRAY['sr_alice', 'sr_bob']);
SET ROLE sr_bob;
SELECT webgres.select_row(NULL::text, 'SELECT string_agg(body, '','') FROM sr_note');
SELECT webgres.select_rows(NULL::sr_note, 'SELECT * FROM sr_note');
SELECT webgres.select_each(NULL::text, 'SELECT body FROM sr_note WHERE owner = $1', ARRAY['sr_alice', 'sr_bob']);
SET ROLE sr_nobody;
SELECT webgres.select_row(NULL::text, 'SELECT string_agg(body, '','') FROM sr_note');
RESET ROLE;

-- Errors.
-- The result's type must be named.
SELECT webgres.select_row(NULL, 'SELECT 1');
SELECT webgres.select_row(NULL::record, 'SELECT 1');
SELECT webgres.select_row(NULL::integer, NULL);
-- The query's columns must be the type asked for.
SELECT webgres.select_row(NULL::text, 'SELECT id FROM sr_item');
SELECT webgres.select_row(NULL::text, 'SELECT id, name FROM sr_item');
SELECT webgres.select_row(NULL::sr_item, 'SELECT id FROM sr_item');
-- (terse: the detail naming the column is Postgres' own, worded
-- differently from 18 on)
\set VERBOSITY terse
SELECT webgres.select_row(NULL::sr_item, 'SELECT name, id, stock FROM sr_item');
\set VERBOSITY default
-- One SELECT that writes nothing and locks nothing.
SELECT webgres.select_row(NULL::integer, 'SELECT 1; SELECT 2');
SELECT webgres.select_row(NULL::integer, 'UPDATE sr_item SET name = name RETURNING id');
SELECT webgres.select_row(NULL::integer, 'SELECT id FROM sr_item FOR UPDATE');
SELECT webgres.select_row(NULL::integer, 'WITH gone AS (DELETE FROM sr_item RETURNING id) SELECT count(*)::integer FROM gone');
SELECT webgres.select_row(NULL::integer, 'SELECT 1 INTO sr_copy');
SELECT count(*) FROM sr_item;
-- The query's own errors name it.
SELECT webgres.select_row(NULL::integer, 'SELEC 1');
SELECT webgres.select_row(NULL::integer, 'SELECT 10 / $1', 0);
SELECT webgres.select_row(NULL::integer, 'SELECT $2', 1);
-- The backend serves on after them.
SELECT webgres.select_row(NULL::integer, 'SELECT 10 / $1', 5);

DROP TABLE sr_note;
DROP ROLE sr_alice, sr_bob, sr_nobody;
DROP SCHEMA sr_a, sr_b CASCADE;
DROP TABLE sr_item;
