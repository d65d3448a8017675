/*
 * row_array.c
 *		Reading an array of a row type, or one row, by column name: the row
 *		type an argument holds, a column by its name, and one element decoded
 *		into its columns.  html_rows_of and json_rows_of render such arrays,
 *		json_row_of one row.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "sql/row_array.h"

/*
 * The row type of the elements of argument argno, an array: a domain over
 * a row type is read as that row type.  Anything else is an error naming
 * fname.
 */
Oid
row_array_row_type(FmgrInfo *flinfo, int argno, const char *fname)
{
	Oid			array_type = get_fn_expr_argtype(flinfo, argno);
	Oid			row_type = get_element_type(array_type);

	if (!OidIsValid(row_type) ||
		get_typtype(getBaseType(row_type)) != TYPTYPE_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s renders an array of a named row type, not %s",
						fname, format_type_be(array_type)),
				 errhint("Pass an array of a table's rows, as in ARRAY(SELECT t FROM t).")));
	return getBaseType(row_type);
}

/*
 * The row type of argument argno, a row: a domain over a row type is read
 * as that row type.  Anything else is an error naming fname.
 */
Oid
row_arg_row_type(FmgrInfo *flinfo, int argno, const char *fname)
{
	Oid			type = get_fn_expr_argtype(flinfo, argno);

	if (!OidIsValid(type) ||
		get_typtype(getBaseType(type)) != TYPTYPE_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s renders a value of a named row type, not %s",
						fname, format_type_be(type)),
				 errhint("Pass a table's row, as in (SELECT t FROM t WHERE ...).")));
	return getBaseType(type);
}

/* The column of desc (of type) named name, or an error naming fname. */
AttrNumber
row_type_column(TupleDesc desc, const char *name, Oid type, const char *fname)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0)
			return a->attnum;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("%s: type %s has no column \"%s\"",
					fname, format_type_be(type), name)));
	return InvalidAttrNumber;	/* not reached */
}

/*
 * The row type's descriptor as the type cache has it now; on the call
 * site's first call, the row type of argument argno, an array of rows
 * (array) or a row, is looked up and checked.
 */
TupleDesc
row_columns_desc(RowColumns *cols, FmgrInfo *flinfo, int argno, bool array,
				 const char *fname)
{
	if (!OidIsValid(cols->row_type))
	{
		cols->row_type = array ? row_array_row_type(flinfo, argno, fname) :
			row_arg_row_type(flinfo, argno, fname);
		cols->type_entry = NULL;
	}
	if (cols->type_entry == NULL || cols->type_entry->tupDesc == NULL)
		cols->type_entry = lookup_type_cache(cols->row_type, TYPECACHE_TUPDESC);
	return cols->type_entry->tupDesc;
}

/* Whether the columns were found for these names in the descriptor of now. */
bool
row_columns_current(const RowColumns *cols, const char *names, int names_len,
					int shape)
{
	return cols->names != NULL &&
		cols->desc_id == cols->type_entry->tupDesc_identifier &&
		cols->shape == shape && cols->names_len == names_len &&
		memcmp(cols->names, names, names_len) == 0;
}

/*
 * Forgets the names before the columns are found again: if a name does not
 * resolve, the call site then keeps nothing half found.
 */
void
row_columns_forget(RowColumns *cols)
{
	if (cols->names != NULL)
		pfree(cols->names);
	cols->names = NULL;
}

/* Keeps the names (and shape) the columns were just found for, in mcxt. */
void
row_columns_keep(RowColumns *cols, MemoryContext mcxt, const char *names,
				 int names_len, int shape)
{
	cols->names = MemoryContextAlloc(mcxt, Max(names_len, 1));
	memcpy(cols->names, names, names_len);
	cols->names_len = names_len;
	cols->shape = shape;
	cols->desc_id = cols->type_entry->tupDesc_identifier;
}

/*
 * Decodes one element of the array, a row of desc, into values and nulls
 * (desc->natts of each); a NULL element has every column NULL.
 */
void
row_array_deform(Datum row, bool isnull, TupleDesc desc, Datum *values,
				 bool *nulls)
{
	HeapTupleHeader header;
	HeapTupleData tuple;

	if (isnull)
	{
		memset(nulls, true, desc->natts * sizeof(bool));
		return;
	}
	header = DatumGetHeapTupleHeader(row);
	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	heap_deform_tuple(&tuple, desc, values, nulls);
}
