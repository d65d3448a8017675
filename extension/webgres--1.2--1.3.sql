-- webgres 1.2 to 1.3

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.3'" to load this file. \quit

-- ==== routes: owners recorded like the owners of any object ====

-- Each route's owner is a pg_shdepend owner entry (depender: webgres.routes
-- and the route id), so that DROP ROLE of a route owner is refused from
-- every database of the cluster, not only from this one.  Row triggers
-- keep the entries; a TRUNCATE forgets them all.  Dropping the table
-- (DROP EXTENSION) forgets them too: the library does that.
CREATE FUNCTION webgres.route_owner_recorded() RETURNS trigger
	LANGUAGE c AS 'MODULE_PATHNAME', 'webgres_route_owner_recorded';
CREATE TRIGGER route_owner_recorded AFTER INSERT OR UPDATE OR DELETE ON webgres.routes
	FOR EACH ROW EXECUTE FUNCTION webgres.route_owner_recorded();

CREATE FUNCTION webgres.route_owners_forgotten() RETURNS trigger
	LANGUAGE c AS 'MODULE_PATHNAME', 'webgres_route_owners_forgotten';
CREATE TRIGGER route_owners_forgotten AFTER TRUNCATE ON webgres.routes
	FOR EACH STATEMENT EXECUTE FUNCTION webgres.route_owners_forgotten();

-- Bookkeeping, not a check: the entries follow the rows under
-- session_replication_role = replica too (logical replication applying).
ALTER TABLE webgres.routes ENABLE ALWAYS TRIGGER route_owner_recorded;
ALTER TABLE webgres.routes ENABLE ALWAYS TRIGGER route_owners_forgotten;

-- Records the owner entry of every route afresh: for the routes saved
-- before 1.3 (below), and after anything that loads routes without the
-- triggers (pg_upgrade, a restore with --disable-triggers).
CREATE FUNCTION webgres.record_route_owners() RETURNS bigint
	LANGUAGE c AS 'MODULE_PATHNAME', 'webgres_route_owners_record_all';
REVOKE ALL ON FUNCTION webgres.record_route_owners() FROM PUBLIC;
COMMENT ON FUNCTION webgres.record_route_owners() IS
  'Records afresh in pg_shdepend the owner of every route (but the bootstrap superuser, and roles that no longer exist); returns how many. Superusers only.';

-- Routes saved before 1.3 get their entries now.
SELECT webgres.record_route_owners();
