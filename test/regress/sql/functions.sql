-- Helper functions for handlers.
CREATE EXTENSION webgres;

SELECT webgres.html_escape('plain text');
SELECT webgres.html_escape('<script>alert("x") & ''y''</script>');
SELECT webgres.html_escape('フレームワーク — <b>');
SELECT webgres.html_escape('');
SELECT webgres.html_escape(NULL);

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

-- Request bodies.
SELECT webgres.body_text('hello'::bytea);
SELECT webgres.body_text('\xff'::bytea);
SELECT webgres.body_json('{"a": [1, 2]}'::bytea);
SELECT webgres.body_json('{"a": '::bytea);
SELECT webgres.body_form('a=1&b=x+y&a=2&c&d=%E2%9C%93'::bytea);
SELECT webgres.body_form(''::bytea);
SELECT webgres.body_form('a=%zz'::bytea);
SELECT webgres.body_form('a=%ff'::bytea);
