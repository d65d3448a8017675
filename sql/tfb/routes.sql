-- TechEmpower Framework Benchmarks: the seven routes.
--
-- Each handler is one SQL statement over the relation "request" (see the
-- README); its first row is the response: body's type gives the content type
-- unless content_type says otherwise. Run as benchmarkdbuser, so the routes
-- are owned by, and their handlers run as, that unprivileged role.
-- Safe to run again: the routes are replaced.

DELETE FROM webgres.routes
WHERE path IN ('/plaintext', '/json', '/db', '/queries', '/fortunes',
               '/updates', '/cached-queries');

INSERT INTO webgres.routes (method, path, handler) VALUES

-- "Hello, World!" as text/plain; charset=utf-8.
('GET', '/plaintext', $sql$
SELECT 'Hello, World!'::text AS body
$sql$),

-- A new object, serialized on every request: webgres.json_build is stable,
-- so the planner cannot fold it into a constant.  It writes what
-- json_build_object would, without spaces, and asks the catalog about each
-- type once per backend rather than on every call (docs/routes.md).
('GET', '/json', $sql$
SELECT webgres.json_build('message', 'Hello, World!') AS body
$sql$),

-- One random row, read by get_world's statement and written as its JSON
-- object by webgres.json_row_of. The handler itself is one row of
-- expressions (no FROM), which webgres evaluates without the executor, so
-- the read is the request's one executor run.
-- webgres.random_int is one call where 1 + floor(random() * 10000)::integer
-- is six, each checked for EXECUTE privilege in every transaction.
('GET', '/db', $sql$
SELECT webgres.json_row_of(get_world(webgres.random_int(1, 10000)),
                           'id', 'id', 'randomNumber', 'randomnumber') AS body
$sql$),

-- clamp(queries) random rows, each read by a statement of its own. The ids
-- are drawn by webgres.random_distinct_ints itself rather than through
-- random_ids: a handler calling only it and stable functions shares its
-- transaction with other reading requests (see the README).
-- get_worlds reads the rows one statement each (webgres.select_each) and
-- webgres.json_rows_of writes them as the JSON array of objects, so the
-- handler has no FROM but the request: one row of expressions.
('GET', '/queries', $sql$
SELECT webgres.json_rows_of(
         get_worlds(webgres.random_distinct_ints(
                      webgres.int_param(request.query->>'queries', 1, 1, 500), 1, 10000)),
         'id', 'id', 'randomNumber', 'randomnumber') AS body
FROM request
$sql$),

-- The 12 fortunes plus one added at request time, as an array, sorted by
-- message in code-point order here, outside the statement that reads the
-- table, and rendered by webgres.html_rows_of, a table template in C: a row
-- per fortune, cells id and message, escaped, in the order of message's
-- bytes.  The handler has no FROM: one row of expressions.
('GET', '/fortunes', $sql$
SELECT 'text/html; charset=utf-8' AS content_type,
       '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>'
       || '<tr><th>id</th><th>message</th></tr>'
       || webgres.html_rows_of(fortunes(), 'message', 'id', 'message')
       || '</table></body></html>' AS body
$sql$),

-- clamp(queries) rows read one by one, then saved with new random numbers.
('GET', '/updates', $sql$
SELECT update_worlds(random_ids(webgres.int_param(request.query->>'queries', 1, 1, 500))) AS body
FROM request
$sql$),

-- clamp(count) rows from this worker's in-memory cache: filled with every
-- row on first use, read through on a miss, entries kept for an hour.
('GET', '/cached-queries', $sql$
SELECT json_agg(webgres.cache_get(
         'world', id::text,
         loader      => $$SELECT webgres.json_build('id', id, 'randomNumber', randomnumber)
                         FROM world WHERE id = $1::integer$$,
         max_entries => 10000,
         ttl         => '1 hour',
         preload     => $$SELECT id::text, webgres.json_build('id', id, 'randomNumber', randomnumber)
                         FROM world$$)) AS body
FROM request,
     unnest(random_ids(webgres.int_param(request.query->>'count', 1, 1, 500))) AS id
$sql$);

-- Always on the event loop (docs/execution.md): these handlers are fast by
-- construction, and TechEmpower counts their statements exactly. In mode
-- auto a run that overran webgres.inline_budget on a loaded machine would be
-- cancelled and run again on an executor, whose own cache starts cold.
-- Never compressed, even with webgres.compress on: TechEmpower forbids it.
UPDATE webgres.routes SET mode = 'inline', compress = false
WHERE path IN ('/plaintext', '/json', '/db', '/queries', '/fortunes',
               '/updates', '/cached-queries');
