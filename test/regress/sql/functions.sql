-- Helper functions for handlers.
CREATE EXTENSION webgres;

SELECT webgres.html_escape('plain text');
SELECT webgres.html_escape('<script>alert("x") & ''y''</script>');
SELECT webgres.html_escape('フレームワーク — <b>');
SELECT webgres.html_escape('');
SELECT webgres.html_escape(NULL);
-- Output many times longer than the buffer it starts in, escapes among and
-- after long runs, checked against replace().
SELECT webgres.html_escape(s) = replace(replace(replace(replace(replace(s,
         '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&#39;') AS same,
       length(webgres.html_escape(s))
FROM (SELECT repeat('a<&"''>', 3000) || repeat('x', 5000) || '<' AS s) AS t;
-- Each special byte (and one that is not) at every offset of the first
-- blocks of sixteen that are searched at once, and in the bytes after them.
SELECT count(*) FILTER (WHERE webgres.html_escape(s) IS DISTINCT FROM
         replace(replace(replace(replace(replace(s, '&', '&amp;'), '<', '&lt;'),
                 '>', '&gt;'), '"', '&quot;'), '''', '&#39;')) AS wrong,
       count(*) AS strings
FROM (SELECT repeat('x', n) || c || repeat('é', m) || c AS s
      FROM generate_series(0, 40) AS n, generate_series(0, 20) AS m,
           unnest(ARRAY['&', '<', '>', '"', '''', '?']) AS c) AS t;

-- html_rows: rows of an HTML table, cells escaped, sorted by the key's bytes
-- (COLLATE "C"): '<' before 'A', 'A ' before 'Ad', 'Feature' before
-- 'fortune', Japanese after ASCII; NULL keys last, ties in arrival order.
SELECT webgres.html_rows(msg, id, msg)
FROM (VALUES (1, 'fortune: no'), (2, 'Feature'), (3, '<script>"x" & ''y''</script>'),
             (4, 'Ad'), (5, 'A b'), (6, 'フレーム'), (7, NULL), (8, 'Ad')) AS f(id, msg);
-- Any type is written by its output function and escaped; NULL cells are empty.
SELECT webgres.html_rows(k, n, b, j, NULL::text, 'lit')
FROM (VALUES ('b', 1.50, true, '{"a": "<x>"}'::jsonb), ('a', NULL, false, NULL)) AS t(k, n, b, j);
-- Cells given as one VARIADIC array; a NULL array is a row with no cells.
SELECT webgres.html_rows(k, VARIADIC c)
FROM (VALUES ('2', ARRAY['x<', NULL, 'z']), ('1', ARRAY[]::text[]), ('3', NULL)) AS t(k, c);
-- No rows give NULL; one result per group.
SELECT webgres.html_rows(k, k) IS NULL AS no_rows FROM (VALUES ('a')) AS t(k) WHERE false;
SELECT g, webgres.html_rows(k, k) FROM (VALUES (1, 'y'), (2, 'b'), (1, 'x'), (2, 'a')) AS t(g, k)
GROUP BY g ORDER BY g;

-- html_rows_of: an array of a row type rendered as html_rows renders rows,
-- the named columns as cells, ordered by the key column's bytes.
CREATE TYPE pg_temp.hr_fortune AS (id integer, message text, seen date);
SELECT webgres.html_rows_of(ARRAY[(1, 'fortune: no', NULL), (2, 'Feature', NULL),
         (3, '<script>"x" & ''y''</script>', NULL), (4, 'Ad', NULL), (5, 'A b', NULL),
         (6, 'フレーム', NULL), (7, NULL, NULL), (8, 'Ad', NULL)]::pg_temp.hr_fortune[],
       'message', 'id', 'message');
-- Any column type, by its output function; a key that is not text; columns
-- in any order and more than once; a NULL element is a row of empty cells.
SELECT webgres.html_rows_of(ARRAY[(2, 'b', '2026-01-02'), NULL, (10, 'a', NULL)]::pg_temp.hr_fortune[],
       'id', 'seen', 'id', 'message', 'id');
-- A NULL key keeps the array's order; no columns; an empty array; NULL.
SELECT webgres.html_rows_of(ARRAY[(2, 'b', NULL), (1, 'a', NULL)]::pg_temp.hr_fortune[], NULL, 'message');
SELECT webgres.html_rows_of(ARRAY[(2, 'b', NULL)]::pg_temp.hr_fortune[], 'id', VARIADIC ARRAY[]::text[]);
SELECT webgres.html_rows_of(ARRAY[]::pg_temp.hr_fortune[], 'id', 'id') = '' AS empty;
SELECT webgres.html_rows_of(NULL::pg_temp.hr_fortune[], 'id', 'id') IS NULL AS null_array;
-- An array built with || (expanded, not flattened), and a table's rows.
CREATE TEMP TABLE hr_item (id integer, name varchar(10));
INSERT INTO hr_item VALUES (1, 'b<'), (2, 'a&');
SELECT webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i) || ROW(0, 'c')::hr_item, 'name', 'name', 'id');
-- One call site for each row of an outer query; then a column added to
-- the table (its rows read it from the default).
SELECT n, webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), 'id', 'id', 'name')
FROM generate_series(1, 2) AS n;
ALTER TABLE hr_item ADD COLUMN note text DEFAULT 'new';
SELECT webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), 'id', 'note', 'id');
-- A domain over a row type is read as the row type.
CREATE DOMAIN pg_temp.hr_positive AS pg_temp.hr_fortune CHECK ((VALUE).id > 0);
SELECT webgres.html_rows_of(ARRAY[(2, 'b', NULL), (1, 'a', NULL)]::pg_temp.hr_positive[], 'message', 'id');
-- What a call site found is kept for later transactions of the backend,
-- and found again when the table changes under the same call: two columns
-- swap names, then one changes type (a number then written by its text).
CREATE TEMP TABLE hr_swap (a integer, b text);
INSERT INTO hr_swap VALUES (1, 'one<'), (2, 'two&');
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), 'a', 'a', 'b');
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), 'a', 'a', 'b');
ALTER TABLE hr_swap RENAME COLUMN a TO tmp;
ALTER TABLE hr_swap RENAME COLUMN b TO a;
ALTER TABLE hr_swap RENAME COLUMN tmp TO b;
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), 'a', 'a', 'b');
ALTER TABLE hr_swap ALTER COLUMN b TYPE numeric USING b * 1.5;
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), 'a', 'a', 'b');
ALTER TABLE hr_swap DROP COLUMN a;
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), 'a', 'a', 'b');
SELECT webgres.html_rows_of(ARRAY(SELECT s FROM hr_swap AS s), NULL, 'b');
-- Forty call sites, more than the backend keeps, each called twice, then
-- the first again: the kept ones make room without losing their way.
DO $$
DECLARE
  got text;
