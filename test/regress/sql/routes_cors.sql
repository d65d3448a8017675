-- The CORS columns of webgres.routes: entries checked when a route is
-- saved, and never credentials with any origin.
CREATE EXTENSION IF NOT EXISTS webgres;
SET client_min_messages = warning;

-- Well-formed lists are taken as written; NULL columns mean the settings.
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins, cors_allowed_methods,
	cors_allowed_headers, cors_exposed_headers, cors_allow_credentials, cors_max_age)
VALUES ('GET', '/cors/a', $$SELECT 'a' AS body$$,
	'{https://app.example.com,https://*.example.org,http://localhost:*,http://[::1]:8080}',
	'{GET,put}', '{Content-Type,X-Request-Id}', '{X-Total-Count}', true, 600)
RETURNING cors_allowed_origins, cors_allowed_methods, cors_allow_credentials, cors_max_age;
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/any', $$SELECT 'b' AS body$$, '{*}') RETURNING cors_allowed_origins;
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/none', $$SELECT 'c' AS body$$, '{}') RETURNING cors_allowed_origins;

-- Any origin with credentials: refused, by the trigger with a reason ...
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins, cors_allow_credentials)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{https://a.example.com,*}', true);
UPDATE webgres.routes SET cors_allow_credentials = true WHERE path = '/cors/any';
-- ... and by the constraint when the trigger does not run.
-- (terse: the failing row would list every column)
\set VERBOSITY terse
SET session_replication_role = replica;
INSERT INTO webgres.routes (method, path, handler, owner, search_path, cors_allowed_origins, cors_allow_credentials)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, current_user::regrole, 'public', '{*}', true);
RESET session_replication_role;
\set VERBOSITY default

-- Entries that are not origins, methods or header names.
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{https://app.example.com/}');
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{app.example.com}');
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{"null"}');
INSERT INTO webgres.routes (method, path, handler, cors_allowed_origins)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{https://a.example.com,NULL}');
INSERT INTO webgres.routes (method, path, handler, cors_allowed_methods)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{"GET POST"}');
INSERT INTO webgres.routes (method, path, handler, cors_allowed_headers)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{*}');
INSERT INTO webgres.routes (method, path, handler, cors_exposed_headers)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, '{"X-A: b"}');
\set VERBOSITY terse
INSERT INTO webgres.routes (method, path, handler, cors_max_age)
VALUES ('GET', '/cors/bad', $$SELECT 'x' AS body$$, 86401);
\set VERBOSITY default

SELECT count(*) AS refused_saved FROM webgres.routes WHERE path = '/cors/bad';
DELETE FROM webgres.routes WHERE path LIKE '/cors/%';
