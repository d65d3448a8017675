/*
 * json_rows.c
 *		webgres.json_rows_of(rows, VARIADIC keys_and_columns): a JSON array of
 *		objects, one for each element of an array of a row type, the named
 *		columns as members under the keys given; json_row_of(row, ...): the
 *		object of one row.
 *
 * json_agg(json_build(...)) over the rows of a subquery writes the same
 * array, but needs an aggregate, and the executor around it, in a handler
 * that could otherwise be one row of expressions; and json_agg asks each
 * element's output function for its text again.  Here the columns are
 * found once per call site and each value is written once, as json_build
 * writes it (json_write.c).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
/* Its inline functions compare int32 with size_t (ARR_DATA_OFFSET) under -Wextra. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "utils/arrayaccess.h"
#pragma GCC diagnostic pop
#include "utils/builtins.h"

#include "sql/json_write.h"
#include "sql/row_array.h"

PG_FUNCTION_INFO_V1(webgres_json_rows_of);
PG_FUNCTION_INFO_V1(webgres_json_row_of);

/* The names json_rows_of's and json_row_of's errors give. */
#define JSON_ROWS_OF		"webgres.json_rows_of"
#define JSON_ROW_OF			"webgres.json_row_of"

/*
 * What json_rows_of or json_row_of found out about its row type and
 * columns at one call site (fn_extra), kept while the type and the keys and
 * names stay the same.
 */
typedef struct JsonRowsSite
{
	RowColumns	cols;			/* the row type, and the keys and names */
	int			nmembers;		/* members of each object */
	AttrNumber *atts;			/* each member's column */
	JsonArg    *values;			/* ... how its values are written */
	char	   *keys;			/* each "key": as written, one after another */
	int		   *key_ends;		/* where each member's "key": ends in keys */
} JsonRowsSite;

/* Copies a call site's findings into mcxt, for row_sites_*. */
static void *
json_rows_site_copy(const void *from, MemoryContext mcxt)
{
	const JsonRowsSite *src = (const JsonRowsSite *) from;
	JsonRowsSite *dst = MemoryContextAlloc(mcxt, sizeof(JsonRowsSite));
	int			n = Max(src->nmembers, 1);
	int			keys_len;

	*dst = *src;
	row_columns_copy(&dst->cols, &src->cols, mcxt);
	dst->atts = MemoryContextAlloc(mcxt, n * sizeof(AttrNumber));
	memcpy(dst->atts, src->atts, src->nmembers * sizeof(AttrNumber));
	dst->values = MemoryContextAlloc(mcxt, n * sizeof(JsonArg));
	for (int i = 0; i < src->nmembers; i++)
		json_arg_copy(&dst->values[i], &src->values[i], mcxt);
	dst->key_ends = MemoryContextAlloc(mcxt, n * sizeof(int));
	memcpy(dst->key_ends, src->key_ends, src->nmembers * sizeof(int));
	keys_len = src->nmembers > 0 ? src->key_ends[src->nmembers - 1] : 0;
	dst->keys = MemoryContextAlloc(mcxt, keys_len + 1);
	memcpy(dst->keys, src->keys, keys_len);
	dst->keys[keys_len] = '\0';
	return dst;
}

/*
 * Finds the members for the keys and columns in pairs (each key, then the
 * column it names) in site, whose row type is already known: each column's
 * attribute, how its values are written, and each "key": as written.  An
 * odd count, a NULL or an unknown name is an error.
 */
static void
json_members_find(JsonRowsSite *site, MemoryContext mcxt, TupleDesc desc,
				  const char *fname, ArrayType *pairs)
{
	Datum	   *names;
	bool	   *name_nulls;
	int			nnames;
	int			nmembers;
	MemoryContext old;
	StringInfoData keys;

	deconstruct_array(pairs, TEXTOID, -1, false, TYPALIGN_INT,
					  &names, &name_nulls, &nnames);
	if (nnames % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: an odd number of keys and columns (%d)",
						fname, nnames),
				 errhint("Give each key, then the column whose value it names.")));
	for (int i = 0; i < nnames; i++)
		if (name_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: %s %d is null", fname,
							i % 2 == 0 ? "key" : "column", i / 2 + 1)));
	nmembers = nnames / 2;

	old = MemoryContextSwitchTo(mcxt);
	site->atts = palloc(Max(nmembers, 1) * sizeof(AttrNumber));
	site->values = palloc0(Max(nmembers, 1) * sizeof(JsonArg));
	site->key_ends = palloc(Max(nmembers, 1) * sizeof(int));
	site->nmembers = nmembers;
	initStringInfo(&keys);
	site->keys = keys.data;
	for (int i = 0; i < nmembers; i++)
	{
		text	   *key = DatumGetTextPP(names[2 * i]);
		char	   *column = TextDatumGetCString(names[2 * i + 1]);

		site->atts[i] = row_type_column(desc, column, site->cols.row_type, fname);
		json_arg_init(&site->values[i],
					  TupleDescAttr(desc, site->atts[i] - 1)->atttypid, mcxt);
		append_json_string(&keys, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
		appendStringInfoChar(&keys, ':');
		site->keys = keys.data;
		site->key_ends[i] = keys.len;
	}
	MemoryContextSwitchTo(old);
}

/*
 * The call site's members for this row type and the keys and columns named
 * by argument argno, a text array of pairs: each key, then the column it
 * names.  Found again when any of them changed: from what the backend kept
 * of an earlier transaction's call if it can, else from the catalog.
 */
