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
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "sql/html.h"

PG_FUNCTION_INFO_V1(webgres_html_rows_add);
PG_FUNCTION_INFO_V1(webgres_html_rows_final);

/* Appends a string literal without measuring it. */
#define APPEND_LITERAL(out, lit) appendBinaryStringInfo((out), (lit), sizeof(lit) - 1)

/* Rows the state has room for before it first grows. */
#define HTML_ROWS_INITIAL	16

/* The index of the first cell among the transition function's arguments. */
#define FIRST_CELL_ARG		2

/* One row seen: where its key and its rendered <tr> are in the state. */
typedef struct HtmlRow
{
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

/* How one cell's type becomes text. */
typedef struct CellType
{
	Oid			type;
	bool		is_text;		/* text or varchar: its bytes are its text */
	FmgrInfo	output;			/* otherwise, its output function */
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
	cell->is_text = (base == TEXTOID || base == VARCHAROID);
	if (!cell->is_text)
	{
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

/* Appends <td>value</td>, the value as text and escaped; NULL is empty. */
static void
append_cell(StringInfo out, CellType *cell, Datum value, bool isnull)
{
	APPEND_LITERAL(out, "<td>");
	if (!isnull)
	{
		if (cell->is_text)
		{
			text	   *t = DatumGetTextPP(value);

			html_escape_append(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		}
		else
		{
			char	   *s = OutputFunctionCall(&cell->output, value);

			html_escape_append(out, s, strlen(s));
		}
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
	{
		state = palloc0(sizeof(HtmlRowsState));
		initStringInfo(&state->keys);
		initStringInfo(&state->html);
		state->maxrows = HTML_ROWS_INITIAL;
		state->rows = palloc(state->maxrows * sizeof(HtmlRow));
	}
	else
		state = (HtmlRowsState *) PG_GETARG_POINTER(0);

	if (state->nrows == state->maxrows)
	{
		state->maxrows *= 2;
		state->rows = repalloc(state->rows, state->maxrows * sizeof(HtmlRow));
	}
	row = &state->rows[state->nrows];
	row->seq = state->nrows;

	if (PG_ARGISNULL(1))
	{
		row->key_off = -1;
		row->key_len = 0;
	}
	else
	{
		text	   *key = PG_GETARG_TEXT_PP(1);

		row->key_off = state->keys.len;
		row->key_len = VARSIZE_ANY_EXHDR(key);
		appendBinaryStringInfo(&state->keys, VARDATA_ANY(key), row->key_len);
	}

	row->html_off = state->html.len;
	APPEND_LITERAL(&state->html, "<tr>");
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
	APPEND_LITERAL(&state->html, "</tr>");
	row->html_len = state->html.len - row->html_off;
	state->nrows++;

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
	c = memcmp(keys + x->key_off, keys + y->key_off,
			   Min(x->key_len, y->key_len));
	if (c != 0)
		return c;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * html_rows' final function: the rows in key order, as one text.  The state
 * is only read (the sort is of pointers), so Postgres may share it.
 */
Datum
webgres_html_rows_final(PG_FUNCTION_ARGS)
{
	HtmlRowsState *state;
	HtmlRow   **order;
	text	   *result;
	char	   *p;

	if (!AggCheckCallContext(fcinfo, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("webgres.html_rows_final called outside an aggregate")));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (HtmlRowsState *) PG_GETARG_POINTER(0);

	order = palloc(state->nrows * sizeof(HtmlRow *));
	for (int i = 0; i < state->nrows; i++)
		order[i] = &state->rows[i];
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
	PG_RETURN_TEXT_P(result);
}
