/*
 * html_rows.c
 *		webgres.html_rows(key, VARIADIC cells): an aggregate that renders its
 *		rows as the rows of an HTML table, each cell escaped, sorted by key in
 *		byte order.
 *
 * The same page can be written in SQL with string_agg(... ORDER BY key
 * COLLATE "C") over concatenations and html_escape() calls, but Postgres
 * then sets up a sort and compiles the concatenation for every execution
 * and copies each row into the sort as a tuple; for a page of a dozen rows
 * that is most of the request.  Here a row costs one call that appends its
 * rendered cells to a buffer, and the final call sorts an array of pointers.
 *
 * webgres.html_rows_of(rows, key, VARIADIC columns) renders an array of a
 * row type the same way, named columns as cells: a handler that is one row
 * of expressions then needs no aggregate, and no executor, around it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
/* Its inline functions compare int32 with size_t (ARR_DATA_OFFSET) under -Wextra. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "utils/arrayaccess.h"
#pragma GCC diagnostic pop
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "sql/html.h"
#include "sql/row_array.h"

PG_FUNCTION_INFO_V1(webgres_html_rows_add);
PG_FUNCTION_INFO_V1(webgres_html_rows_final);
PG_FUNCTION_INFO_V1(webgres_html_rows_of);

/*
 * Appends n bytes without a call: a page is mostly tags of a few bytes, and
 * appendBinaryStringInfo for each cost more than the bytes themselves.
 */
static inline void
append_short(StringInfo out, const char *s, int n)
{
	if (out->maxlen - out->len <= n)
		enlargeStringInfo(out, n);
	memcpy(out->data + out->len, s, n);
	out->len += n;
	out->data[out->len] = '\0';
}

/* Appends a string literal without measuring it. */
#define APPEND_LITERAL(out, lit) append_short((out), (lit), sizeof(lit) - 1)

/* The name html_rows_of's errors give. */
#define HTML_ROWS_OF		"webgres.html_rows_of"

/*
 * Rows up to this many are put in order by insertion, without qsort's
 * calls through a pointer: a page of a dozen rows sorts in a fifth of the
 * instructions.
 */
#define HTML_ROWS_INSERTION_MAX	24

/* Rows the state has room for before it first grows. */
#define HTML_ROWS_INITIAL	16

/* The index of the first cell among the transition function's arguments. */
#define FIRST_CELL_ARG		2

/* One row seen: where its key and its rendered <tr> are in the state. */
typedef struct HtmlRow
{
	uint64		key_prefix;		/* the key's first bytes, big-endian */
	int			key_off;		/* offset in HtmlRowsState.keys; -1: NULL */
	int			key_len;
	int			html_off;		/* offset in HtmlRowsState.html */
	int			html_len;
	int			seq;			/* arrival order, which ties keep */
} HtmlRow;

/* The transition state, in the aggregate's memory context. */
typedef struct HtmlRowsState
{
	StringInfoData keys;		/* the keys' bytes, one after another */
	StringInfoData html;		/* the rendered rows, one after another */
	HtmlRow    *rows;
	int			nrows;
	int			maxrows;
} HtmlRowsState;

/* How a cell's value becomes text. */
typedef enum CellKind
{
	CELL_TEXT,					/* text or varchar: its bytes are its text */
	CELL_INT4,					/* integer: int4out's digits, written here */
	CELL_INT8,					/* bigint: int8out's digits, written here */
	CELL_OUTPUT					/* anything else: its output function */
} CellKind;

/* Room for the digits of any bigint and a NUL. */
#define CELL_DIGITS_SIZE	(MAXINT8LEN + 1)

/* How one cell's type becomes text. */
typedef struct CellType
{
	Oid			type;
	CellKind	kind;
	FmgrInfo	output;			/* CELL_OUTPUT's output function */
} CellType;

