/*
 * ownership.h
 *		Paths belong to the roles whose routes answer them; routes follow
 *		DROP ROLE, DROP OWNED and REASSIGN OWNED like owned objects.
 */
#ifndef WEBGRES_OWNERSHIP_H
#define WEBGRES_OWNERSHIP_H

#include "utils/relcache.h"

#include "parse/pattern.h"

/*
 * True while REASSIGN OWNED moves routes to another role: the routes
 * trigger then leaves their handlers unchecked.
 */
extern bool ownership_changing_owner;

/*
 * Refuses (unless the current user is a superuser) a route of owner whose
 * path pattern overlaps a route of another owner in rel (webgres.routes).
 * Holds a lock to the end of the transaction so that concurrent saves are
 * checked one after the other.
 */
extern void ownership_check_path(Relation rel, const char *path,
								 const PathPattern *pattern, Oid owner);

/* Installs the utility and object access hooks; from _PG_init. */
extern void ownership_init(void);

#endif
