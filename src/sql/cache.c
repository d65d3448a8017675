/*
 * cache.c - per-process read-through caches of jsonb values
 *
 * See cache.h for the contract. In short:
 *
 *   SELECT webgres.cache_get('world', id::text,
 *            loader => 'SELECT to_jsonb(w) FROM world w WHERE id = $1::int',
 *            max_entries => 10000, ttl => '1 hour');
 *
 * returns the cached value for the key, or runs the loader with the key as
 * $1 (type text), keeps its first row's single json/jsonb column and returns
 * it. A loader that returns no row (or NULL) makes cache_get return NULL and
 * nothing is cached.
 *
 * Layout: a registry (dynahash keyed by role and cache name) of Cache
 * structs; each Cache has a dynahash of entries keyed by the key's bytes and
 * a doubly linked list of the same entries, most recently used first. Keys
 * and values are palloc'd in the cache's own memory context.
 */
#include "postgres.h"

#include "sql/cache.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(webgres_cache_get);
PG_FUNCTION_INFO_V1(webgres_cache_stats);
PG_FUNCTION_INFO_V1(webgres_cache_reset);

/* An entry's key: the bytes of the text key (not NUL-terminated). */
typedef struct CacheKey
{
	const char *data;
	int			len;
} CacheKey;

typedef struct CacheEntry
{
	CacheKey	key;			/* hash key: must be first */
	dlist_node	lru;			/* position in Cache.lru */
	TimestampTz loaded_at;
	Jsonb	   *value;
} CacheEntry;

/* Registry key: a cache belongs to the role that uses it. */
typedef struct CacheId
{
	Oid			userid;
	char		name[NAMEDATALEN];
} CacheId;

typedef struct Cache
{
	CacheId		id;				/* hash key: must be first */
	MemoryContext cxt;			/* entries, their keys and values */
	HTAB	   *entries;
	dlist_head	lru;			/* most recently used at the head */
	int64		count;

	/* definition, as last given to cache_get */
	char	   *loader;			/* in cache_registry_cxt */
	char	   *preload;		/* in cache_registry_cxt; NULL if none */
	int32		max_entries;
	int64		ttl_us;			/* -1: entries never expire */
	Interval	ttl;
	SPIPlanPtr	loader_plan;	/* prepared on first miss; NULL before */
	bool		preload_done;	/* preload has run since the last flush */
	bool		busy;			/* a load is running: no flush, no reset */
	const char *running;		/* what runs now, for error context */

	/* counters, since the cache was created */
	int64		hits;
	int64		misses;
	int64		preloaded;		/* entries filled by the preload query */
	int64		evicted;		/* dropped for max_entries */
	int64		expired;		/* dropped for ttl */
} Cache;

static MemoryContext cache_registry_cxt = NULL;
static HTAB *cache_registry = NULL;

/* ---------- entries ---------- */

/* dynahash hash function: a key's bytes. */
static uint32
cache_key_hash(const void *key, Size keysize)
{
	const CacheKey *k = (const CacheKey *) key;

	return hash_bytes((const unsigned char *) k->data, k->len);
}

/* dynahash match function: equal lengths and bytes. */
static int
cache_key_match(const void *key1, const void *key2, Size keysize)
{
	const CacheKey *a = (const CacheKey *) key1;
	const CacheKey *b = (const CacheKey *) key2;

	if (a->len != b->len)
		return 1;
	return memcmp(a->data, b->data, a->len);
}

