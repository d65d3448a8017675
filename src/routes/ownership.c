/*
 * ownership.c
 *		Paths belong to the roles whose routes answer them.
 *
 * Routing is global: whichever route matches first answers, whoever owns
 * it.  Row-level security keeps a role from reading or editing another's
 * rows, but not from saving a route that shadows, extends or catches
 * another role's paths.  So a role that is not a superuser may save only a
 * route whose path pattern no route of another owner can match (methods do
 * not matter: another method on someone's path changes what that path
 * answers).  Superusers may save anything; overlapping routes then answer
 * in the usual priority order.
 *
 * A route's owner is recorded in pg_shdepend as Postgres records the owner
 * of any object: an owner entry whose depender is (webgres.routes, route
 * id), kept by row triggers on the table.  So DROP ROLE of a route owner is
 * refused from every database of the cluster, by Postgres itself from the
 * others ("N objects in database ...").  A TRUNCATE forgets the entries of
 * its routes, and an object access hook those of every route when the
 * table itself is dropped (DROP EXTENSION, DROP SCHEMA ... CASCADE): left
 * behind, they would keep their owners forever.
 *
 * Postgres cannot describe, drop or reassign such an entry in the database
 * it lives in (it knows only catalog classes), so a ProcessUtility hook
 * (the library is always preloaded) handles the routes before Postgres sees
 * the three commands that care about what a role owns:
 *
 *	DROP ROLE		refused while the role owns routes, naming them;
 *	DROP OWNED BY	deletes the role's routes;
 *	REASSIGN OWNED	gives them to the new role.
 *
 * Any entry of those roles left then (a route deleted with the triggers
 * disabled) is forgotten, so that Postgres never meets one.
 *
 * A route saved before version 1.3 whose owner had been dropped from
 * another database keeps its dangling owner: the workers skip it, with a
 * warning.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_shdepend.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "routes/ownership.h"
#include "parse/pattern.h"

PG_FUNCTION_INFO_V1(webgres_paths_overlap);
PG_FUNCTION_INFO_V1(webgres_route_owner_recorded);
PG_FUNCTION_INFO_V1(webgres_route_owners_forgotten);
PG_FUNCTION_INFO_V1(webgres_route_owners_record_all);

/* Routes listed in a DROP ROLE error, as Postgres lists dependent objects. */
#define MAX_REPORTED_ROUTES 100

bool		ownership_changing_owner = false;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access = NULL;

static void forget_route_owners(Oid relid, List *roles);

/* The OID of webgres.routes in this database, or InvalidOid. */
static Oid
routes_relid(void)
{
	Oid			nsp;

	if (!OidIsValid(get_extension_oid("webgres", true)))
		return InvalidOid;
	nsp = get_namespace_oid("webgres", true);
	return OidIsValid(nsp) ? get_relname_relid("routes", nsp) : InvalidOid;
}

/* The owner of relation relid. */
static Oid
rel_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/* Compiles a pattern already checked on its way in; false if it no longer compiles. */
static bool
compile_stored(const char *path, PathPattern *pattern)
{
	char	   *error;

	return path != NULL && pattern_compile(path, pattern, &error);
}

/*
 * Runs query, which selects the rows of table whose owner is not $1, as
 * table_owner and with a fresh snapshot (committed saves the transaction's
 * own may not see); the rows are in SPI_tuptable.  Inside an SPI
 * connection.
 */