/* The cells' types at one call site, looked up once (kept in fn_extra). */
typedef struct CellTypes
{
	bool		variadic_array; /* cells given as VARIADIC array[...] */
	int			ncells;			/* cell arguments, or 1 for the array */
	int16		elem_len;		/* the array's element type, if one */
	bool		elem_byval;
	char		elem_align;
	CellType	cells[FLEXIBLE_ARRAY_MEMBER];
} CellTypes;

/* Fills *cell with how to turn a value of type into text. */
static void
cell_type_init(CellType *cell, Oid type, MemoryContext mcxt)
{
	Oid			base = getBaseType(type);
	Oid			output;
	bool		varlena;

	cell->type = type;
	if (base == TEXTOID || base == VARCHAROID)
		cell->kind = CELL_TEXT;
	else if (base == INT4OID)
		cell->kind = CELL_INT4;
	else if (base == INT8OID)
		cell->kind = CELL_INT8;
	else
	{
		cell->kind = CELL_OUTPUT;
		getTypeOutputInfo(type, &output, &varlena);
		fmgr_info_cxt(output, &cell->output, mcxt);
	}
}

/* The cells' types of this call site, looked up on its first row. */
static CellTypes *
cell_types(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	CellTypes  *types = (CellTypes *) flinfo->fn_extra;
	int			nargs = PG_NARGS() - FIRST_CELL_ARG;

	if (types != NULL)
		return types;

	types = MemoryContextAllocZero(flinfo->fn_mcxt,
								   offsetof(CellTypes, cells) +
								   Max(nargs, 1) * sizeof(CellType));
	types->variadic_array = get_fn_expr_variadic(flinfo);
	types->ncells = nargs;
	if (types->variadic_array)
	{
		Oid			array_type = get_fn_expr_argtype(flinfo, FIRST_CELL_ARG);
		Oid			elem = get_element_type(array_type);

		if (!OidIsValid(elem))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("webgres.html_rows: VARIADIC cells must be an array")));
		get_typlenbyvalalign(elem, &types->elem_len, &types->elem_byval,
							 &types->elem_align);
		cell_type_init(&types->cells[0], elem, flinfo->fn_mcxt);
	}
	else
	{
		for (int i = 0; i < nargs; i++)
		{
			Oid			type = get_fn_expr_argtype(flinfo, FIRST_CELL_ARG + i);

			if (!OidIsValid(type))
				ereport(ERROR,
						(errcode(ERRCODE_INDETERMINATE_DATATYPE),
						 errmsg("webgres.html_rows: cannot tell the type of cell %d", i + 1)));
			cell_type_init(&types->cells[i], type, flinfo->fn_mcxt);
		}
	}
	flinfo->fn_extra = types;
	return types;
}

/*
 * A non-NULL value's text, as the cell type's output function writes it
 * (integers' digits are written into digits, as int4out and int8out write
 * them, without a call or an allocation); its length in *len.
 */
static const char *
cell_text(CellType *cell, Datum value, char *digits, int *len)
{
	switch (cell->kind)
	{
		case CELL_TEXT:
			{
				text	   *t = DatumGetTextPP(value);

				*len = VARSIZE_ANY_EXHDR(t);
				return VARDATA_ANY(t);
			}
		case CELL_INT4:
			*len = pg_ltoa(DatumGetInt32(value), digits);
			return digits;
		case CELL_INT8:
			*len = pg_lltoa(DatumGetInt64(value), digits);
			return digits;
		case CELL_OUTPUT:
			break;
	}
	{
		char	   *s = OutputFunctionCall(&cell->output, value);

		*len = strlen(s);
		return s;
	}
}

/* Appends <td>value</td>, the value as text and escaped; NULL is empty. */
static void
append_cell(StringInfo out, CellType *cell, Datum value, bool isnull)
{
	APPEND_LITERAL(out, "<td>");
	if (!isnull)
	{
		char		digits[CELL_DIGITS_SIZE];
		int			len;
		const char *s = cell_text(cell, value, digits, &len);

		/* digits need no escaping */
		if (cell->kind == CELL_INT4 || cell->kind == CELL_INT8)
			append_short(out, s, len);
		else
			html_escape_append(out, s, len);
	}
	APPEND_LITERAL(out, "</td>");
}

