/*
 * row_array.h
 *		Reading an array of a row type, or one row, by column name: the
 *		checks and the decoding html_rows_of, json_rows_of and json_row_of
 *		share.
 */
#ifndef WEBGRES_ROW_ARRAY_H
#define WEBGRES_ROW_ARRAY_H

#include "fmgr.h"
#include "access/tupdesc.h"
#include "utils/typcache.h"

/*
 * What a call site (fn_extra) read its columns by name in: the row type,
 * the descriptor and the arguments it found them for (the bytes of the
 * names as given).  The caller keeps what it derived from them (attribute
 * numbers, how to write each value) beside it, in a struct that begins
 * with its RowColumns, and finds them again whenever row_columns_current()
 * says no.
 */
typedef struct RowColumns
{
	Oid			row_type;		/* the row type (a domain's base type) */
	TypeCacheEntry *type_entry; /* its type cache entry, for its descriptor */
	uint64		desc_id;		/* the descriptor the columns were found in */
	char	   *names;			/* the arguments' bytes; NULL: none found */
	int			names_len;
	int			shape;			/* what else the caller's lookup depended on */
} RowColumns;

/*
 * Copies a call site's findings (a struct that begins with its RowColumns)
 * into mcxt, every pointer it holds included.
 */
typedef void *(*RowSiteCopy) (const void *site, MemoryContext mcxt);

extern Oid	row_array_row_type(FmgrInfo *flinfo, int argno, const char *fname);
extern Oid	row_arg_row_type(FmgrInfo *flinfo, int argno, const char *fname);
extern AttrNumber row_type_column(TupleDesc desc, const char *name, Oid type,
								  const char *fname);
extern TupleDesc row_columns_desc(RowColumns *cols, FmgrInfo *flinfo,
								  int argno, bool array, const char *fname);
extern bool row_columns_current(const RowColumns *cols, const char *names,
								int names_len, int shape);
extern void row_columns_forget(RowColumns *cols);
extern void row_columns_keep(RowColumns *cols, MemoryContext mcxt,
							 const char *names, int names_len, int shape);
extern void row_columns_copy(RowColumns *dst, const RowColumns *src,
							 MemoryContext mcxt);
extern void *row_sites_recall(const char *fname, Oid arg_type,
							  const char *names, int names_len, int shape,
							  MemoryContext mcxt, RowSiteCopy copy);
extern void row_sites_remember(const char *fname, Oid arg_type,
							   const void *site, RowSiteCopy copy);
extern void row_array_deform(Datum row, bool isnull, TupleDesc desc,
							 Datum *values, bool *nulls);

#endif							/* WEBGRES_ROW_ARRAY_H */