BEGIN
  FOR round IN 1..2 LOOP
    FOR n IN 1..40 LOOP
      EXECUTE format('SELECT webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), %L, %s)',
                     CASE WHEN n % 2 = 0 THEN 'id' ELSE 'name' END,
                     array_to_string(array_fill('''id'''::text, ARRAY[n]), ', '))
        INTO got;
      IF got <> '<tr>' || (SELECT string_agg(repeat('<td>' || id || '</td>', n), '</tr><tr>'
                                   ORDER BY CASE WHEN n % 2 = 0 THEN id::text ELSE name END COLLATE "C")
                           FROM hr_item) || '</tr>' THEN
        RAISE EXCEPTION 'site % round %: %', n, round, got;
      END IF;
    END LOOP;
  END LOOP;
END $$;
-- A call site that refused its names keeps refusing them.
SELECT webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), 'id', 'missing');
SELECT webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), 'id', 'missing');
-- A type made while one query runs (each made type drops what the backend
-- kept) leaves that query's own call site as it was.
CREATE FUNCTION pg_temp.hr_churn(n integer) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TYPE pg_temp.hr_churn_%s AS (a integer)', n);
  RETURN n;
END $$;
SELECT n, webgres.html_rows_of(ARRAY(SELECT i FROM hr_item AS i), 'id', 'id', 'name'), pg_temp.hr_churn(n)
FROM generate_series(1, 3) AS n;
-- Integer cells and keys (written here, not by a call) read as int4out and
-- int8out write them, a domain over one too (smallint by its output
-- function); a key of digits orders by its text.
CREATE DOMAIN pg_temp.hr_count AS integer CHECK (VALUE >= 0);
CREATE TYPE pg_temp.hr_numbers AS (i integer, b bigint, s smallint, c pg_temp.hr_count);
SELECT webgres.html_rows_of(ARRAY[(-2147483648, -9223372036854775808, -32768, 0),
         (2147483647, 9223372036854775807, 32767, 42), (0, 0, 0, 7), (10, NULL, -1, NULL)]::pg_temp.hr_numbers[],
       'i', 'i', 'b', 's', 'c');