/* Appends a VARIADIC array's elements as cells. */
static void
append_array_cells(StringInfo out, CellTypes *types, ArrayType *array)
{
	Datum	   *values;
	bool	   *nulls;
	int			n;

	deconstruct_array(array, types->cells[0].type, types->elem_len,
					  types->elem_byval, types->elem_align, &values, &nulls, &n);
	for (int i = 0; i < n; i++)
		append_cell(out, &types->cells[0], values[i], nulls[i]);
}

/* A new, empty state, in the current memory context. */
static HtmlRowsState *
html_rows_state_new(void)
{
	HtmlRowsState *state = palloc0(sizeof(HtmlRowsState));

	initStringInfo(&state->keys);
	initStringInfo(&state->html);
	state->maxrows = HTML_ROWS_INITIAL;
	state->rows = palloc(state->maxrows * sizeof(HtmlRow));
	return state;
}

/*
 * The key's first eight bytes as a number that orders as the bytes do (a
 * shorter key padded with zero bytes, which text never holds): most keys
 * are told apart by it without a call to memcmp.
 */
static uint64
key_prefix(const char *key, int key_len)
{
	uint64		prefix = 0;

	if (key_len >= (int) sizeof(uint64))
	{
		memcpy(&prefix, key, sizeof(uint64));
		return pg_ntoh64(prefix);
	}
	for (int i = 0; i < (int) sizeof(uint64); i++)
		prefix = (prefix << 8) | (i < key_len ? (unsigned char) key[i] : 0);
	return prefix;
}

/*
 * Starts a row with its key (NULL: a NULL key) and opens its <tr>; the
 * caller appends its cells to state->html, then calls html_rows_end.
 */
static HtmlRow *
html_rows_begin(HtmlRowsState *state, const char *key, int key_len)
{
	HtmlRow    *row;

	if (state->nrows == state->maxrows)
	{
		state->maxrows *= 2;
		state->rows = repalloc(state->rows, state->maxrows * sizeof(HtmlRow));
	}
	row = &state->rows[state->nrows];
	row->seq = state->nrows;
	if (key == NULL)
	{
		row->key_off = -1;
		row->key_len = 0;
		row->key_prefix = 0;
	}
	else
	{
		row->key_off = state->keys.len;
		row->key_len = key_len;
		row->key_prefix = key_prefix(key, key_len);
		append_short(&state->keys, key, key_len);
	}
	row->html_off = state->html.len;
	APPEND_LITERAL(&state->html, "<tr>");
	return row;
}

/* Closes the row html_rows_begin started. */
static void
html_rows_end(HtmlRowsState *state, HtmlRow *row)
{
	APPEND_LITERAL(&state->html, "</tr>");
	row->html_len = state->html.len - row->html_off;
	state->nrows++;
}

/* html_rows' transition: renders this row and keeps it with its key. */
Datum
webgres_html_rows_add(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MemoryContext old;
	HtmlRowsState *state;
	CellTypes  *types;
	HtmlRow    *row;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("webgres.html_rows_add called outside an aggregate")));
	types = cell_types(fcinfo);

	old = MemoryContextSwitchTo(aggcontext);
	if (PG_ARGISNULL(0))
		state = html_rows_state_new();
	else
		state = (HtmlRowsState *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(1))
		row = html_rows_begin(state, NULL, 0);
	else
	{
		text	   *key = PG_GETARG_TEXT_PP(1);

		row = html_rows_begin(state, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	}

	if (types->variadic_array)
	{
		if (!PG_ARGISNULL(FIRST_CELL_ARG))
			append_array_cells(&state->html, types,
							   PG_GETARG_ARRAYTYPE_P(FIRST_CELL_ARG));
	}
	else
	{
		for (int i = 0; i < types->ncells; i++)
			append_cell(&state->html, &types->cells[i],
						PG_GETARG_DATUM(FIRST_CELL_ARG + i),
						PG_ARGISNULL(FIRST_CELL_ARG + i));
	}
	html_rows_end(state, row);

	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(state);
}

