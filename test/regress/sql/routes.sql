-- The routes table: validation when a route is saved, ownership and RLS.
CREATE EXTENSION IF NOT EXISTS webgres;
SET client_min_messages = warning;

-- A valid route; the method is normalised and the owner set.
INSERT INTO webgres.routes (method, path, handler)
VALUES ('get', '/hello/:name', $$SELECT 'Hello, ' || (request.params->>'name') AS body FROM request$$)
RETURNING method, path, priority, owner = current_user::regrole AS owner_is_me;

-- Any method, and a rest capture.
INSERT INTO webgres.routes (method, path, handler)
VALUES (NULL, '/static/*', $$SELECT 'x'::bytea AS body$$) RETURNING method;

-- The handler keeps its own WITH, set operations and data-modifying statements.
CREATE TABLE notes (id serial PRIMARY KEY, body text);
INSERT INTO webgres.routes (method, path, handler) VALUES
 ('GET', '/w', $$WITH x AS (SELECT 1 AS a) SELECT a::text AS body FROM x, request$$),
 ('GET', '/wr', $$WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT string_agg(n::text, ',') AS body FROM t$$),
 ('GET', '/u', $$SELECT 'a' AS body UNION SELECT 'b' ORDER BY 1$$),
 ('GET', '/v', $$SELECT * FROM (VALUES (200, 'v')) v(status, body)$$),
 ('POST', '/notes', $$INSERT INTO notes (body) SELECT webgres.body_text(request.body) FROM request RETURNING 201 AS status, id::text AS body$$),
 ('DELETE', '/notes/:id', $$DELETE FROM notes USING request WHERE id = (request.params->>'id')::int RETURNING 204 AS status$$),
 ('PUT', '/notes/:id', $$WITH upd AS (UPDATE notes SET body = 'x' FROM request WHERE id = (request.params->>'id')::int RETURNING id) SELECT count(*) AS status FROM upd$$);

-- VALUES without named columns shapes no response: refused.
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/v2', $$VALUES (1)$$);

-- Bad SQL is refused with the Postgres error and its position in the handler.
\set VERBOSITY default
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELEC 1 AS body');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT nope AS body FROM request');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'WITH a AS (SELECT 1) SELECT b AS body FROM a');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT 1 AS body FROM no_such_table');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT $1 AS body');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT 1 AS body; SELECT 2 AS body');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', '');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'CREATE TABLE x (a int)');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT 1');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT ''x'' AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'SELECT 1 AS headers');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'UPDATE notes SET body = body');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bad', 'WITH request AS (SELECT 1) SELECT 1 AS body');
\set VERBOSITY terse

-- Bad paths and methods.
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', 'nope', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/a/*/b', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/a/:', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/a/:x/:x', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/a/:x-y', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/a%20b', 'SELECT 1 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('GE T', '/a', 'SELECT 200 AS status');
INSERT INTO webgres.routes (method, path, handler) VALUES ('', '/a', 'SELECT 200 AS status');

-- An update is checked like an insert.
UPDATE webgres.routes SET handler = 'SELECT broken(' WHERE path = '/w';

-- check_handler says the same without saving anything.
SELECT webgres.check_handler($$SELECT 'ok' AS body FROM request$$);
SELECT webgres.check_handler('SELECT nope AS body');

-- Ownership and row-level security.
CREATE ROLE route_alice LOGIN;
CREATE ROLE route_bob LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO route_alice, route_bob;
GRANT SELECT ON notes TO route_alice;
SET ROLE route_alice;
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/alice', $$SELECT 'a' AS body$$)
RETURNING owner;
INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/alice2', $$SELECT 'a' AS body$$, 'route_bob');
SELECT path, owner FROM webgres.routes ORDER BY path;
RESET ROLE;
SET ROLE route_bob;
SELECT count(*) AS bob_sees FROM webgres.routes;
UPDATE webgres.routes SET handler = $$SELECT 'hijack' AS body$$ WHERE path = '/alice';
DELETE FROM webgres.routes WHERE path = '/alice';
RESET ROLE;
SELECT path, handler FROM webgres.routes WHERE path = '/alice';

-- A superuser may give a route to another role.
INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/bobs', $$SELECT 'b' AS body$$, 'route_bob')
RETURNING owner;

SELECT method, path, priority FROM webgres.routes ORDER BY id;

DELETE FROM webgres.routes WHERE owner IN ('route_alice'::regrole, 'route_bob'::regrole);
DROP OWNED BY route_alice, route_bob;
DROP ROLE route_alice;
DROP ROLE route_bob;
