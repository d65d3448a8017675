/*
 * ingest.h
 *		webgres.ingest's COPY path (ingest_copy.c), used by ingest.c.
 */
#ifndef WEBGRES_INGEST_H
#define WEBGRES_INGEST_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* Whether rel can be loaded by COPY FROM as the current user (no RLS, a table). */
extern bool ingest_copy_applies(Relation rel, List *colnames);

/*
 * Loads CSV records s[0..len) into the columns colnames of rel through
 * COPY FROM; first_line is the body's line s starts on.  Returns the rows
 * loaded; a bad row raises an error naming its line (and column).
 */
extern int64 ingest_copy_csv(Relation rel, List *colnames, const char *s, size_t len,
							 long first_line);

/* The next row's texts (NULL: SQL NULL) and its line or element in *n; false at the end. */
typedef bool (*IngestNextRow) (void *arg, char **fields, long *n);

/* The line (or element) of the body that COPY's line k came from. */
typedef long (*IngestRowNumber) (void *arg, uint64 k);

/*
 * Loads the rows next gives into the columns colnames of rel through COPY
 * FROM; returns the rows loaded.  Errors name the row by unit and number.
 */
extern int64 ingest_copy_rows(Relation rel, List *colnames, const char *unit, IngestNextRow next,
							  IngestRowNumber number, void *arg);

#endif
