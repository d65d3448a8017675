/*
 * row_array.c
 *		Reading an array of a row type, or one row, by column name: the row
 *		type an argument holds, a column by its name, and one element decoded
 *		into its columns.  html_rows_of and json_rows_of render such arrays,
 *		json_row_of one row.
 *
 * A call site's findings live in its fn_extra, which lasts one transaction:
 * a handler's expressions are set up again in each, as PL/pgSQL sets up its
 * own.  Finding the columns again from the catalog cost a /fortunes request
 * 5 % of its instructions, so the backend also keeps the last sites' findings
 * (row_sites_*), by function, argument type and arguments, and hands a call
 * site a copy: nothing a transaction holds points into them, so they can be
 * dropped at any moment, and are, on any change to pg_type or pg_proc (a
 * type or an output function replaced) and when the descriptor changed.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "core/pg_compat.h"
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

/* Copies src into dst, its arguments' bytes into mcxt. */
void
row_columns_copy(RowColumns *dst, const RowColumns *src, MemoryContext mcxt)
{
	*dst = *src;
	if (src->names != NULL)
	{
		dst->names = MemoryContextAlloc(mcxt, Max(src->names_len, 1));
		memcpy(dst->names, src->names, src->names_len);
	}
}

/* Call sites' findings the backend keeps at most; the oldest makes room. */
#define ROW_SITES_MAX		32

/* One call site's findings, kept for the backend. */
typedef struct RowSite
{
	const char *fname;			/* the function's name (a constant): its kind */
	Oid			arg_type;		/* the rows' argument type at the call */
	MemoryContext mcxt;			/* holds site and all it points to */
	void	   *site;			/* begins with its RowColumns */
} RowSite;

static RowSite row_sites[ROW_SITES_MAX];
static int	row_sites_count = 0;
static int	row_sites_next = 0; /* the slot the next one takes when full */
static MemoryContext row_sites_mcxt = NULL;

/* Drops every kept site: a type or a function changed. */
static void
row_sites_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	for (int i = 0; i < row_sites_count; i++)
		MemoryContextDelete(row_sites[i].mcxt);
	row_sites_count = 0;
	row_sites_next = 0;
}

/*
 * A copy in mcxt of the findings of fname at a call of argument type
 * arg_type with these arguments' bytes and shape, if the backend kept them
 * and the descriptor they were found in is still the type's; else NULL.
 */
void *
row_sites_recall(const char *fname, Oid arg_type, const char *names,
				 int names_len, int shape, MemoryContext mcxt, RowSiteCopy copy)
{
	for (int i = 0; i < row_sites_count; i++)
	{
		RowSite    *kept = &row_sites[i];
		RowColumns *cols = (RowColumns *) kept->site;

		if (kept->fname != fname || kept->arg_type != arg_type ||
			cols->type_entry->tupDesc == NULL ||
			!row_columns_current(cols, names, names_len, shape))
			continue;
		return copy(kept->site, mcxt);
	}
	return NULL;
}

/*
 * Keeps a copy of a call site's findings (just found: their RowColumns
 * current) for later transactions' calls of fname at argument type
 * arg_type.
 */
void
row_sites_remember(const char *fname, Oid arg_type, const void *site,
				   RowSiteCopy copy)
{
	MemoryContext mcxt;
	RowSite    *slot;

	if (row_sites_mcxt == NULL)
	{
		row_sites_mcxt = AllocSetContextCreate(CacheMemoryContext,
											   "webgres row sites",
											   ALLOCSET_SMALL_SIZES);
		CacheRegisterSyscacheCallback(TYPEOID, row_sites_changed, (Datum) 0);
		CacheRegisterSyscacheCallback(PROCOID, row_sites_changed, (Datum) 0);
	}
	/*
	 * Copied under the transaction's context first: if the copy fails, its
	 * memory goes with the transaction and no slot holds half a site.
	 */
	mcxt = AllocSetContextCreate(CurrentMemoryContext, "webgres row site",
								 ALLOCSET_SMALL_SIZES);
	site = copy(site, mcxt);
	MemoryContextSetParent(mcxt, row_sites_mcxt);

	if (row_sites_count < ROW_SITES_MAX)
		slot = &row_sites[row_sites_count++];
	else
	{
		slot = &row_sites[row_sites_next];
		row_sites_next = (row_sites_next + 1) % ROW_SITES_MAX;
		MemoryContextDelete(slot->mcxt);
	}
	slot->fname = fname;
	slot->arg_type = arg_type;
	slot->mcxt = mcxt;
	slot->site = (void *) site;
}

/*
 * Decodes one element of the array, a row of desc, into values and nulls
 * (desc->natts of each); a NULL element has every column NULL.
 *
 * A row with every attribute of desc and no NULL, whose last attribute's
 * offset desc has cached, is read straight from the cached offsets: each
 * attribute then sits at its own (only fixed-width ones come before the
 * last: a table's row such as TechEmpower's world and fortune), which is
 * what heap_deform_tuple would find, without its per-attribute tests of
 * nulls, widths and alignment (about 200 instructions a row of two).  Any
 * other row is taken apart by heap_deform_tuple, which caches the offsets.
 */
void
row_array_deform(Datum row, bool isnull, TupleDesc desc, Datum *values,
				 bool *nulls)
{
	HeapTupleHeader header;
	HeapTupleData tuple;
	int			natts = desc->natts;

	if (isnull)
	{
		memset(nulls, true, natts * sizeof(bool));
		return;
	}
	header = DatumGetHeapTupleHeader(row);
	if (natts > 0 && (header->t_infomask & HEAP_HASNULL) == 0 &&
		HeapTupleHeaderGetNatts(header) == natts &&
		TupleDescCompactAttr(desc, natts - 1)->attcacheoff >= 0)
	{
		char	   *data = (char *) header + header->t_hoff;

		for (int i = 0; i < natts; i++)
		{
			CompactAttribute *att = TupleDescCompactAttr(desc, i);

			values[i] = fetchatt(att, data + att->attcacheoff);
			nulls[i] = false;
		}
		return;
	}
	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	heap_deform_tuple(&tuple, desc, values, nulls);
}