static JsonRowsSite *
json_members(FunctionCallInfo fcinfo, const char *fname, bool array, int argno)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	JsonRowsSite *site = (JsonRowsSite *) flinfo->fn_extra;
	MemoryContext mcxt = flinfo->fn_mcxt;
	Oid			arg_type = get_fn_expr_argtype(flinfo, 0);
	ArrayType  *pairs;
	const char *args;
	int			args_len;
	TupleDesc	desc;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s: the keys and columns must not be null", fname)));
	/* What the site's findings depend on: the array of names, as given */
	pairs = PG_GETARG_ARRAYTYPE_P(argno);
	args = (const char *) pairs;
	args_len = VARSIZE(pairs);

	if (site != NULL)
	{
		row_columns_desc(&site->cols, flinfo, 0, array, fname);
		if (row_columns_current(&site->cols, args, args_len, 0))
			return site;
	}
	else
	{
		site = row_sites_recall(fname, arg_type, args, args_len, 0, mcxt,
								json_rows_site_copy);
		if (site != NULL)
		{
			flinfo->fn_extra = site;
			return site;
		}
		site = MemoryContextAllocZero(mcxt, sizeof(JsonRowsSite));
		flinfo->fn_extra = site;
	}

	/* Found afresh; the site keeps them only once every name resolved. */
	desc = row_columns_desc(&site->cols, flinfo, 0, array, fname);
	row_columns_forget(&site->cols);
	if (site->atts != NULL)
	{
		pfree(site->atts);
		pfree(site->values);
		pfree(site->keys);
		pfree(site->key_ends);
	}
	json_members_find(site, mcxt, desc, fname, pairs);
	row_columns_keep(&site->cols, mcxt, args, args_len, 0);
	row_sites_remember(fname, arg_type, site, json_rows_site_copy);
	return site;
}

/* Appends one row's object: its members in order; a NULL row is null. */
static void
append_row_object(StringInfo out, JsonRowsSite *site, bool row_null,
				  Datum *values, bool *nulls)
{
	int			key_start = 0;

	if (row_null)
	{
		APPEND_LITERAL(out, "null");
		return;
	}
	appendStringInfoCharMacro(out, '{');
	for (int m = 0; m < site->nmembers; m++)
	{
		int			att = site->atts[m] - 1;

		if (m > 0)
			appendStringInfoCharMacro(out, ',');
		appendBinaryStringInfo(out, site->keys + key_start,
							   site->key_ends[m] - key_start);
		key_start = site->key_ends[m];
		append_json_value(out, &site->values[m], values[att], nulls[att]);
	}
	appendStringInfoCharMacro(out, '}');
}

/*
 * webgres.json_rows_of(rows anyarray, VARIADIC keys_and_columns text[])
 * returns json: an array of one object for each element of rows (an array
 * of a row type), in the array's order, each with a member for each pair of
 * a key and a column name, the column's value written as json_build writes
 * it.  A NULL element is null; NULL for a NULL array, [] for an empty one.
 */
Datum
webgres_json_rows_of(PG_FUNCTION_ARGS)
{
	AnyArrayType *rows;
	JsonRowsSite *site;
	TupleDesc	desc;
	int			nelems;
	array_iter	iter;
	Datum	   *values;
	bool	   *nulls;
	StringInfoData out;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	site = json_members(fcinfo, JSON_ROWS_OF, true, 1);
	/* An expanded array (from ||, say) is read as it is, not flattened. */
	rows = PG_GETARG_ANY_ARRAY_P(0);
	desc = site->cols.type_entry->tupDesc;
	values = palloc(Max(desc->natts, 1) * sizeof(Datum));
	nulls = palloc(Max(desc->natts, 1) * sizeof(bool));

	/* The array is written after room for the varlena header: no copy */
	initStringInfo(&out);
	out.len = VARHDRSZ;
	appendStringInfoCharMacro(&out, '[');
	nelems = ArrayGetNItems(AARR_NDIM(rows), AARR_DIMS(rows));
	array_iter_setup(&iter, rows);
	for (int i = 0; i < nelems; i++)
	{
		bool		row_null;
		Datum		row = array_iter_next(&iter, &row_null, i, -1, false,
										  TYPALIGN_DOUBLE);

		if (i > 0)
			appendStringInfoCharMacro(&out, ',');
		row_array_deform(row, row_null, desc, values, nulls);
		append_row_object(&out, site, row_null, values, nulls);
	}
	appendStringInfoCharMacro(&out, ']');
	SET_VARSIZE(out.data, out.len);
	PG_RETURN_POINTER(out.data);
}

/*
 * webgres.json_row_of(item anyelement, VARIADIC keys_and_columns text[])
 * returns json: the object json_rows_of writes for one element, of a row of
 * a named row type; NULL for a NULL row.
 */
Datum
webgres_json_row_of(PG_FUNCTION_ARGS)
{
	JsonRowsSite *site;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	StringInfoData out;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	site = json_members(fcinfo, JSON_ROW_OF, false, 1);
	desc = site->cols.type_entry->tupDesc;
	values = palloc(Max(desc->natts, 1) * sizeof(Datum));
	nulls = palloc(Max(desc->natts, 1) * sizeof(bool));
	row_array_deform(PG_GETARG_DATUM(0), false, desc, values, nulls);

	initStringInfo(&out);
	out.len = VARHDRSZ;
	append_row_object(&out, site, false, values, nulls);
	SET_VARSIZE(out.data, out.len);
	PG_RETURN_POINTER(out.data);
}