/*
 * Orders rows by key in byte order (COLLATE "C"'s order, which in UTF-8 is
 * code-point order), a NULL key last as ORDER BY puts it, ties by arrival.
 */
static int
compare_rows(const void *a, const void *b, void *arg)
{
	const char *keys = (const char *) arg;
	const HtmlRow *x = *(HtmlRow *const *) a;
	const HtmlRow *y = *(HtmlRow *const *) b;
	int			c;

	if (x->key_off < 0 || y->key_off < 0)
	{
		if (x->key_off >= 0)
			return -1;
		if (y->key_off >= 0)
			return 1;
		return (x->seq > y->seq) - (x->seq < y->seq);
	}
	if (x->key_prefix != y->key_prefix)
		return x->key_prefix < y->key_prefix ? -1 : 1;
	c = memcmp(keys + x->key_off, keys + y->key_off,
			   Min(x->key_len, y->key_len));
	if (c != 0)
		return c;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The state's rows in key order, as one text. */
static text *
html_rows_text(HtmlRowsState *state)
{
	HtmlRow   **order;
	text	   *result;
	char	   *p;

	order = palloc(Max(state->nrows, 1) * sizeof(HtmlRow *));
	for (int i = 0; i < state->nrows; i++)
		order[i] = &state->rows[i];
	if (state->nrows <= HTML_ROWS_INSERTION_MAX)
	{
		/* ties keep arrival order: a row moves past greater ones only */
		for (int i = 1; i < state->nrows; i++)
		{
			HtmlRow    *row = order[i];
			int			j = i;

			while (j > 0 && compare_rows(&row, &order[j - 1], state->keys.data) < 0)
			{
				order[j] = order[j - 1];
				j--;
			}
			order[j] = row;
		}
	}
	else
		qsort_arg(order, state->nrows, sizeof(HtmlRow *), compare_rows,
				  state->keys.data);

	result = palloc(VARHDRSZ + state->html.len);
	SET_VARSIZE(result, VARHDRSZ + state->html.len);
	p = VARDATA(result);
	for (int i = 0; i < state->nrows; i++)
	{
		memcpy(p, state->html.data + order[i]->html_off, order[i]->html_len);
		p += order[i]->html_len;
	}
	pfree(order);
	return result;
}

/*
 * html_rows' final function: the rows in key order, as one text.  The state
 * is only read (the sort is of pointers), so Postgres may share it.
 */
Datum
webgres_html_rows_final(PG_FUNCTION_ARGS)
{
	HtmlRowsState *state;
	text	   *result;

	if (!AggCheckCallContext(fcinfo, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("webgres.html_rows_final called outside an aggregate")));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (HtmlRowsState *) PG_GETARG_POINTER(0);

	result = html_rows_text(state);
	PG_RETURN_TEXT_P(result);
}

/*
 * What html_rows_of found out about its row type and columns at one call
 * site (fn_extra), kept while the type and the names stay the same.
 */
typedef struct RowsOfSite
{
	RowColumns	cols;			/* the row type, and the names (key first) */
	bool		key_given;		/* key not NULL */
	AttrNumber	key_att;		/* the key's column */
	CellType	key;
	int			ncols;
	AttrNumber *atts;			/* each column's attribute number */
	CellType   *cells;			/* ... and how it becomes text */
} RowsOfSite;

/* Appends name and its NUL to buf. */
static void
append_name(StringInfo buf, text *name)
{
	appendBinaryStringInfo(buf, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	appendStringInfoChar(buf, '\0');
}

/* Copies a cell's type into mcxt (its output function's cache left behind). */
static void
cell_type_copy(CellType *dst, const CellType *src, MemoryContext mcxt)
{
	*dst = *src;
	if (src->kind == CELL_OUTPUT)
		fmgr_info_copy(&dst->output, unconstify(FmgrInfo *, &src->output), mcxt);
}

/* Copies a call site's findings into mcxt, for row_sites_*. */
static void *
rows_of_site_copy(const void *from, MemoryContext mcxt)
{
	const RowsOfSite *src = (const RowsOfSite *) from;
	RowsOfSite *dst = MemoryContextAlloc(mcxt, sizeof(RowsOfSite));

	*dst = *src;
	row_columns_copy(&dst->cols, &src->cols, mcxt);
	cell_type_copy(&dst->key, &src->key, mcxt);
	dst->atts = MemoryContextAlloc(mcxt, Max(src->ncols, 1) * sizeof(AttrNumber));
	memcpy(dst->atts, src->atts, src->ncols * sizeof(AttrNumber));
	dst->cells = MemoryContextAlloc(mcxt, Max(src->ncols, 1) * sizeof(CellType));
	for (int i = 0; i < src->ncols; i++)
		cell_type_copy(&dst->cells[i], &src->cells[i], mcxt);
	return dst;
}

/*
 * Finds the key's and the columns' attributes and how each becomes text,
 * for the names in columns (key first, if given), in site, whose row type
 * is already known; an unknown or NULL name is an error.
 */
static void
rows_of_find(RowsOfSite *site, MemoryContext mcxt, TupleDesc desc,
			 text *key, ArrayType *columns)
{
	Datum	   *names;
	bool	   *name_nulls;
	int			ncols;

	deconstruct_array(columns, TEXTOID, -1, false, TYPALIGN_INT,
					  &names, &name_nulls, &ncols);
	site->atts = MemoryContextAlloc(mcxt, Max(ncols, 1) * sizeof(AttrNumber));
	site->cells = MemoryContextAllocZero(mcxt, Max(ncols, 1) * sizeof(CellType));
	site->ncols = ncols;
	site->key_given = (key != NULL);
	site->key_att = InvalidAttrNumber;
	memset(&site->key, 0, sizeof(site->key));
	if (key != NULL)
	{
		char	   *name = text_to_cstring(key);

		site->key_att = row_type_column(desc, name, site->cols.row_type, HTML_ROWS_OF);
		cell_type_init(&site->key, TupleDescAttr(desc, site->key_att - 1)->atttypid, mcxt);
	}
	for (int i = 0; i < ncols; i++)
	{
		char	   *name;

		if (name_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("webgres.html_rows_of: column %d is named by a null", i + 1)));
		name = TextDatumGetCString(names[i]);
		site->atts[i] = row_type_column(desc, name, site->cols.row_type, HTML_ROWS_OF);
		cell_type_init(&site->cells[i], TupleDescAttr(desc, site->atts[i] - 1)->atttypid, mcxt);
	}
}

/*
 * The call site's columns for this row type, key and columns (their bytes
 * as given in args), found again when any of them changed: from what the
 * backend kept of an earlier transaction's call if it can, else from the
 * catalog.
 */
static RowsOfSite *
rows_of_site(FunctionCallInfo fcinfo, const char *args, int args_len,
			 text *key, ArrayType *columns)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	RowsOfSite *site = (RowsOfSite *) flinfo->fn_extra;
	MemoryContext mcxt = flinfo->fn_mcxt;
	Oid			arg_type = get_fn_expr_argtype(flinfo, 0);
	TupleDesc	desc;

	if (site != NULL)
	{
		row_columns_desc(&site->cols, flinfo, 0, true, HTML_ROWS_OF);
		if (row_columns_current(&site->cols, args, args_len, key != NULL))
			return site;
	}
	else
	{
		site = row_sites_recall(HTML_ROWS_OF, arg_type, args, args_len,
								key != NULL, mcxt, rows_of_site_copy);
		if (site != NULL)
		{
			flinfo->fn_extra = site;
			return site;
		}
		site = MemoryContextAllocZero(mcxt, sizeof(RowsOfSite));
		flinfo->fn_extra = site;
	}

	/* Found afresh; the site keeps them only once every name resolved. */
	desc = row_columns_desc(&site->cols, flinfo, 0, true, HTML_ROWS_OF);
	row_columns_forget(&site->cols);
	if (site->atts != NULL)
	{
		pfree(site->atts);
		pfree(site->cells);
	}
	rows_of_find(site, mcxt, desc, key, columns);
	row_columns_keep(&site->cols, mcxt, args, args_len, key != NULL);
	row_sites_remember(HTML_ROWS_OF, arg_type, site, rows_of_site_copy);
	return site;
}

