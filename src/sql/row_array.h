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

extern Oid	row_array_row_type(FmgrInfo *flinfo, int argno, const char *fname);
extern Oid	row_arg_row_type(FmgrInfo *flinfo, int argno, const char *fname);
extern AttrNumber row_type_column(TupleDesc desc, const char *name, Oid type,
								  const char *fname);
extern void row_array_deform(Datum row, bool isnull, TupleDesc desc,
							 Datum *values, bool *nulls);

#endif							/* WEBGRES_ROW_ARRAY_H */
