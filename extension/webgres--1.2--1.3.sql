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

-- Routes saved before 1.3 get their entries now (but for a route whose
-- owner was dropped from another database meanwhile: it has none to get).
CREATE FUNCTION webgres.record_route_owners() RETURNS bigint
	LANGUAGE c AS 'MODULE_PATHNAME', 'webgres_route_owners_record_all';
SELECT webgres.record_route_owners();
DROP FUNCTION webgres.record_route_owners();
