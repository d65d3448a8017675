/*
 * pg_compat.h
 *		The differences between the Postgres major versions webgres builds
 *		against, in one place.
 *
 * webgres is written against the newest Postgres it supports (18); for an
 * older one this header supplies the newer names in terms of what that
 * version has, so the code itself holds no version test.  Each entry names
 * the release that changed the interface.  docs/versions.md lists the
 * versions built and tested, and these differences.
 *
 * Include it after the Postgres headers that declare what it maps
 * (executor/executor.h, miscadmin.h, storage/proc.h, storage/latch.h,
 * utils/acl.h, utils/fmgroids.h, utils/guc.h, utils/memutils.h): it only
 * defines names.
 */
#ifndef WEBGRES_PG_COMPAT_H
#define WEBGRES_PG_COMPAT_H

/* shmem_request_hook (core/shmem.c) and MERGE (handler/splice.c) are 15's. */
#if PG_VERSION_NUM < 150000
#error "webgres needs PostgreSQL 15 or later"
#endif

#if PG_VERSION_NUM < 160000

/*
 * 16 keeps GUC values and check hooks' extra data in a memory context of
 * guc.c's and frees them with guc_free() (pfree): a value or extra a check
 * hook makes or replaces must come from guc_malloc() or guc_strdup() and
 * go with guc_free(), all exported from 16 on.  Before, guc.c used
 * malloc(), strdup() and free().  NULL when out of memory, as
 * guc_malloc(LOG, ...) returns.
 */
#define guc_malloc(elevel, size) malloc(size)
#define guc_strdup(elevel, src) strdup(src)
#define guc_free(ptr) free(ptr)

/*
 * 16 checks a privilege on any kind of object with object_aclcheck(); 15
 * had a function per catalog.  webgres checks only functions' EXECUTE this
 * way (handler/simple_eval.c), so classid is always ProcedureRelationId.
 * Include it after utils/acl.h.
 */
#define object_aclcheck(classid, objectid, roleid, mode) \
	pg_proc_aclcheck((objectid), (roleid), (mode))

#endif

#if PG_VERSION_NUM < 180000

/*
 * 18 dropped ExecutorRun()'s execute_once (whether the plan would be run
 * again, which only kept parallel query off): webgres runs each plan once.
 * Include it after executor/executor.h.
 */
#define ExecutorRun(queryDesc, direction, count) \
	ExecutorRun((queryDesc), (direction), (count), true)

/*
 * 18 keeps each attribute's cached offset (with its length and by-value
 * flag) in the descriptor's compact array, TupleDescCompactAttr, and no
 * longer in its pg_attribute copy, where it was before.
 */
typedef struct FormData_pg_attribute CompactAttribute;
#define TupleDescCompactAttr(desc, i) TupleDescAttr((desc), (i))

#endif

#if PG_VERSION_NUM < 170000

/*
 * 17 numbers the backend's PGPROC in MyProcNumber (ProcNumber replaced
 * BackendId) and dropped PGPROC.pgprocno; before, the number was only in
 * the PGPROC.  Valid once MyProc is set.
 */
#define MyProcNumber (MyProc->pgprocno)

/*
 * 17 moved the backend's local transaction id into PGPROC.vxid, beside
 * its proc number.
 */
#define MyLocalTransactionId (MyProc->lxid)

/*
 * 17 gave random() overloads (random(min, max)), so the OID macro of the
 * argument-less one gained the underscore that marks the overloaded name.
 */
#define F_RANDOM_ F_RANDOM

/*
 * 17 ties a WaitEventSet to a resource owner, NULL meaning the session
 * (memory in TopMemoryContext); before, it took the memory context.
 */
#define CreateWaitEventSet(resowner, nevents) \
	CreateWaitEventSet(TopMemoryContext, (nevents))

#else

#define MyLocalTransactionId (MyProc->vxid.lxid)

#endif

#endif							/* WEBGRES_PG_COMPAT_H */
