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
-- 1.4 added compress (true by default); a route turned it off there.
ALTER EXTENSION webgres UPDATE TO '1.4';
INSERT INTO webgres.routes (method, path, handler, compress)
  VALUES ('GET', '/plain', $$SELECT 'p' AS body$$, false);
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
-- 1.5: routes left at the old default compress by the new one (NULL: not
-- for requests with credentials); one that had turned it off keeps it off.
SELECT path, compress FROM webgres.routes ORDER BY id;

-- An updated database has exactly what a new one has: the same objects,
-- each with the same definition.  webgres_definitions describes every
-- object of the extension as (kind, object, definition) rows: functions as
-- pg_get_functiondef gives them (aggregates as pg_aggregate describes them),
-- with their privileges and comments;
-- tables and views with their columns (position among the live columns,
-- type, default, nullability, identity), constraints, indexes, triggers
-- (and whether they fire), policies, row security, privileges, comments
-- and view definitions; sequences; the schema's privileges; and which
-- tables are dumped.  Only differences are printed, so the expected output
-- stays empty as objects are added (to both scripts).
CREATE TEMP VIEW webgres_definitions AS
WITH members AS (
  SELECT classid, objid, objsubid FROM pg_depend
  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'webgres')),
rels AS (
  SELECT c.oid::regclass::text AS name, c.* FROM pg_class c
  WHERE c.oid IN (SELECT objid FROM members WHERE classid = 'pg_class'::regclass)),
procs AS (
  SELECT p.oid::regprocedure::text AS name, p.* FROM pg_proc p
  WHERE p.oid IN (SELECT objid FROM members WHERE classid = 'pg_proc'::regclass))
SELECT 'member' AS kind, pg_describe_object(classid, objid, objsubid) AS object, '' AS definition
  FROM members
UNION ALL
SELECT 'function', name, pg_get_functiondef(oid) FROM procs WHERE prokind <> 'a'
UNION ALL
SELECT 'aggregate', p.name,
       format('(%s) transition %s state %s final %s modify %s volatility %s parallel %s',
         pg_get_function_arguments(p.oid), a.aggtransfn, a.aggtranstype::regtype,
         a.aggfinalfn, a.aggfinalmodify, p.provolatile, p.proparallel)
  FROM procs p JOIN pg_aggregate a ON a.aggfnoid = p.oid
UNION ALL
SELECT 'function privileges', name, coalesce(proacl::text, 'default') FROM procs
UNION ALL
SELECT 'function comment', name, obj_description(oid, 'pg_proc') FROM procs
  WHERE obj_description(oid, 'pg_proc') IS NOT NULL
UNION ALL
SELECT 'relation', name, format('kind %s, row security %s, forced %s, replica identity %s',
    relkind, relrowsecurity, relforcerowsecurity, relreplident)
  FROM rels
UNION ALL
SELECT 'relation privileges', name, coalesce(relacl::text, 'default') FROM rels
UNION ALL
SELECT 'relation comment', name, obj_description(oid, 'pg_class') FROM rels
  WHERE obj_description(oid, 'pg_class') IS NOT NULL
UNION ALL
SELECT 'view', name, pg_get_viewdef(oid) FROM rels WHERE relkind IN ('v', 'm')
UNION ALL
SELECT 'column', r.name || '.' || a.attname,
    format('position %s, %s, not null %s, default %s, identity %s, generated %s, privileges %s, comment %s',
      row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum),
      format_type(a.atttypid, a.atttypmod), a.attnotnull,
      coalesce(pg_get_expr(d.adbin, d.adrelid), 'none'),
      nullif(a.attidentity, ''), nullif(a.attgenerated, ''),
      coalesce(a.attacl::text, 'default'), coalesce(col_description(r.oid, a.attnum), 'none'))
  FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = r.oid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint', r.name || ' ' || c.conname,
    format('%s%s', pg_get_constraintdef(c.oid), CASE WHEN c.convalidated THEN '' ELSE ' (not validated)' END)
  FROM rels r JOIN pg_constraint c ON c.conrelid = r.oid
UNION ALL
SELECT 'index', r.name || ' ' || i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
  FROM rels r JOIN pg_index i ON i.indrelid = r.oid
UNION ALL
SELECT 'trigger', r.name || ' ' || t.tgname, format('%s (enabled %s)', pg_get_triggerdef(t.oid), t.tgenabled)
  FROM rels r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
UNION ALL
SELECT 'policy', r.name || ' ' || p.polname,
    format('for %s, permissive %s, to %s, using %s, with check %s', p.polcmd, p.polpermissive,
      (SELECT string_agg(CASE WHEN rl = 0 THEN 'public' ELSE rl::regrole::text END, ', ' ORDER BY rl)
         FROM unnest(p.polroles) rl),
      pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
  FROM rels r JOIN pg_policy p ON p.polrelid = r.oid
UNION ALL
SELECT 'sequence', r.name, format('%s start %s increment %s min %s max %s cache %s cycle %s',
    format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
  FROM rels r JOIN pg_sequence s ON s.seqrelid = r.oid
UNION ALL
SELECT 'dumped', c.oid::regclass::text, coalesce(e.extcondition[array_position(e.extconfig, c.oid)], '')
  FROM pg_extension e JOIN pg_class c ON c.oid = ANY (e.extconfig) WHERE e.extname = 'webgres'
UNION ALL
SELECT 'schema privileges', n.nspname, coalesce(n.nspacl::text, 'default')
  FROM pg_namespace n WHERE n.nspname = 'webgres';

CREATE TEMP TABLE updated AS SELECT * FROM webgres_definitions;
-- Each kind of definition was found (lists those that were not).
SELECT kind AS not_described FROM (VALUES ('member'), ('function'), ('aggregate'), ('function privileges'),
    ('function comment'), ('relation'), ('relation privileges'), ('relation comment'), ('view'),
    ('column'), ('constraint'), ('index'), ('trigger'), ('policy'), ('sequence'), ('dumped'),
    ('schema privileges')) k(kind)
  WHERE NOT EXISTS (SELECT FROM updated u WHERE u.kind = k.kind);
DROP EXTENSION webgres;
CREATE EXTENSION webgres;
CREATE TEMP TABLE fresh AS SELECT * FROM webgres_definitions;
SELECT 'only after update' AS side, kind, object, definition FROM (
  SELECT * FROM updated EXCEPT SELECT * FROM fresh) u
UNION ALL
SELECT 'only when new', kind, object, definition FROM (
  SELECT * FROM fresh EXCEPT SELECT * FROM updated) n
ORDER BY kind, object, side;

-- Dropping the extension forgot the routes' owner entries: their owner drops.
DROP ROLE upgrade_owner;
