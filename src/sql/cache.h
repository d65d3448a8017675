/*
 * cache.h - per-process read-through caches of jsonb values
 *
 * A cache maps text keys to jsonb values and lives in the memory of the
 * process that uses it: in the HTTP workers, each worker has its own. A miss
 * runs the cache's loader query (prepared once per cache) with the key as
 * $1; entries leave by size (least recently used first, beyond max_entries)
 * and by age (older than ttl). An optional preload query fills a new cache
 * in bulk.
 *
 * Caches are identified by name and by the role that uses them, so a loader
 * only ever runs as, and its values are only ever returned to, that role.
 *
 * SQL surface (extension/webgres--1.0.sql):
 *   webgres.cache_get(cache, key, loader, max_entries, ttl, preload) -> jsonb
 *   webgres.cache_stats() -> one row per cache of this process
 *   webgres.cache_reset(cache) -> number of entries dropped
 *
 * Memory: a "webgres caches" context under TopMemoryContext holds the list
 * of caches; each cache's entries live in a child context of their own, so
 * dropping or flushing a cache is one context reset. Nothing here is tied to
 * a transaction: an error part-way through a load leaves the cache as it was.
 */
#ifndef WEBGRES_CACHE_H
#define WEBGRES_CACHE_H

#include "fmgr.h"

extern Datum webgres_cache_get(PG_FUNCTION_ARGS);
extern Datum webgres_cache_stats(PG_FUNCTION_ARGS);
extern Datum webgres_cache_reset(PG_FUNCTION_ARGS);

#endif							/* WEBGRES_CACHE_H */