/* Creates the hash table of a cache's entries, in its memory. */
static HTAB *
cache_create_entries(Cache *cache)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(CacheKey);
	ctl.entrysize = sizeof(CacheEntry);
	ctl.hash = cache_key_hash;
	ctl.match = cache_key_match;
	ctl.hcxt = cache->cxt;
	return hash_create("webgres cache entries", 256, &ctl,
					   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

/* Removes an entry from its cache and frees it. */
static void
cache_remove_entry(Cache *cache, CacheEntry *entry)
{
	char	   *data = (char *) entry->key.data;
	Jsonb	   *value = entry->value;

	dlist_delete(&entry->lru);
	hash_search(cache->entries, &entry->key, HASH_REMOVE, NULL);
	cache->count--;
	pfree(data);
	pfree(value);
}

/* Drops least recently used entries until there are at most max_entries. */
static void
cache_evict(Cache *cache)
{
	while (cache->count > cache->max_entries)
	{
		CacheEntry *oldest = dlist_tail_element(CacheEntry, lru, &cache->lru);

		cache_remove_entry(cache, oldest);
		cache->evicted++;
	}
}

/*
 * Stores a copy of key and value (replacing any entry for the key) as the
 * most recently used entry.
 */
static void
cache_put(Cache *cache, const char *key, int keylen, Jsonb *value, TimestampTz now)
{
	CacheKey	k;
	CacheEntry *entry;
	Jsonb	   *copy;
	char	   *data;
	bool		found;

	/* copy first: an error here leaves the table untouched */
	data = MemoryContextAlloc(cache->cxt, Max(keylen, 1));
	memcpy(data, key, keylen);
	copy = MemoryContextAlloc(cache->cxt, VARSIZE(value));
	memcpy(copy, value, VARSIZE(value));

	k.data = data;
	k.len = keylen;
	entry = hash_search(cache->entries, &k, HASH_ENTER, &found);
	if (found)
	{
		/* keep the stored key, replace the value */
		pfree(data);
		pfree(entry->value);
		dlist_delete(&entry->lru);
	}
	else
		cache->count++;
	entry->value = copy;
	entry->loaded_at = now;
	dlist_push_head(&cache->lru, &entry->lru);
	cache_evict(cache);
}

/* Drops every entry but keeps the definition and the prepared loader. */
static void
cache_flush(Cache *cache)
{
	MemoryContextReset(cache->cxt);
	cache->entries = cache_create_entries(cache);
	dlist_init(&cache->lru);
	cache->count = 0;
	cache->preload_done = false;
}

/* ---------- the registry ---------- */

/* Creates this backend's registry of caches on first use. */
static void
cache_init_registry(void)
{
	HASHCTL		ctl;

	if (cache_registry != NULL)
		return;
	cache_registry_cxt = AllocSetContextCreate(TopMemoryContext,
											   "webgres caches",
											   ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(CacheId);
	ctl.entrysize = sizeof(Cache);
	ctl.hcxt = cache_registry_cxt;
	cache_registry = hash_create("webgres caches", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Fills id from a cache's name, checked. */
static void
cache_make_id(CacheId *id, text *name)
{
	int			len = VARSIZE_ANY_EXHDR(name);

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cache name must not be empty")));
	if (len >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("cache name is too long"),
				 errdetail("A cache name has at most %d bytes.", NAMEDATALEN - 1)));
	memset(id, 0, sizeof(*id));
	id->userid = GetUserId();
	memcpy(id->name, VARDATA_ANY(name), len);
}

/* Frees a cache's loader and its plan. */
static void
cache_free_definition(Cache *cache)
{
	if (cache->loader_plan != NULL)
		SPI_freeplan(cache->loader_plan);
	cache->loader_plan = NULL;
	if (cache->loader != NULL)
		pfree(cache->loader);
	cache->loader = NULL;
	if (cache->preload != NULL)
		pfree(cache->preload);
	cache->preload = NULL;
}

/* Drops a cache and its entries from this backend. */
static void
cache_drop(Cache *cache)
{
	CacheId		id = cache->id;

	cache_free_definition(cache);
	MemoryContextDelete(cache->cxt);
	hash_search(cache_registry, &id, HASH_REMOVE, NULL);
}

/* True if t and s hold the same characters. */
static bool
text_equals_cstring(text *t, const char *s)
{
	int			len = VARSIZE_ANY_EXHDR(t);

	if (s == NULL)
		return false;
	return strlen(s) == (size_t) len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

/* A cache's time-to-live in microseconds (a month counts 30 days); never negative. */
static int64
interval_to_usecs(Interval *ttl)
{
	int64		us = ttl->time
		+ (int64) ttl->day * USECS_PER_DAY
		+ (int64) ttl->month * DAYS_PER_MONTH * USECS_PER_DAY;

	if (us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cache ttl must not be negative")));
	return us;
}

/*
 * Finds or creates the cache and brings its definition up to date. A new
 * loader or preload query flushes the entries, since they may no longer be
 * what the loader would give; a new size limit or ttl applies at once.
 */
static Cache *
cache_lookup(text *name, text *loader, int32 max_entries, Interval *ttl, text *preload)
{
	CacheId		id;
	Cache	   *cache;
	bool		found;

	if (max_entries < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cache max_entries must be at least 1")));

	cache_init_registry();
	cache_make_id(&id, name);
	cache = hash_search(cache_registry, &id, HASH_ENTER, &found);
	if (!found)
	{
		/* everything that can fail, before the entry is usable */
		MemoryContext cxt = NULL;

		PG_TRY();
		{
			cxt = AllocSetContextCreate(cache_registry_cxt,
										"webgres cache",
										ALLOCSET_DEFAULT_SIZES);
			MemoryContextCopyAndSetIdentifier(cxt, id.name);
		}
		PG_CATCH();
		{
			hash_search(cache_registry, &id, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
		memset((char *) cache + sizeof(CacheId), 0, sizeof(Cache) - sizeof(CacheId));
		cache->cxt = cxt;
		cache->entries = cache_create_entries(cache);
		dlist_init(&cache->lru);
		cache->ttl_us = -1;
	}

	if (cache->busy)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cache \"%s\" is in use by its own loader", id.name),
				 errhint("A loader or preload query cannot use the cache it fills.")));

	if (!text_equals_cstring(loader, cache->loader) ||
		(preload == NULL) != (cache->preload == NULL) ||
		(preload != NULL && !text_equals_cstring(preload, cache->preload)))
	{
		char	   *new_loader = MemoryContextStrdup(cache_registry_cxt, text_to_cstring(loader));
		char	   *new_preload = preload == NULL ? NULL :
			MemoryContextStrdup(cache_registry_cxt, text_to_cstring(preload));

		cache_free_definition(cache);
		cache->loader = new_loader;
		cache->preload = new_preload;
		cache_flush(cache);
	}

	if (ttl == NULL)
		cache->ttl_us = -1;
	else if (cache->ttl_us < 0 || memcmp(ttl, &cache->ttl, sizeof(Interval)) != 0)
	{
		cache->ttl_us = interval_to_usecs(ttl);
		cache->ttl = *ttl;
	}

	if (cache->max_entries != max_entries)
	{
		cache->max_entries = max_entries;
		cache_evict(cache);
	}
	return cache;
}

/* ---------- loading ---------- */

/* Error context callback: names the cache and what of it was running. */
static void
cache_error_context(void *arg)
{
	Cache	   *cache = (Cache *) arg;

	errcontext("%s of cache \"%s\"", cache->running, cache->id.name);
}

/* A json or jsonb datum as jsonb. */
static Jsonb *
cache_datum_to_jsonb(Oid type, Datum value)
{
	if (type == JSONBOID)
		return DatumGetJsonbP(value);
	/* json is text that is valid JSON: parse it as jsonb */
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											  CStringGetDatum(TextDatumGetCString(value))));
}

/* Raises an error unless the last SPI result has natts columns. */
static void
cache_check_shape(Cache *cache, int natts, const char *what, const char *shape)
{
	if (SPI_tuptable == NULL || SPI_tuptable->tupdesc->natts != natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s of cache \"%s\" must return %s", what, cache->id.name, shape)));
}

/* Runs the preload query and stores every row it returns. */
static void
cache_preload(Cache *cache, TimestampTz now)
{
	int			ret;
	uint64		i;
	TupleDesc	desc;
	Oid			type;

	ret = SPI_execute(cache->preload, true, 0);
	if (ret != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("preload query of cache \"%s\" must be a SELECT", cache->id.name)));
	cache_check_shape(cache, 2, "preload query", "two columns: a key and a json or jsonb value");
	desc = SPI_tuptable->tupdesc;
	type = SPI_gettypeid(desc, 2);
	if (type != JSONBOID && type != JSONOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("preload query of cache \"%s\" returns type %s as its value, not json or jsonb",
						cache->id.name, format_type_be(type)),
				 errhint("Cast the value: for example to_jsonb(...).")));

	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		char	   *key = SPI_getvalue(tuple, desc, 1);
		bool		isnull;
		Datum		value = SPI_getbinval(tuple, desc, 2, &isnull);

		if (key == NULL || isnull)
			continue;
		cache_put(cache, key, strlen(key), cache_datum_to_jsonb(type, value), now);
		cache->preloaded++;
		pfree(key);
	}
	SPI_freetuptable(SPI_tuptable);
}