SELECT webgres.html_rows_of(ARRAY[(1, 20, 1, 3), (2, -3, 2, 100), (3, 100, 3, 20)]::pg_temp.hr_numbers[],
       'b', 'b', 'c');
SELECT webgres.html_rows_of(ARRAY[(1, 20, 1, 3), (2, -3, 2, 100), (3, 100, 3, 20)]::pg_temp.hr_numbers[],
       'c', 'c', 'i');
-- Sorting, both ways it is done (by insertion up to 24 rows, by qsort
-- beyond): keys alike in their first eight bytes and beyond, keys that are
-- prefixes of others, ties, NULL keys, against ORDER BY ... COLLATE "C".
CREATE TEMP TABLE hr_keys AS
SELECT n, i, CASE i % 6 WHEN 0 THEN 'commonprefix' || (i * 7919 % 13)
                        WHEN 1 THEN 'commonpre' WHEN 2 THEN 'commonprefix'
                        WHEN 3 THEN 'é' || (i * 31 % 7) WHEN 4 THEN NULL
                        ELSE chr(65 + i * 17 % 26) END AS k
FROM unnest(ARRAY[1, 5, 24, 25, 60]) AS n, generate_series(1, n) AS i;
SELECT n, webgres.html_rows_of(ARRAY(SELECT ROW(i, k, NULL)::pg_temp.hr_fortune
                                     FROM hr_keys AS h WHERE h.n = s.n ORDER BY i),
                               'message', 'id', 'message')
        = (SELECT string_agg('<tr><td>' || i || '</td><td>' || coalesce(k, '') || '</td></tr>', ''
                             ORDER BY k COLLATE "C", i) FROM hr_keys AS h WHERE h.n = s.n) AS sorted
FROM (SELECT DISTINCT n FROM hr_keys) AS s ORDER BY n;
-- Long messages, mostly escapes, in a page far longer than its first buffer.
SELECT webgres.html_rows_of(ARRAY[(1, repeat('<&>', 4000), NULL), (2, repeat('x', 9000) || '"', NULL)]::pg_temp.hr_fortune[],
         NULL, 'id', 'message')
     = '<tr><td>1</td><td>' || repeat('&lt;&amp;&gt;', 4000) || '</td></tr><tr><td>2</td><td>'
       || repeat('x', 9000) || '&quot;</td></tr>' AS long_rows;
-- Errors: not an array of a named row type, an unknown column, NULL names.
SELECT webgres.html_rows_of(ARRAY[1, 2], 'id', 'id');
SELECT webgres.html_rows_of(ARRAY[ROW(1, 2)], 'f1', 'f1');
SELECT webgres.html_rows_of(ARRAY[(1, 'a', NULL)]::pg_temp.hr_fortune[], 'id', 'nope');
SELECT webgres.html_rows_of(ARRAY[(1, 'a', NULL)]::pg_temp.hr_fortune[], 'nope', 'id');
SELECT webgres.html_rows_of(ARRAY[(1, 'a', NULL)]::pg_temp.hr_fortune[], 'id', NULL::text);
SELECT webgres.html_rows_of(ARRAY[(1, 'a', NULL)]::pg_temp.hr_fortune[], 'id', VARIADIC NULL::text[]);