static void
select_others(const char *query, Oid owner, const char *table, Oid table_owner)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	SPIPlanPtr	plan;
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	/* As the table's owner, whom row-level security does not restrict. */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(table_owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	if ((plan = SPI_prepare(query, 1, argtypes)) == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	args[0] = ObjectIdGetDatum(owner);
	rc = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							  true, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read %s: %s", table, SPI_result_code_string(rc));
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/*
 * Refuses a route that a static mount of another owner covers: routes win
 * over mounts (pipeline.c), so such a route would take paths from the
 * mount's owner.  Runs inside ownership_check_path's SPI connection; reads
 * as the routes table's owner (the extension's), as only superusers may
 * read webgres.static_mounts.
 */
static void
check_against_mounts(const char *path, const PathPattern *pattern, Oid owner, Oid table_owner)
{
	/* Before version 1.4 there are no mounts. */
	if (!OidIsValid(get_relname_relid("static_mounts", get_namespace_oid("webgres", false))))
		return;
	select_others("SELECT prefix, owner::oid FROM webgres.static_mounts WHERE owner::oid <> $1",
				  owner, "webgres.static_mounts", table_owner);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *prefix = SPI_getvalue(tup, desc, 1);
		PathPattern exact;
		PathPattern below;
		char	   *witness = NULL;
		char	   *owner_name;

		if (!(compile_stored(prefix, &exact) && pattern_overlaps(pattern, &exact, &witness)) &&
			!(compile_stored(psprintf("%s/*", strcmp(prefix, "/") == 0 ? "" : prefix), &below) &&
			  pattern_overlaps(pattern, &below, &witness)))
			continue;
		owner_name = GetUserNameFromId(DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull)), true);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("route path \"%s\" is under static mount \"%s\" of role \"%s\"",
						path, prefix, owner_name ? owner_name : "(dropped)"),
				 errdetail("A request for \"%s\" would be taken from the mount's files.", witness),
				 errhint("A path belongs to one role: choose a path outside the mount, or ask a superuser to save the route.")));
	}
}

/* Refuses a non-superuser's route whose path overlaps another owner's route. */
void
ownership_check_path(Relation rel, const char *path, const PathPattern *pattern,
					 Oid owner)
{
	int			rc;

	if (superuser())
		return;

	/*
	 * One save at a time is checked against everything committed before
	 * it: the lock is held to the end of the transaction, and the rows are
	 * read with a fresh snapshot (the transaction's own may be older, under
	 * REPEATABLE READ).  A lock on the table itself would be the wrong
	 * tool: every INSERT already holds ROW EXCLUSIVE, which SHARE ROW
	 * EXCLUSIVE conflicts with, so two concurrent saves would deadlock
	 * instead of queueing.  Postgres locks relations under their own lock
	 * tag, so this object lock on webgres.routes is webgres's alone.
	 */
	LockDatabaseObject(RelationRelationId, RelationGetRelid(rel), 0, ExclusiveLock);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	select_others("SELECT id, method, path, owner::oid FROM webgres.routes WHERE owner::oid <> $1",
				  owner, "webgres.routes", rel->rd_rel->relowner);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *other_path = SPI_getvalue(tup, desc, 3);
		PathPattern other;
		char	   *witness;
		char	   *other_method;
		char	   *owner_name;

		if (!compile_stored(other_path, &other) ||
			!pattern_overlaps(pattern, &other, &witness))
			continue;
		other_method = SPI_getvalue(tup, desc, 2);
		owner_name = GetUserNameFromId(DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull)), true);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("route path \"%s\" overlaps route %s %s of role \"%s\"",
						path, other_method ? other_method : "*", other_path,
						owner_name ? owner_name : "(dropped)"),
				 errdetail("A request for \"%s\" would match both.", witness),
				 errhint("A path belongs to the role whose routes answer it: choose one that no route of another role can match, or ask a superuser to save the route.")));
	}
	check_against_mounts(path, pattern, owner, rel->rd_rel->relowner);
	SPI_finish();
}

