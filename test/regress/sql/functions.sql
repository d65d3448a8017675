-- Helper functions for handlers.
CREATE EXTENSION webgres;

SELECT webgres.html_escape('plain text');
SELECT webgres.html_escape('<script>alert("x") & ''y''</script>');
SELECT webgres.html_escape('フレームワーク — <b>');
SELECT webgres.html_escape('');
SELECT webgres.html_escape(NULL);

-- int_param: parse, default, clamp (the TechEmpower query-count rule).
SELECT v, webgres.int_param(v, 1, 1, 500) AS clamped
FROM (VALUES (NULL), (''), ('foo'), ('0'), ('-3'), ('1'), ('20'), ('500'), ('501'),
             (' 7 '), ('+9'), ('12abc'), ('99999999999999999999'), ('-99999999999999999999')) t(v);
SELECT webgres.int_param('5', 0, NULL, NULL);
SELECT webgres.int_param('5', 0, 10, 1);

-- Request bodies.
SELECT webgres.body_text('hello'::bytea);
SELECT webgres.body_text('\xff'::bytea);
SELECT webgres.body_json('{"a": [1, 2]}'::bytea);
SELECT webgres.body_json('{"a": '::bytea);
SELECT webgres.body_form('a=1&b=x+y&a=2&c&d=%E2%9C%93'::bytea);
SELECT webgres.body_form(''::bytea);
SELECT webgres.body_form('a=%zz'::bytea);
SELECT webgres.body_form('a=%ff'::bytea);