/* Runs the loader for one key; returns the value (palloc'd in SPI memory) or NULL. */
static Jsonb *
cache_load(Cache *cache, text *key)
{
	Datum		arg = PointerGetDatum(key);
	int			ret;
	Oid			type;
	bool		isnull;
	Datum		value;

	if (cache->loader_plan == NULL)
	{
		Oid			argtypes[1] = {TEXTOID};
		SPIPlanPtr	plan = SPI_prepare(cache->loader, 1, argtypes);

		List	   *sources;

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for loader of cache \"%s\": %s",
				 cache->id.name, SPI_result_code_string(SPI_result));
		sources = SPI_plan_get_plan_sources(plan);
		if (list_length(sources) != 1 ||
			((CachedPlanSource *) linitial(sources))->commandTag != CMDTAG_SELECT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("loader of cache \"%s\" must be one SELECT statement",
							cache->id.name)));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		cache->loader_plan = plan;
	}

	ret = SPI_execute_plan(cache->loader_plan, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("loader of cache \"%s\" must be a SELECT", cache->id.name)));
	cache_check_shape(cache, 1, "loader", "one json or jsonb column");
	type = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	if (type != JSONBOID && type != JSONOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("loader of cache \"%s\" returns type %s, not json or jsonb",
						cache->id.name, format_type_be(type)),
				 errhint("Cast the value: for example to_jsonb(...).")));
	if (SPI_processed == 0)
		return NULL;
	value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return NULL;
	return cache_datum_to_jsonb(type, value);
}