/* Starts the row of a deformed tuple with the key column's text (if any). */
static HtmlRow *
begin_row_of(HtmlRowsState *state, RowsOfSite *site, Datum *values, bool *nulls)
{
	char		digits[CELL_DIGITS_SIZE];
	int			len;
	const char *key;

	if (!site->key_given || nulls[site->key_att - 1])
		return html_rows_begin(state, NULL, 0);
	key = cell_text(&site->key, values[site->key_att - 1], digits, &len);
	return html_rows_begin(state, key, len);
}

/*
 * webgres.html_rows_of(rows anyarray, key text, VARIADIC columns text[])
 * returns text: the rows of an HTML table, one for each element of rows (an
 * array of a row type), its named columns as cells, rendered and ordered
 * as html_rows renders and orders its rows (key names the column whose text
 * orders them; NULL keeps the array's order).  NULL for a NULL array, empty
 * for an empty one; a NULL element is a row of empty cells.
 */
Datum
webgres_html_rows_of(PG_FUNCTION_ARGS)
{
	AnyArrayType *rows;
	text	   *key = NULL;
	ArrayType  *columns;
	StringInfoData args;
	RowsOfSite *site;
	TupleDesc	desc;
	int			nelems;
	array_iter	iter;
	Datum	   *values;
	bool	   *nulls;
	HtmlRowsState *state;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("webgres.html_rows_of: the columns must not be null")));
	/* An expanded array (from ||, say) is read as it is, not flattened. */
	rows = PG_GETARG_ANY_ARRAY_P(0);
	columns = PG_GETARG_ARRAYTYPE_P(2);

	/* What the site's findings depend on: the key's name, the columns' array */
	initStringInfo(&args);
	if (!PG_ARGISNULL(1))
	{
		key = PG_GETARG_TEXT_PP(1);
		append_name(&args, key);
	}
	appendBinaryStringInfo(&args, (char *) columns, VARSIZE(columns));
	site = rows_of_site(fcinfo, args.data, args.len, key, columns);
	desc = site->cols.type_entry->tupDesc;
	values = palloc(Max(desc->natts, 1) * sizeof(Datum));
	nulls = palloc(Max(desc->natts, 1) * sizeof(bool));

	nelems = ArrayGetNItems(AARR_NDIM(rows), AARR_DIMS(rows));
	array_iter_setup(&iter, rows);
	state = html_rows_state_new();
	for (int i = 0; i < nelems; i++)
	{
		bool		row_null;
		Datum		row = array_iter_next(&iter, &row_null, i, -1, false,
										  TYPALIGN_DOUBLE);
		HtmlRow    *html_row;

		row_array_deform(row, row_null, desc, values, nulls);
		html_row = begin_row_of(state, site, values, nulls);
		for (int c = 0; c < site->ncols; c++)
			append_cell(&state->html, &site->cells[c],
						values[site->atts[c] - 1], nulls[site->atts[c] - 1]);
		html_rows_end(state, html_row);
	}
	PG_RETURN_TEXT_P(html_rows_text(state));
}
