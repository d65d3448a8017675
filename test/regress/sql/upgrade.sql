-- Versions: a new database gets the latest, and every older version
-- updates to it.  Runs last: it drops and re-creates the extension.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS webgres CASCADE;

CREATE EXTENSION webgres;
SELECT extversion FROM pg_extension WHERE extname = 'webgres';
SELECT version FROM pg_available_extension_versions WHERE name = 'webgres' ORDER BY version;

-- 1.0 had no sampler; updating adds it, and what was there stays.
DROP EXTENSION webgres;
CREATE EXTENSION webgres VERSION '1.0';
SELECT to_regprocedure('webgres.random_distinct_ints(integer, integer, integer)') IS NULL AS absent;
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/kept', $$SELECT 'k' AS body$$);
CREATE ROLE upgrade_owner;
INSERT INTO webgres.routes (method, path, handler, owner)
  VALUES ('GET', '/owned', $$SELECT 'o' AS body$$, 'upgrade_owner');
ALTER EXTENSION webgres UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'webgres';
SELECT cardinality(webgres.random_distinct_ints(3, 1, 3)) AS drawn;
SELECT path FROM webgres.routes ORDER BY id;
-- 1.3 records the owners of the routes there (none for the bootstrap superuser).
SELECT r.path, d.refobjid::regrole AS owner
  FROM pg_shdepend d JOIN webgres.routes r ON r.id = d.objid
  WHERE d.classid = 'webgres.routes'::regclass AND d.deptype = 'o'
    AND d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database());
-- record_route_owners() records them afresh (after pg_upgrade, say).
SELECT webgres.record_route_owners() AS recorded;
SELECT count(*) AS entries FROM pg_shdepend
  WHERE classid = 'webgres.routes'::regclass AND objid = (SELECT id FROM webgres.routes WHERE path = '/owned');
-- Routes saved before 1.2 run with the default search_path they ran with then.
SELECT path, search_path FROM webgres.routes ORDER BY id;

-- An updated database has exactly what a new one has.
CREATE TEMP TABLE updated AS
  SELECT pg_describe_object(classid, objid, objsubid) AS object
  FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'webgres');
DROP EXTENSION webgres;
CREATE EXTENSION webgres;
SELECT object, 'only after update' AS side FROM (
  SELECT object FROM updated
  EXCEPT
  SELECT pg_describe_object(classid, objid, objsubid)
  FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'webgres')) d
UNION ALL
SELECT object, 'only when new' FROM (
  SELECT pg_describe_object(classid, objid, objsubid) AS object
  FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'webgres')
  EXCEPT
  SELECT object FROM updated) n;

-- Dropping the extension forgot the routes' owner entries: their owner drops.
DROP ROLE upgrade_owner;