-- json_rows_of: an array of a row type as a JSON array of objects, a member
-- for each key and column, each value written as json_build writes it.
CREATE TYPE pg_temp.jr_world AS (id integer, randomnumber integer, note text, seen date, tags text[]);
SELECT webgres.json_rows_of(ARRAY[(1, 10, 'a"b', '2026-01-02', '{x,y}'), (2, NULL, NULL, NULL, NULL)]::pg_temp.jr_world[],
       'id', 'id', 'randomNumber', 'randomnumber', 'note', 'note', 'seen', 'seen', 'tags', 'tags');
-- The same as json_agg over json_build, but for the spaces json_agg adds.
SELECT replace(webgres.json_rows_of(a, 'id', 'id', 'n', 'note')::text, ' ', '') =
       replace((SELECT json_agg(webgres.json_build('id', (r).id, 'n', (r).note)) FROM unnest(a) AS r)::text, ' ', '') AS same
FROM (SELECT ARRAY[(3, 1, 'x', NULL, NULL), (1, 2, 'y z', NULL, NULL)]::pg_temp.jr_world[]) AS t(a);
-- Keys are written escaped; a column more than once, or none; a NULL
-- element is null; an empty array is [], a NULL one NULL.
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], 'a"\', 'id', 'again', 'id');
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], VARIADIC ARRAY[]::text[]);
SELECT webgres.json_rows_of(ARRAY[NULL, (7, 8, NULL, NULL, NULL)]::pg_temp.jr_world[], 'id', 'id');
SELECT webgres.json_rows_of(ARRAY[]::pg_temp.jr_world[], 'id', 'id');
SELECT webgres.json_rows_of(NULL::pg_temp.jr_world[], 'id', 'id') IS NULL AS null_array;
-- Rows are taken apart from the offsets their type caches when no column
-- is NULL and only fixed widths come before the last (padding before an
-- int8 and a double, a name by reference, a last text with a one-byte or a
-- four-byte header), and as any other row otherwise: a NULL column, a text
-- before the integers, a row stored before a column was added (its default
-- read from the catalog), a dropped column between.  Each is checked
-- against to_jsonb of the same rows, html_rows_of against the cells' text.
CREATE TEMP TABLE rd_fixed (a smallint, b bigint, c boolean, d double precision, e name, f text);
INSERT INTO rd_fixed VALUES
  (1, -9000000000, true, 0.5, 'n1', 'short'),
  (-2, 7, false, -1e300, repeat('m', 63), repeat('long', 60)),
  (3, 0, true, 2, 'n3', NULL);
CREATE TEMP TABLE rd_text_first (t text, i integer, j bigint);
INSERT INTO rd_text_first VALUES ('x', 1, 2), (repeat('y', 300), -1, -2);
CREATE TEMP TABLE rd_added (id integer, v integer);
INSERT INTO rd_added VALUES (1, 10), (2, 20);
ALTER TABLE rd_added ADD COLUMN w integer NOT NULL DEFAULT 7;
INSERT INTO rd_added VALUES (3, 30, 31);
CREATE TEMP TABLE rd_dropped (id integer, gone text, v integer);
INSERT INTO rd_dropped VALUES (1, 'g', 10);
ALTER TABLE rd_dropped DROP COLUMN gone;
INSERT INTO rd_dropped VALUES (2, 20);
SELECT webgres.json_rows_of(ARRAY(SELECT r FROM rd_fixed AS r ORDER BY a), 'a', 'a', 'b', 'b', 'c', 'c', 'd', 'd', 'e', 'e', 'f', 'f')::jsonb
       = (SELECT jsonb_agg(to_jsonb(r) ORDER BY a) FROM rd_fixed AS r) AS fixed_same,
       webgres.json_rows_of(ARRAY(SELECT r FROM rd_text_first AS r ORDER BY i), 't', 't', 'i', 'i', 'j', 'j')::jsonb
       = (SELECT jsonb_agg(to_jsonb(r) ORDER BY i) FROM rd_text_first AS r) AS text_first_same,
       webgres.json_rows_of(ARRAY(SELECT r FROM rd_added AS r ORDER BY id), 'id', 'id', 'v', 'v', 'w', 'w')::jsonb
       = (SELECT jsonb_agg(to_jsonb(r) ORDER BY id) FROM rd_added AS r) AS added_same,
       webgres.json_rows_of(ARRAY(SELECT r FROM rd_dropped AS r ORDER BY id), 'id', 'id', 'v', 'v')::jsonb
       = (SELECT jsonb_agg(to_jsonb(r) ORDER BY id) FROM rd_dropped AS r) AS dropped_same;