/*
 * Runs the preload (when due) and, for a key, the loader; stores what the
 * loader returns. Returns a copy of the loaded value in caller_cxt, or NULL.
 */
static Jsonb *
cache_fill(Cache *cache, text *key, MemoryContext caller_cxt)
{
	ErrorContextCallback errctx;
	Jsonb	   *volatile result = NULL;
	TimestampTz now = GetCurrentTimestamp();

	errctx.callback = cache_error_context;
	errctx.arg = cache;
	errctx.previous = error_context_stack;

	cache->busy = true;
	PG_TRY();
	{
		error_context_stack = &errctx;
		SPI_connect();
		if (cache->preload != NULL && !cache->preload_done)
		{
			cache->running = "preload query";
			cache_preload(cache, now);
			cache->preload_done = true;
		}
		if (key != NULL)
		{
			Jsonb	   *value;

			cache->running = "loader";
			value = cache_load(cache, key);

			if (value != NULL)
			{
				cache_put(cache, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key), value, now);
				result = MemoryContextAlloc(caller_cxt, VARSIZE(value));
				memcpy(result, value, VARSIZE(value));
			}
		}
		SPI_finish();
		error_context_stack = errctx.previous;
	}
	PG_FINALLY();
	{
		cache->busy = false;
	}
	PG_END_TRY();
	return result;
}

/* ---------- SQL functions ---------- */

/*
 * webgres.cache_get(cache text, key text, loader text,
 *                   max_entries int DEFAULT 100000,
 *                   ttl interval DEFAULT '1 hour',
 *                   preload text DEFAULT NULL) RETURNS jsonb
 */
