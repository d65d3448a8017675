/*
 * mounts.c
 *		The worker's copy of webgres.static_mounts.
 *
 * A handful of rows, read whole and kept longest prefix first, so that
 * finding a request's mount is a few memcmp()s, and nothing at all when
 * there are no mounts (every TechEmpower request).
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "routes/mounts.h"

static MountTable table;
static MemoryContext mounts_cxt = NULL;
static Oid	mounts_relid = InvalidOid;
static bool mounts_stale = true;

/* Relcache callback: a change to webgres.static_mounts (or to everything). */
static void
mounts_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == mounts_relid)
		mounts_stale = true;
}

/* Registers the invalidation callback. */
void
mounts_init(void)
{
	CacheRegisterRelcacheCallback(mounts_invalidate, (Datum) 0);
}

/* Longest prefix first: the first mount that matches is the most specific. */
static int
mount_cmp(const void *a, const void *b)
{
	const Mount *ma = a;
	const Mount *mb = b;

	if (ma->prefix_len != mb->prefix_len)
		return ma->prefix_len > mb->prefix_len ? -1 : 1;
	return strcmp(ma->prefix, mb->prefix);
}

/* Copies one row into m; false (with a warning) if it cannot be served. */
static bool
read_row(HeapTuple tup, TupleDesc desc, Mount *m)
{
	bool		isnull;

	m->prefix = SPI_getvalue(tup, desc, 1);
	m->directory = SPI_getvalue(tup, desc, 2);
	m->index_file = SPI_getvalue(tup, desc, 3);
	m->spa_fallback = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
	m->dotfiles = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	m->precompressed = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	m->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 7, &isnull));
	m->cache_control = SPI_getvalue(tup, desc, 8);
	m->prefix_len = strcmp(m->prefix, "/") == 0 ? 0 : strlen(m->prefix);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(m->owner)))
	{
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("webgres static mount \"%s\" is ignored: its owner role (OID %u) no longer exists",
						m->prefix, m->owner),
				 errhint("Set the mount's owner to an existing role.")));
		return false;
	}
	return true;
}

/* Reads the table afresh. */
static void
load_mounts(void)
{
	Oid			nsp = get_namespace_oid("webgres", true);
	MemoryContext oldcxt;
	int			rc;

	if (mounts_cxt == NULL)
		mounts_cxt = AllocSetContextCreate(TopMemoryContext, "webgres static mounts",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(mounts_cxt);
	table.nmounts = 0;
	table.mounts = NULL;
	table.generation++;
	mounts_stale = false;

	/* Before version 1.4 there is no such table: no mounts. */
	mounts_relid = OidIsValid(nsp) ? get_relname_relid("static_mounts", nsp) : InvalidOid;
	if (!OidIsValid(mounts_relid))
		return;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute("SELECT prefix, directory, index_file, spa_fallback, dotfiles, "
					 "precompressed, owner::oid, cache_control FROM webgres.static_mounts", true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read webgres.static_mounts: %s", SPI_result_code_string(rc));

	oldcxt = MemoryContextSwitchTo(mounts_cxt);
	table.mounts = palloc0(sizeof(Mount) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		if (read_row(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, &table.mounts[table.nmounts]))
			table.nmounts++;
	}
	MemoryContextSwitchTo(oldcxt);
	SPI_finish();

	if (table.nmounts > 1)
		qsort(table.mounts, table.nmounts, sizeof(Mount), mount_cmp);
	for (int i = 0; i < table.nmounts; i++)
		table.mounts[i].index = i;
}

/* The table, reloaded first if a change was announced. */
MountTable *
mounts_current(void)
{
	Assert(IsTransactionState());
	if (mounts_stale)
		load_mounts();
	return &table;
}

/* The table as last loaded, or NULL when stale. */
MountTable *
mounts_peek(void)
{
	return mounts_stale ? NULL : &table;
}

/* The first (longest) mount whose prefix covers the path. */
Mount *
mounts_find(MountTable *t, const char *path, size_t len)
{
	for (int i = 0; i < t->nmounts; i++)
	{
		Mount	   *m = &t->mounts[i];

		if (len >= m->prefix_len && memcmp(path, m->prefix, m->prefix_len) == 0 &&
			(len == m->prefix_len || path[m->prefix_len] == '/'))
			return m;
	}
	return NULL;
}
