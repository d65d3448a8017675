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
 * Routes are rows, not catalog objects, so the owner cannot be a
 * pg_shdepend entry: the dependency machinery describes, drops and
 * reassigns objects by catalog class and has no way to reach a row of an
 * extension's table.  Instead a ProcessUtility hook (the library is always
 * preloaded) makes the three commands that care about what a role owns
 * treat routes as owned objects, in the database they run in, as
 * Postgres does for non-shared objects:
 *
 *	DROP ROLE		refused while the role owns routes, with the Postgres error;
 *	DROP OWNED BY	deletes the role's routes;
 *	REASSIGN OWNED	gives them to the new role.
 *
 * A role dropped from another database keeps its routes as before: a route
 * whose owner no longer exists is skipped by the workers, with a warning.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ownership.h"
#include "pattern.h"

PG_FUNCTION_INFO_V1(webgres_paths_overlap);

/* Routes listed in a DROP ROLE error, as Postgres lists dependent objects. */
#define MAX_REPORTED_ROUTES 100

bool		ownership_changing_owner = false;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

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

/* Refuses a non-superuser's route whose path overlaps another owner's route. */
void
ownership_check_path(Relation rel, const char *path, const PathPattern *pattern,
					 Oid owner)
{
	Oid			save_userid;
	int			save_sec_context;
	SPIPlanPtr	plan;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
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

	/* As the table's owner, whom row-level security does not restrict. */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(rel->rd_rel->relowner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	plan = SPI_prepare("SELECT id, method, path, owner::oid FROM webgres.routes "
					   "WHERE owner::oid <> $1", 1, argtypes);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	args[0] = ObjectIdGetDatum(owner);
	rc = SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							  true, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read webgres.routes: %s", SPI_result_code_string(rc));
	SetUserIdAndSecContext(save_userid, save_sec_context);

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

/* REASSIGN OWNED: the roles' routes go to the new role. */
static void
reassign_routes(ReassignOwnedStmt *stmt, Oid relid)
{
	Oid			newrole = get_rolespec_oid(stmt->newrole, false);

	/* The handlers were checked when saved: a new owner changes only privileges. */
	ownership_changing_owner = true;
	PG_TRY();
	{
		run_on_routes(relid, "UPDATE webgres.routes SET owner = $2::regrole "
					  "WHERE owner::oid = ANY ($1)",
					  role_oids(stmt->roles), newrole, SPI_OK_UPDATE);
		SPI_finish();
	}
	PG_FINALLY();
	{
		ownership_changing_owner = false;
	}
	PG_END_TRY();
}

/*
 * Acts on webgres.routes for DROP ROLE (before Postgres does: it refuses),
 * DROP OWNED and REASSIGN OWNED (after: Postgres checks the caller's
 * privileges over each role first).
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

	if (OidIsValid(relid) && tag == T_DropRoleStmt)
		refuse_drop_of_route_owners((DropRoleStmt *) parsetree, relid);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);

	if (!OidIsValid(relid))
		return;
	if (tag == T_DropOwnedStmt)
	{
		run_on_routes(relid, "DELETE FROM webgres.routes WHERE owner::oid = ANY ($1)",
					  role_oids(((DropOwnedStmt *) parsetree)->roles), InvalidOid,
					  SPI_OK_DELETE);
		SPI_finish();
	}
	else if (tag == T_ReassignOwnedStmt)
		reassign_routes((ReassignOwnedStmt *) parsetree, relid);
}

/* Installs the utility hook, once per process. */
void
ownership_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = ownership_ProcessUtility;
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
