-- The SQL surface of per-route statistics and the OpenAPI document, on an
-- instance without workers: nothing is counted, everything answers.
CREATE EXTENSION IF NOT EXISTS webgres;
SET client_min_messages = warning;

-- Route patterns as OpenAPI path templates.
SELECT p, webgres.openapi_path(p) FROM (VALUES
  ('/'), ('/users/:handle'), ('/a/:x/b/:y_2'), ('/files/*rest'), ('/static/*'), ('/:only'),
  ('/time:stamp')) AS t(p);

-- No requests yet: no rows, no quantile; the bounds are fixed.
SELECT count(*) FROM webgres.route_stats;
SELECT webgres.route_latency_bounds();
SELECT webgres.route_latency_quantile(1, 0.5) IS NULL AS no_quantile;
SELECT webgres.route_latency_quantile(1, 1.5);
SELECT webgres.route_latency_quantile(1, 'NaN');
SELECT webgres.route_stats_reset();
SELECT webgres.route_stats_reset(42);

-- Who may read and reset.
SELECT has_table_privilege('pg_monitor', 'webgres.route_stats', 'SELECT') AS monitor_reads,
       has_table_privilege('public', 'webgres.route_stats', 'SELECT') AS public_reads,
       has_function_privilege('pg_monitor', 'webgres.route_stats_reset(bigint)', 'EXECUTE') AS monitor_resets;

-- The OpenAPI document of a few routes (rolled back: the other files'
-- routes stay as they were; the id sequence is put back after).
SELECT last_value AS ids_last, is_called AS ids_called FROM webgres.routes_id_seq \gset
BEGIN;
DELETE FROM webgres.routes;
INSERT INTO webgres.routes (method, path, handler, description) VALUES
 ('GET', '/users/:handle', $$SELECT 'u' AS body FROM request$$, E'A user.\nBy handle.'),
 ('POST', '/users', $$SELECT 201 AS status FROM request$$, NULL),
 ('GET', '/home', $$SELECT 'text/html; charset=utf-8' AS content_type, '<p>' AS body$$, NULL),
 (NULL, '/any/*', $$SELECT 'x' AS body$$, NULL);
SELECT d->'openapi' AS openapi, d->'info' AS info, d->'servers' AS servers,
       (SELECT jsonb_agg(k ORDER BY k) FROM jsonb_object_keys(d->'paths') k) AS paths,
       (SELECT jsonb_agg(k ORDER BY k) FROM jsonb_object_keys(d->'paths'->'/any/{rest}') k) AS any_methods,
       d->'paths'->'/users/{handle}'->'get'->'summary' AS summary,
       d->'paths'->'/users/{handle}'->'get'->'parameters' AS parameters,
       d->'paths'->'/home'->'get'->'responses'->'200'->'content' AS home_content,
       d->'paths'->'/users'->'post' ? 'requestBody' AS post_has_body
FROM webgres.openapi(ARRAY['https://api.example.com'], 'Test API', '2.0') AS d;
-- No routes: an empty document, still valid.
DELETE FROM webgres.routes;
SELECT webgres.openapi();
ROLLBACK;
SELECT setval('webgres.routes_id_seq', :ids_last, :'ids_called') IS NOT NULL AS ids_restored;