SELECT webgres.json_row_of(r, 'a', 'a', 'b', 'b', 'd', 'd', 'f', 'f') FROM rd_fixed AS r WHERE a = 1;
SELECT webgres.json_row_of(r, 'id', 'id', 'w', 'w') FROM rd_added AS r ORDER BY id;
SELECT webgres.html_rows_of(ARRAY(SELECT r FROM rd_fixed AS r WHERE f IS NOT NULL), 'a', 'a', 'b', 'c', 'd', 'e', 'f')
       = (SELECT string_agg(format('<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>', a, b, c, d, e, f), '' ORDER BY a::text)
          FROM rd_fixed WHERE f IS NOT NULL) AS html_same,
       webgres.html_rows_of(ARRAY(SELECT r FROM rd_added AS r), 'id', 'id', 'v', 'w') AS added_html;
-- An array built with || (expanded), a table's rows, a domain over a row
-- type; one call site for each row of an outer query, then a new column.
CREATE TEMP TABLE jr_item (id integer, name varchar(10));
INSERT INTO jr_item VALUES (1, 'b'), (2, NULL);
SELECT webgres.json_rows_of(ARRAY(SELECT i FROM jr_item AS i ORDER BY id) || ROW(0, 'c')::jr_item, 'name', 'name', 'id', 'id');
SELECT n, webgres.json_rows_of(ARRAY(SELECT i FROM jr_item AS i ORDER BY id), 'id', 'id')
FROM generate_series(1, 2) AS n;
ALTER TABLE jr_item ADD COLUMN note text DEFAULT 'new';
SELECT webgres.json_rows_of(ARRAY(SELECT i FROM jr_item AS i ORDER BY id), 'id', 'id', 'note', 'note');
CREATE DOMAIN pg_temp.jr_positive AS pg_temp.jr_world CHECK ((VALUE).id > 0);
SELECT webgres.json_rows_of(ARRAY[(2, 3, NULL, NULL, NULL)]::pg_temp.jr_positive[], 'id', 'id');
-- Errors: not an array of a named row type, an unknown column, pairs not
-- whole, NULL names.
SELECT webgres.json_rows_of(ARRAY[1, 2], 'id', 'id');
SELECT webgres.json_rows_of(ARRAY[ROW(1, 2)], 'f1', 'f1');
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], 'id', 'nope');
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], 'id');
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], NULL, 'id');
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], 'id', NULL);
SELECT webgres.json_rows_of(ARRAY[(1, 2, NULL, NULL, NULL)]::pg_temp.jr_world[], VARIADIC NULL::text[]);

-- json_row_of: one row's object, as json_rows_of writes each element; NULL
-- for a NULL row; a table's row, and a domain over a row type.
SELECT webgres.json_row_of((1, 10, 'a"b', '2026-01-02', '{x,y}')::pg_temp.jr_world,
       'id', 'id', 'randomNumber', 'randomnumber', 'note', 'note', 'seen', 'seen', 'tags', 'tags');