/* Runs sql as the routes table's owner with $1 = the role OIDs in roles (and $2 = extra). */
static uint64
run_on_routes(Oid relid, const char *sql, List *roles, Oid extra, int expected)
{
	Oid			save_userid;
	int			save_sec_context;
	Datum	   *elems;
	Datum		args[2];
	Oid			argtypes[2] = {OIDARRAYOID, OIDOID};
	ListCell   *lc;
	int			n = 0;
	int			rc;
	uint64		processed;

	elems = palloc(sizeof(Datum) * Max(list_length(roles), 1));
	foreach(lc, roles)
		elems[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	args[0] = PointerGetDatum(construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	args[1] = ObjectIdGetDatum(extra);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(rel_owner(relid), save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute_with_args(sql, OidIsValid(extra) ? 2 : 1, argtypes, args, NULL,
							   expected == SPI_OK_SELECT, 0);
	if (rc != expected)
		elog(ERROR, "could not run \"%s\": %s", sql, SPI_result_code_string(rc));
	processed = SPI_processed;
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return processed;
}

/* DROP ROLE: refused, as for any owned object, while a role owns routes. */
static void
refuse_drop_of_route_owners(DropRoleStmt *stmt, Oid relid)
{
	ListCell   *lc;

	/* Postgres refuses those who may not drop roles, without naming anything. */
	if (!has_createrole_privilege(GetUserId()))
		return;

	foreach(lc, stmt->roles)
	{
		RoleSpec   *spec = lfirst(lc);
		Oid			roleid;
		StringInfoData detail;
		uint64		n;

		if (spec->roletype != ROLESPEC_CSTRING)
			continue;			/* DROP ROLE refuses CURRENT_USER and the like itself */
		roleid = get_role_oid(spec->rolename, true);
		if (!OidIsValid(roleid))
			continue;
		n = run_on_routes(relid,
						  "SELECT coalesce(method, '*'), path, id FROM webgres.routes "
						  "WHERE owner::oid = ANY ($1) ORDER BY id",
						  list_make1_oid(roleid), InvalidOid, SPI_OK_SELECT);
		if (n == 0)
		{
			SPI_finish();
			/* Entries left by routes that went without the triggers: see drop_owned_routes. */
			forget_route_owners(relid, list_make1_oid(roleid));
			CommandCounterIncrement();
			continue;
		}
		initStringInfo(&detail);
		for (uint64 i = 0; i < n && i < MAX_REPORTED_ROUTES; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;

			appendStringInfo(&detail, "%sowner of webgres route %s %s (id %s)",
							 i > 0 ? "\n" : "",
							 SPI_getvalue(tup, desc, 1), SPI_getvalue(tup, desc, 2),
							 SPI_getvalue(tup, desc, 3));
		}
		if (n > MAX_REPORTED_ROUTES)
			appendStringInfo(&detail, "\nand %llu other routes",
							 (unsigned long long) (n - MAX_REPORTED_ROUTES));
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("role \"%s\" cannot be dropped because some objects depend on it",
						spec->rolename),
				 errdetail_internal("%s", detail.data),
				 errhint("DROP OWNED BY or REASSIGN OWNED BY the role first: both act on its routes too.")));
	}
}

/* The OIDs of the roles a DROP OWNED or REASSIGN OWNED names. */
static List *
role_oids(List *specs)
{
	List	   *oids = NIL;
	ListCell   *lc;

	foreach(lc, specs)
		oids = lappend_oid(oids, get_rolespec_oid(lfirst(lc), false));
	return oids;
}

/* DROP OWNED: the roles' routes are deleted, with their pg_shdepend entries. */
static void
drop_owned_routes(DropOwnedStmt *stmt, Oid relid)
{
	List	   *roles = role_oids(stmt->roles);
	ListCell   *lc;

	/* Postgres' own check, made first since the routes go before it runs. */
	foreach(lc, roles)
	{
		if (!has_privs_of_role(GetUserId(), lfirst_oid(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to drop objects")));
	}

	run_on_routes(relid, "DELETE FROM webgres.routes WHERE owner::oid = ANY ($1)",
				  roles, InvalidOid, SPI_OK_DELETE);
	SPI_finish();

	/*
	 * Any entry left is one whose route went without the row triggers (with
	 * them disabled): Postgres would fail on its class it does not know.
	 */
	forget_route_owners(relid, roles);
	CommandCounterIncrement();
}

/* Gives the routes of roles to newrole. */
static void
move_routes(Oid relid, List *roles, Oid newrole)
{
	/* The handlers were checked when saved: a new owner changes only privileges. */
	ownership_changing_owner = true;
	PG_TRY();
	{
		run_on_routes(relid, "UPDATE webgres.routes SET owner = $2::regrole "
					  "WHERE owner::oid = ANY ($1)",
					  roles, newrole, SPI_OK_UPDATE);
		SPI_finish();
	}
	PG_FINALLY();
	{
		ownership_changing_owner = false;
	}
	PG_END_TRY();
}

/* REASSIGN OWNED: the roles' routes, and their pg_shdepend entries, go to the new role. */
static void
reassign_routes(ReassignOwnedStmt *stmt, Oid relid)
{
	List	   *roles = role_oids(stmt->roles);
	ListCell   *lc;
	Oid			newrole;

	/* Postgres' own checks, made first since the routes move before they run. */
	foreach(lc, roles)
	{
		if (!has_privs_of_role(GetUserId(), lfirst_oid(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to reassign objects")));
	}
	newrole = get_rolespec_oid(stmt->newrole, false);
	if (!has_privs_of_role(GetUserId(), newrole))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to reassign objects")));

	move_routes(relid, roles, newrole);
	/* As for DROP OWNED, no entry of the roles may remain for Postgres. */
	forget_route_owners(relid, roles);
	CommandCounterIncrement();
}

/*
 * Acts on webgres.routes for DROP ROLE, DROP OWNED and REASSIGN OWNED
 * before Postgres does: it refuses the first while routes remain, and
 * would fail on the routes' pg_shdepend entries in the other two, whose
 * class it does not know.
 */
static void
ownership_ProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
						 ProcessUtilityContext context, ParamListInfo params,
						 QueryEnvironment *queryEnv, DestReceiver *dest,
						 QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	NodeTag		tag = nodeTag(parsetree);
	Oid			relid = InvalidOid;

	if ((tag == T_DropRoleStmt || tag == T_DropOwnedStmt || tag == T_ReassignOwnedStmt) &&
		IsTransactionState())
		relid = routes_relid();

	if (OidIsValid(relid))
	{
		if (tag == T_DropRoleStmt)
			refuse_drop_of_route_owners((DropRoleStmt *) parsetree, relid);
		else if (tag == T_DropOwnedStmt)
			drop_owned_routes((DropOwnedStmt *) parsetree, relid);
		else
			reassign_routes((ReassignOwnedStmt *) parsetree, relid);
	}

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/*
 * Deletes the pg_shdepend entries of the routes of relid (webgres.routes) in
 * this database: of every route when roles is NIL, else of those roles'.
 */
static void
forget_route_owners(Oid relid, List *roles)
{
	Relation	sdep = table_open(SharedDependRelationId, RowExclusiveLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key[0], Anum_pg_shdepend_dbid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(MyDatabaseId));
	ScanKeyInit(&key[1], Anum_pg_shdepend_classid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(sdep, SharedDependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_shdepend form = (Form_pg_shdepend) GETSTRUCT(tuple);

		if (roles == NIL || list_member_oid(roles, form->refobjid))
			CatalogTupleDelete(sdep, &tuple->t_self);
	}
	systable_endscan(scan);
	table_close(sdep, RowExclusiveLock);
}

/* True if relid is webgres.routes. */
static bool
is_routes_table(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	bool		result;

	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_class) GETSTRUCT(tuple);
	result = form->relkind == RELKIND_RELATION &&
		strcmp(NameStr(form->relname), "routes") == 0 &&
		form->relnamespace == get_namespace_oid("webgres", true);
	ReleaseSysCache(tuple);
	return result;
}

/*
 * Dropping webgres.routes (DROP EXTENSION, DROP SCHEMA ... CASCADE) drops
 * the routes' pg_shdepend entries: left behind, they would keep their
 * owners from ever being dropped.
 */
static void
ownership_object_access(ObjectAccessType access, Oid classId, Oid objectId,
						int subId, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		is_routes_table(objectId))
		forget_route_owners(objectId, NIL);
}

/*
 * The id of a route as the object id of its pg_shdepend entry; false if it
 * does not fit one.
 */
static bool
route_id_as_oid(HeapTuple tuple, TupleDesc desc, int att_id, Oid *oid, int64 *id)
{
	bool		isnull;

	*id = DatumGetInt64(SPI_getbinval(tuple, desc, att_id, &isnull));
	*oid = (Oid) *id;
	return !isnull && *id >= 1 && *id <= (int64) OID_MAX;
}

/* Refuses a route whose id cannot name its pg_shdepend entry; returns that Oid. */
static Oid
checked_route_oid(HeapTuple tuple, TupleDesc desc, int att_id)
{
	Oid			oid;
	int64		id;

	if (!route_id_as_oid(tuple, desc, att_id, &oid, &id))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("route id %lld is out of range", (long long) id),
				 errdetail("Route ids lie between 1 and %u, so that the route's owner can be recorded like the owner of any object.",
						   (unsigned int) OID_MAX)));
	return oid;
}

/* The owner column of a routes row. */
static Oid
route_owner(HeapTuple tuple, TupleDesc desc, int att_owner)
{
	bool		isnull;

	return DatumGetObjectId(SPI_getbinval(tuple, desc, att_owner, &isnull));
}

/*
 * AFTER INSERT OR UPDATE OR DELETE FOR EACH ROW on webgres.routes: keeps the
 * route's owner entry in pg_shdepend (none for the bootstrap superuser,
 * which Postgres never records).  After the row is stored, so that a row an
 * INSERT ... ON CONFLICT DO NOTHING skips gets none.
 */
Datum
webgres_route_owner_recorded(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	Oid			relid;
	int			att_id,
				att_owner;
	Oid			oldoid;
	int64		oldid;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "webgres_route_owner_recorded must be fired AFTER ... FOR EACH ROW");
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	relid = RelationGetRelid(rel);
	att_id = SPI_fnumber(desc, "id");
	att_owner = SPI_fnumber(desc, "owner");
	if (att_id <= 0 || att_owner <= 0)
		elog(ERROR, "webgres.routes has no id or owner column");

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		recordDependencyOnOwner(relid, checked_route_oid(trigdata->tg_trigtuple, desc, att_id),
								route_owner(trigdata->tg_trigtuple, desc, att_owner));
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		/* A row whose id never fitted never had an entry. */
		if (route_id_as_oid(trigdata->tg_trigtuple, desc, att_id, &oldoid, &oldid))
			deleteSharedDependencyRecordsFor(relid, oldoid, 0);
	}
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		HeapTuple	newtuple = trigdata->tg_newtuple;
		Oid			newoid = checked_route_oid(newtuple, desc, att_id);
		Oid			newowner = route_owner(newtuple, desc, att_owner);
		bool		fits = route_id_as_oid(trigdata->tg_trigtuple, desc, att_id, &oldoid, &oldid);

		if (!fits || oldoid != newoid)
		{
			if (fits)
				deleteSharedDependencyRecordsFor(relid, oldoid, 0);
			recordDependencyOnOwner(relid, newoid, newowner);
		}
		else if (route_owner(trigdata->tg_trigtuple, desc, att_owner) != newowner)
			changeDependencyOnOwner(relid, newoid, newowner);
	}
	return PointerGetDatum(NULL);
}

/*
 * AFTER TRUNCATE on webgres.routes: the routes are gone without row
 * triggers, so their owner entries go here.
 */
Datum
webgres_route_owners_forgotten(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		elog(ERROR, "webgres_route_owners_forgotten must be fired AFTER TRUNCATE");
	forget_route_owners(RelationGetRelid(trigdata->tg_relation), NIL);
	return PointerGetDatum(NULL);
}

/*
 * record_route_owners(): records afresh the owner entry of every route, for
 * routes saved before the entries were kept or loaded without the triggers,
 * and returns how many it recorded.  A route whose owner no longer exists,
 * or is the bootstrap superuser, gets none.
 */
Datum
webgres_route_owners_record_all(PG_FUNCTION_ARGS)
{
	Oid			relid = routes_relid();
	int64		recorded = 0;
	int			rc;

	if (!OidIsValid(relid))
		elog(ERROR, "webgres.routes does not exist");
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to record route owners")));
	forget_route_owners(relid, NIL);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute("SELECT r.id, r.owner::oid FROM webgres.routes r "
					 "WHERE EXISTS (SELECT FROM pg_catalog.pg_authid a WHERE a.oid = r.owner::oid) "
					 "ORDER BY r.id", true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read webgres.routes: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Oid			owner = route_owner(tuple, desc, 2);

		recordDependencyOnOwner(relid, checked_route_oid(tuple, desc, 1), owner);
		if (!IsPinnedObject(AuthIdRelationId, owner))
			recorded++;
	}
	SPI_finish();
	PG_RETURN_INT64(recorded);
}

/* Installs the utility and object access hooks, once per process. */
void
ownership_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = ownership_ProcessUtility;
	prev_object_access = object_access_hook;
	object_access_hook = ownership_object_access;
}

/* paths_overlap(a, b): true if some request path matches both patterns. */
Datum
webgres_paths_overlap(PG_FUNCTION_ARGS)
{
	char	   *a = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *b = text_to_cstring(PG_GETARG_TEXT_PP(1));
	PathPattern pa,
				pb;
	char	   *error;

	if (!pattern_compile(a, &pa, &error) || !pattern_compile(b, &pb, &error))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", error),
				 errhint("Write paths like /users/:handle or /static/*.")));
	PG_RETURN_BOOL(pattern_overlaps(&pa, &pb, NULL));
}
