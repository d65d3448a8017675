-- Paths belong to their owners; routes follow the roles that own them; a
-- route keeps the search_path it was saved with.
CREATE EXTENSION IF NOT EXISTS webgres;
SET client_min_messages = warning;
\set VERBOSITY default

-- Pattern overlap, exactly: literal, :param and a trailing *.
SELECT a, b, webgres.paths_overlap(a, b) AS overlap, webgres.paths_overlap(b, a) AS reverse
FROM (VALUES
  ('/admin', '/admin'),
  ('/admin', '/admin/'),
  ('/admin', '/:page'),
  ('/admin', '/*'),
  ('/admin', '/admin/*'),
  ('/admin/x', '/admin'),
  ('/admin/:id', '/:section/edit'),
  ('/admin/:id', '/:section/edit/more'),
  ('/a/b/c', '/a/*'),
  ('/a/b', '/b/*'),
  ('/', '/*'),
  ('/', '/:p'),
  ('/', '/'),
  ('/a//b', '/a/:x/b'),
  ('/a//b', '/a/*'),
  ('//*', '/*'),
  ('/x/*', '/y/*')) t(a, b);
SELECT webgres.paths_overlap('nope', '/a');

CREATE ROLE own_admin LOGIN;
CREATE ROLE own_alice LOGIN;
CREATE ROLE own_bob LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO own_admin, own_alice, own_bob;

SET ROLE own_admin;
INSERT INTO webgres.routes (method, path, handler) VALUES
  ('GET', '/admin', $$SELECT 'admin page' AS body$$),
  ('GET', '/admin/users/:id', $$SELECT 'user' AS body$$);
RESET ROLE;

-- Alice cannot shadow, extend or catch the admin's paths ...
SET ROLE own_alice;
INSERT INTO webgres.routes (method, path, priority, handler)
  VALUES ('GET', '/admin', 1000, $$SELECT 'captured: ' || (request.headers->>'cookie') AS body FROM request$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('POST', '/admin', $$SELECT 'posted' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('HEAD', '/admin', $$SELECT 'head' AS body$$);
\set VERBOSITY terse
INSERT INTO webgres.routes (method, path, priority, handler) VALUES (NULL, '/*', 2000, $$SELECT 'all' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES (NULL, '/:page', $$SELECT 'page' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/admin/*', $$SELECT 'below' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/:section/users/:id', $$SELECT 'u' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/admin/users/*', $$SELECT 'u' AS body$$);

-- ... but does what it likes under its own paths.
INSERT INTO webgres.routes (method, path, handler) VALUES
  ('GET', '/alice', $$SELECT 'a' AS body$$),
  ('POST', '/alice', $$SELECT 'a' AS body$$),
  (NULL, '/alice/*', $$SELECT 'a' AS body$$),
  ('GET', '/alice/:id', $$SELECT 'a' AS body$$),
  ('GET', '/admin/users/:id/alice', $$SELECT 'a' AS body$$),
  ('GET', '/admins', $$SELECT 'a' AS body$$);
UPDATE webgres.routes SET priority = 5, handler = $$SELECT 'b' AS body$$ WHERE path = '/alice';
-- Moving a route onto another's path is refused like saving one there.
UPDATE webgres.routes SET path = '/admin' WHERE path = '/alice';
RESET ROLE;

-- Bob now cannot take Alice's paths either.
SET ROLE own_bob;
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/alice/:x/:y', $$SELECT 'b' AS body$$);
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bob', $$SELECT 'b' AS body$$);
RESET ROLE;

-- A superuser may save anything, overlaps included: priority decides.
INSERT INTO webgres.routes (method, path, priority, handler, owner)
  VALUES ('GET', '/admin/maintenance', 10, $$SELECT 'down' AS body$$, 'own_bob');
SELECT method, path, priority, owner FROM webgres.routes
  WHERE owner IN ('own_admin'::regrole, 'own_alice'::regrole, 'own_bob'::regrole)
  ORDER BY path, method;

-- A role that may not drop roles learns nothing of their routes.
SET ROLE own_alice;
DROP ROLE own_bob;
RESET ROLE;
-- A role that owns routes cannot be dropped ...
\set VERBOSITY default
DROP ROLE own_bob;
\set VERBOSITY terse
DROP ROLE IF EXISTS own_nobody, own_bob;
-- ... REASSIGN OWNED gives them to another role, DROP OWNED deletes them.
REASSIGN OWNED BY own_bob TO own_alice;
SELECT path, owner FROM webgres.routes WHERE path IN ('/bob', '/admin/maintenance') ORDER BY path;
DROP OWNED BY own_bob;
DROP ROLE own_bob;
DROP OWNED BY own_alice;
SELECT count(*) AS alice_routes FROM webgres.routes WHERE owner = 'own_alice'::regrole;
DROP ROLE own_alice;
-- Roles without routes drop as before.
CREATE ROLE own_free;
DROP ROLE own_free;

-- The search_path is recorded with the route and used to check it.
CREATE SCHEMA own_app;
CREATE TABLE own_app.things (name text);
GRANT USAGE ON SCHEMA own_app TO own_admin;
GRANT SELECT ON own_app.things TO own_admin;
SET ROLE own_admin;
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/things', $$SELECT name AS body FROM things$$);
SET search_path = own_app, public;
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/things', $$SELECT name AS body FROM things$$)
  RETURNING path, search_path;
RESET search_path;
-- An update that leaves the handler alone keeps it; a new handler takes the session's.
UPDATE webgres.routes SET priority = 1 WHERE path = '/things' RETURNING search_path;
UPDATE webgres.routes SET handler = $$SELECT name || '!' AS body FROM things$$ WHERE path = '/things';
UPDATE webgres.routes SET handler = $$SELECT name || '!' AS body FROM things$$, search_path = 'own_app'
  WHERE path = '/things' RETURNING search_path;
-- A restore brings its own search_path and is not planned (check_function_bodies off).
SET check_function_bodies = off;
SET search_path = '';
INSERT INTO webgres.routes (method, path, handler, search_path)
  VALUES ('GET', '/restored', $$SELECT name AS body FROM things_made_later$$, 'own_app, public')
  RETURNING search_path;
INSERT INTO webgres.routes (method, path, handler)
  VALUES ('GET', '/restored-old', $$SELECT name AS body FROM things$$)
  RETURNING search_path;
RESET check_function_bodies;
RESET search_path;
RESET ROLE;
DROP OWNED BY own_admin;
DROP ROLE own_admin;
DROP SCHEMA own_app CASCADE;