SELECT webgres.json_row_of(NULL::pg_temp.jr_world, 'id', 'id') IS NULL AS null_row;
SELECT webgres.json_row_of(i, 'id', 'id', 'name', 'name') FROM jr_item AS i ORDER BY id;
SELECT webgres.json_row_of((2, 3, NULL, NULL, NULL)::pg_temp.jr_positive, 'n', 'randomnumber');
SELECT webgres.json_row_of((1, 2, NULL, NULL, NULL)::pg_temp.jr_world, VARIADIC ARRAY[]::text[]);
-- What a call site found is kept for the backend's later transactions: the
-- same calls twice (the second from what was kept, to_json()'s values
-- included), then two columns swapped by rename and one retyped under them.
CREATE TEMP TABLE jr_swap (a integer, b text, d date, t text[]);
INSERT INTO jr_swap VALUES (1, 'x"', '2026-01-02', '{p,q}');
SELECT webgres.json_rows_of(ARRAY(SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
SELECT webgres.json_rows_of(ARRAY(SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
SELECT webgres.json_row_of((SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
SELECT webgres.json_row_of((SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
ALTER TABLE jr_swap RENAME COLUMN a TO tmp;
ALTER TABLE jr_swap RENAME COLUMN b TO a;
ALTER TABLE jr_swap RENAME COLUMN tmp TO b;
SELECT webgres.json_rows_of(ARRAY(SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
SELECT webgres.json_row_of((SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
ALTER TABLE jr_swap ALTER COLUMN b TYPE numeric USING b * 1.5;
SELECT webgres.json_rows_of(ARRAY(SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
SELECT webgres.json_row_of((SELECT s FROM jr_swap AS s), 'a', 'a', 'b', 'b', 'd', 'd', 't', 't');
-- Errors: not a value of a named row type, an unknown column, pairs not
-- whole, NULL names; they name json_row_of.
SELECT webgres.json_row_of(1, 'id', 'id');
SELECT webgres.json_row_of(ROW(1, 2), 'f1', 'f1');
SELECT webgres.json_row_of((1, 2, NULL, NULL, NULL)::pg_temp.jr_world, 'id', 'nope');
SELECT webgres.json_row_of((1, 2, NULL, NULL, NULL)::pg_temp.jr_world, 'id');
SELECT webgres.json_row_of((1, 2, NULL, NULL, NULL)::pg_temp.jr_world, NULL, 'id');
SELECT webgres.json_row_of((1, 2, NULL, NULL, NULL)::pg_temp.jr_world, VARIADIC NULL::text[]);

-- json_build: the object json_build_object builds, without spaces.  Each
-- value below is written both ways; same says the texts agree but for the
-- spaces json_build_object puts around ':'.
CREATE FUNCTION pg_temp.both_ways(v anyelement) RETURNS TABLE (json_build json, same boolean)
LANGUAGE sql AS $$
  SELECT webgres.json_build('v', v),
         substr(webgres.json_build('v', v)::text, 6) = substr(json_build_object('v', v)::text, 8)
$$;
SET timezone = 'UTC';
SELECT * FROM pg_temp.both_ways(1);
SELECT * FROM pg_temp.both_ways((-32768)::int2);
SELECT * FROM pg_temp.both_ways('-9223372036854775808'::int8);
SELECT * FROM pg_temp.both_ways(1.50::numeric);
SELECT * FROM pg_temp.both_ways('NaN'::numeric);
SELECT * FROM pg_temp.both_ways('-Infinity'::float8);
SELECT * FROM pg_temp.both_ways(1e100::float8);
SELECT * FROM pg_temp.both_ways(true);
SELECT * FROM pg_temp.both_ways(NULL::int);
SELECT * FROM pg_temp.both_ways('a"b\c' || chr(10) || chr(9) || chr(8) || chr(12) || chr(13) || chr(1) || chr(31) || '/é'::text);
SELECT * FROM pg_temp.both_ways('x'::varchar(3));
SELECT * FROM pg_temp.both_ways('ab'::char(4));
SELECT * FROM pg_temp.both_ways('n'::name);
SELECT * FROM pg_temp.both_ways('{"k": [1, 2]}'::json);
SELECT * FROM pg_temp.both_ways('{"k": [1, 2]}'::jsonb);
SELECT * FROM pg_temp.both_ways(ARRAY[[1, 2], [3, NULL]]);
SELECT * FROM pg_temp.both_ways(ROW(1, 'a'));
SELECT * FROM pg_temp.both_ways('2026-11-28'::date);
SELECT * FROM pg_temp.both_ways('2026-11-28 12:34:56.5'::timestamp);
SELECT * FROM pg_temp.both_ways('2026-11-28 12:34:56+02'::timestamptz);
SELECT * FROM pg_temp.both_ways('1 day'::interval);
SELECT * FROM pg_temp.both_ways('\x00ff'::bytea);
SELECT * FROM pg_temp.both_ways('10.0.0.1'::inet);
CREATE DOMAIN pg_temp.small AS int CHECK (VALUE < 10);
SELECT * FROM pg_temp.both_ways(3::pg_temp.small);
CREATE TYPE pg_temp.mood AS ENUM ('sad', 'ok');
SELECT * FROM pg_temp.both_ways('ok'::pg_temp.mood);
-- Several pairs; keys may be untyped literals, text or other string types;
-- one call site over many rows.
SELECT webgres.json_build('id', id, 'name'::varchar, name, 'k'::name, 'x"y', 'n', NULL)
FROM (VALUES (1, 'a'), (2, NULL), (3, 'c')) AS t(id, name);
SELECT webgres.json_build(VARIADIC ARRAY['a', 'b', 'c', NULL]);
SELECT webgres.json_build(VARIADIC NULL::text[]) IS NULL AS null_array;
-- A type made after the first call is found too.
CREATE TYPE pg_temp.later AS (x int);
SELECT webgres.json_build('later', ROW(5)::pg_temp.later);
-- Keys are text and never NULL; the arguments come in pairs.
SELECT webgres.json_build('a');
SELECT webgres.json_build(1, 2);
SELECT webgres.json_build(NULL::text, 2);
SELECT webgres.json_build('k', 1, NULL, 2);
SELECT webgres.json_build(VARIADIC ARRAY[1, 2]);
SELECT webgres.json_build(VARIADIC ARRAY['a', 'b', 'c']);
SELECT webgres.json_build(VARIADIC ARRAY['a', 'b', NULL, 'd']);
\set VERBOSITY sqlstate
SELECT webgres.json_build('a');
SELECT webgres.json_build(1, 2);
SELECT webgres.json_build(NULL::text, 2);
\set VERBOSITY default
RESET timezone;

-- int_param: parse, default, clamp (the TechEmpower query-count rule).
SELECT v, webgres.int_param(v, 1, 1, 500) AS clamped
FROM (VALUES (NULL), (''), ('foo'), ('0'), ('-3'), ('1'), ('20'), ('500'), ('501'),
             (' 7 '), ('+9'), ('12abc'), ('99999999999999999999'), ('-99999999999999999999')) t(v);
SELECT webgres.int_param('5', 0, NULL, NULL);
SELECT webgres.int_param('5', 0, 10, 1);

-- random_distinct_ints: count distinct integers from [min, max], in random order.
-- A whole range is a permutation of it.
SELECT count(*) = 500 AND count(DISTINCT x) = 500 AND min(x) = 1 AND max(x) = 500 AS permutation
FROM unnest(webgres.random_distinct_ints(500, 1, 500)) x;
-- Few from a wide range: distinct, in range, one-dimensional from 1.
SELECT count(*) = 500 AND count(DISTINCT x) = 500 AND min(x) >= 1 AND max(x) <= 10000 AS ok
FROM unnest(webgres.random_distinct_ints(500, 1, 10000)) x;
SELECT array_dims(webgres.random_distinct_ints(20, 1, 10000));
-- Every value is as likely at every position, whether the range is shuffled
-- as an array (3 of 10) or through the map (2 of 10): 20000 draws put each
-- value at each position about 2000 times (the bounds are 12 standard
-- deviations away).
SELECT n, count(*) AS cells, bool_and(hits BETWEEN 1500 AND 2500) AS uniform
FROM (SELECT n, pos, v, count(*) AS hits
      FROM (SELECT n, webgres.random_distinct_ints(n, 1, 10) AS drawn
            FROM (VALUES (2), (3)) c(n), generate_series(1, 20000)) d,
           unnest(drawn) WITH ORDINALITY u(v, pos)
      GROUP BY n, pos, v) t
GROUP BY n ORDER BY n;
SELECT webgres.random_distinct_ints(0, 1, 10);
SELECT webgres.random_distinct_ints(0, 7, 7);
SELECT webgres.random_distinct_ints(1, 7, 7);
SELECT webgres.random_distinct_ints(1, -5, -5);
SELECT array_agg(x ORDER BY x) FROM unnest(webgres.random_distinct_ints(5, -3, 1)) x;
-- The extremes of integer: no overflow in max - min + 1 or in min + offset.
SELECT array_agg(x ORDER BY x) FROM unnest(webgres.random_distinct_ints(3, 2147483645, 2147483647)) x;
SELECT array_agg(x ORDER BY x) FROM unnest(webgres.random_distinct_ints(3, -2147483648, -2147483646)) x;
SELECT count(DISTINCT x) = 1000 AS ok
FROM unnest(webgres.random_distinct_ints(1000, -2147483648, 2147483647)) x;
SELECT array_agg(x ORDER BY x) FROM unnest(webgres.random_distinct_ints(2, -2147483648, -2147483647)) x;
-- Postgres' own generator, not random()'s: setseed() does not repeat it.
SELECT setseed(0.5);
CREATE TEMP TABLE drawn AS SELECT webgres.random_distinct_ints(20, 1, 1000000) AS ids;
SELECT setseed(0.5);
SELECT ids <> webgres.random_distinct_ints(20, 1, 1000000) AS not_repeated FROM drawn;
DROP TABLE drawn;
SELECT webgres.random_distinct_ints(NULL, 1, 10);
SELECT webgres.random_distinct_ints(-1, 1, 10);
SELECT webgres.random_distinct_ints(1, 10, 1);
SELECT webgres.random_distinct_ints(0, 10, 1);
SELECT webgres.random_distinct_ints(11, 1, 10);
SELECT webgres.random_distinct_ints(2, 2147483647, 2147483647);
SELECT webgres.random_distinct_ints(200000000, -2147483648, 2147483647);
-- Their SQLSTATEs: 22023 invalid_parameter_value, 54000 program_limit_exceeded.
\set VERBOSITY sqlstate
SELECT webgres.random_distinct_ints(-1, 1, 10);
SELECT webgres.random_distinct_ints(1, 10, 1);
SELECT webgres.random_distinct_ints(11, 1, 10);
SELECT webgres.random_distinct_ints(200000000, -2147483648, 2147483647);
\set VERBOSITY default

-- random_int: one integer from [min, max], each value reached.
SELECT count(DISTINCT v) = 3 AND min(v) = -1 AND max(v) = 1 AS all_reached
FROM (SELECT webgres.random_int(-1, 1) AS v FROM generate_series(1, 1000)) AS t;
SELECT webgres.random_int(7, 7);
SELECT webgres.random_int(-2147483648, 2147483647) BETWEEN -2147483648 AND 2147483647 AS in_range;
SELECT webgres.random_int(NULL, 1);
SELECT webgres.random_int(2, 1);

-- Request bodies.
SELECT webgres.body_text('hello'::bytea);
SELECT webgres.body_text('\xff'::bytea);
SELECT webgres.body_json('{"a": [1, 2]}'::bytea);
SELECT webgres.body_json('{"a": '::bytea);
SELECT webgres.body_form('a=1&b=x+y&a=2&c&d=%E2%9C%93'::bytea);
SELECT webgres.body_form(''::bytea);
SELECT webgres.body_form('a=%zz'::bytea);
SELECT webgres.body_form('a=%ff'::bytea);
