/*
 * mounts.h
 *		The worker's copy of webgres.static_mounts: URL prefixes served as
 *		static files from a directory (docs/static-files.md).
 *
 * Loaded like the route table: on first use and again after a change,
 * which the table's trigger announces with a relcache invalidation.
 */
#ifndef WEBGRES_MOUNTS_H
#define WEBGRES_MOUNTS_H

#include <stddef.h>

#include "postgres.h"

typedef struct Mount
{
	char	   *prefix;			/* "/" or "/a/b", no trailing slash */
	size_t		prefix_len;		/* 0 for "/": every path is under it */
	char	   *directory;		/* absolute */
	char	   *index_file;		/* or NULL */
	bool		spa_fallback;
	bool		dotfiles;
	bool		precompressed;
	char	   *cache_control;	/* Cache-Control sent with its files, or NULL */
	Oid			owner;
	int			index;			/* position in the table */
} Mount;

typedef struct MountTable
{
	int			nmounts;
	Mount	   *mounts;			/* longest prefix first */
	uint64		generation;		/* counts loads */
} MountTable;

/* Registers the invalidation callback; once per process. */
extern void mounts_init(void);

/* The current table, reloaded if it changed.  Call inside a transaction. */
extern MountTable *mounts_current(void);

/* The table as last loaded, or NULL if it is known to be stale. */
extern MountTable *mounts_peek(void);

/*
 * The mount whose prefix the path (without its query) falls under, the
 * longest if several do, or NULL.  The path is compared as sent, so a
 * prefix spelled with percent-encoding does not match.
 */
extern Mount *mounts_find(MountTable *table, const char *path, size_t len);

#endif