Datum
webgres_cache_get(PG_FUNCTION_ARGS)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	text	   *key;
	Cache	   *cache;
	CacheKey	k;
	CacheEntry *entry;
	Jsonb	   *result;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cache name, loader and max_entries must not be null")));

	cache = cache_lookup(PG_GETARG_TEXT_PP(0),
						 PG_GETARG_TEXT_PP(2),
						 PG_GETARG_INT32(3),
						 PG_ARGISNULL(4) ? NULL : PG_GETARG_INTERVAL_P(4),
						 PG_ARGISNULL(5) ? NULL : PG_GETARG_TEXT_PP(5));

	if (cache->preload != NULL && !cache->preload_done)
		cache_fill(cache, NULL, caller_cxt);

	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	key = PG_GETARG_TEXT_PP(1);

	k.data = VARDATA_ANY(key);
	k.len = VARSIZE_ANY_EXHDR(key);
	entry = hash_search(cache->entries, &k, HASH_FIND, NULL);
	if (entry != NULL && cache->ttl_us >= 0 &&
		GetCurrentTimestamp() - entry->loaded_at > cache->ttl_us)
	{
		cache_remove_entry(cache, entry);
		cache->expired++;
		entry = NULL;
	}

	if (entry != NULL)
	{
		cache->hits++;
		dlist_move_head(&cache->lru, &entry->lru);
		result = palloc(VARSIZE(entry->value));
		memcpy(result, entry->value, VARSIZE(entry->value));
		PG_RETURN_JSONB_P(result);
	}

	cache->misses++;
	result = cache_fill(cache, key, caller_cxt);
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(result);
}

/*
 * webgres.cache_stats() RETURNS TABLE (cache text, role regrole,
 *     entries bigint, max_entries int, ttl interval, hits bigint,
 *     misses bigint, preloaded bigint, evicted bigint, expired bigint,
 *     memory_bytes bigint)
 *
 * The caches of the calling process: in an HTTP worker, call it from a route
 * to see that worker's caches.
 */
Datum
webgres_cache_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS seq;
	Cache	   *cache;

	InitMaterializedSRF(fcinfo, 0);
	if (cache_registry == NULL)
		return (Datum) 0;

	hash_seq_init(&seq, cache_registry);
	while ((cache = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[11];
		bool		nulls[11] = {0};

		values[0] = CStringGetTextDatum(cache->id.name);
		values[1] = ObjectIdGetDatum(cache->id.userid);
		values[2] = Int64GetDatum(cache->count);
		values[3] = Int32GetDatum(cache->max_entries);
		if (cache->ttl_us < 0)
			nulls[4] = true;
		else
		{
			Interval   *ttl = palloc(sizeof(Interval));

			*ttl = cache->ttl;
			values[4] = IntervalPGetDatum(ttl);
		}
		values[5] = Int64GetDatum(cache->hits);
		values[6] = Int64GetDatum(cache->misses);
		values[7] = Int64GetDatum(cache->preloaded);
		values[8] = Int64GetDatum(cache->evicted);
		values[9] = Int64GetDatum(cache->expired);
		values[10] = Int64GetDatum((int64) MemoryContextMemAllocated(cache->cxt, true));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * webgres.cache_reset(cache text DEFAULT NULL) RETURNS bigint
 *
 * Drops the named cache (all caches when NULL) of the calling role in this
 * process, entries and definition; the next cache_get starts afresh, preload
 * included. A superuser drops the caches of every role. Returns the number
 * of entries dropped.
 */
Datum
webgres_cache_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS seq;
	Cache	   *cache;
	CacheId		id;
	bool		all_roles = superuser();
	int64		dropped = 0;

	if (cache_registry == NULL)
		PG_RETURN_INT64(0);
	if (!PG_ARGISNULL(0))
		cache_make_id(&id, PG_GETARG_TEXT_PP(0));

	hash_seq_init(&seq, cache_registry);
	while ((cache = hash_seq_search(&seq)) != NULL)
	{
		if (!all_roles && cache->id.userid != GetUserId())
			continue;
		if (!PG_ARGISNULL(0) && strcmp(cache->id.name, id.name) != 0)
			continue;
		if (cache->busy)
		{
			hash_seq_term(&seq);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cache \"%s\" is in use by its own loader", cache->id.name)));
		}
		dropped += cache->count;
		cache_drop(cache);
	}
	PG_RETURN_INT64(dropped);
}
