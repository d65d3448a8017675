/*
 * ingest.c
 *		webgres.ingest(target, body, body_type): a request body's rows (CSV,
 *		NDJSON or a JSON array of objects) inserted into a table in the
 *		request's transaction (docs/uploads.md).
 *
 * The CSV header or the first JSON object chooses the columns here.  Rows
 * then go in as the calling role, so that its privileges and the table's
 * constraints, triggers and row-level security apply: through COPY FROM
 * (ingest_copy.c) where the table allows it, else through a prepared
 * INSERT, since COPY FROM refuses tables with row-level security.  On the
 * INSERT path each field is converted by its column's input function here,
 * not by the INSERT, so that a value that does not convert is reported
 * with its line and column; an INSERT that fails is reported with its
 * line.  Any error fails the request's transaction: no row is kept.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "nodes/value.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "message/querystring.h"
#include "parse/csv.h"
#include "sql/ingest.h"

PG_FUNCTION_INFO_V1(webgres_ingest);

/*
 * Rows inserted by one INSERT ... SELECT FROM unnest(arrays): executing a
 * statement a row costs more than converting the row.  A batch that fails
 * is rolled back (it runs in a subtransaction) and its rows inserted one
 * at a time, so that the row at fault is the one reported.
 */
#define INGEST_BATCH_ROWS	1000

/* SQLSTATE WG415: the body's content type is not one ingest reads (HTTP 415). */
#define ERRCODE_UNSUPPORTED_BODY	MAKE_SQLSTATE('W', 'G', '4', '1', '5')

typedef enum IngestFormat
{
	INGEST_CSV,
	INGEST_NDJSON,
	INGEST_JSON_ARRAY
} IngestFormat;

/* A target column of the INSERT. */
typedef struct IngestColumn
{
	char	   *name;
	Oid			type;
	int32		typmod;
	FmgrInfo	input;
	Oid			ioparam;
	Oid			array_type;		/* InvalidOid: none, rows go one at a time */
	int16		typlen;
	bool		typbyval;
	char		typalign;
} IngestColumn;

/* One call's state: the table, the columns the body names, the plan. */
typedef struct Ingest
{
	Relation	rel;			/* open with RowExclusiveLock until the end */
	const char *unit;			/* "line" or "element": how rows are numbered */
	int			ncols;
	IngestColumn *cols;
	SPIPlanPtr	plan;			/* INSERT ... VALUES: one row */
	SPIPlanPtr	batch_plan;		/* INSERT ... SELECT FROM unnest(); or NULL */
	Datum	   *values;			/* the row being loaded */
	char	   *nulls;
	int			nbatch;			/* rows waiting in the batch */
	long	   *batch_lines;	/* each one's line (or element) */
	Datum	  **batch_values;	/* by column, then row */
	bool	  **batch_nulls;
	MemoryContext batchcxt;		/* reset after each batch */
	MemoryContext rowcxt;		/* reset after each row */
	MemoryContext callcxt;		/* where errors are copied to */
	int64		rows;
} Ingest;

/* True if the media type of ct (before any parameter) is type, any case. */
static bool
media_type_is(const char *ct, const char *type)
{
	size_t		n = strlen(type);

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (pg_strncasecmp(ct, type, n) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

/*
 * The format body_type names; *header: whether a CSV body's first record
 * names the columns (RFC 4180's header parameter; present unless it says
 * absent).
 */
static IngestFormat
format_of(const char *ct, bool *header)
{
	*header = true;
	if (media_type_is(ct, "text/csv"))
	{
		const char *p = strchr(ct, ';');

		for (; p != NULL; p = strchr(p + 1, ';'))
		{
			const char *q = p + 1;

			while (*q == ' ' || *q == '\t')
				q++;
			if (pg_strncasecmp(q, "header=absent", 13) == 0)
				*header = false;
		}
		return INGEST_CSV;
	}
	if (media_type_is(ct, "application/x-ndjson") || media_type_is(ct, "application/jsonl") ||
		media_type_is(ct, "application/x-jsonlines"))
		return INGEST_NDJSON;
	if (media_type_is(ct, "application/json"))
		return INGEST_JSON_ARRAY;
	ereport(ERROR,
			(errcode(ERRCODE_UNSUPPORTED_BODY),
			 errmsg("rows cannot be read from a body of type %s", ct),
			 errhint("Send text/csv, application/x-ndjson or application/json (an array of objects).")));
	return INGEST_CSV;			/* not reached */
}

/* Raises the 400 of a body whose shape is wrong at row n. */
static void
bad_row(Ingest *in, long n, const char *fmt, const char *arg)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s %ld: %s", in->unit, n, psprintf(fmt, arg))));
}

/* Adds the target column name (from row n) to the INSERT, or raises 400. */
static void
add_column(Ingest *in, const char *name, long n)
{
	TupleDesc	desc = RelationGetDescr(in->rel);
	IngestColumn *c;
	Oid			infunc;
	MemoryContext oldcxt;

	for (int i = 0; i < in->ncols; i++)
		if (strcmp(in->cols[i].name, name) == 0)
			bad_row(in, n, "column \"%s\" is named twice", name);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), name) != 0)
			continue;
		/* The columns outlive the row that named them. */
		oldcxt = MemoryContextSwitchTo(in->callcxt);
		c = &in->cols[in->ncols++];
		c->name = pstrdup(name);
		c->type = att->atttypid;
		c->typmod = att->atttypmod;
		getTypeInputInfo(c->type, &infunc, &c->ioparam);
		fmgr_info(infunc, &c->input);
		c->array_type = get_array_type(c->type);
		get_typlenbyvalalign(c->type, &c->typlen, &c->typbyval, &c->typalign);
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	bad_row(in, n, psprintf("table %s has no column \"%%s\"",
							RelationGetRelationName(in->rel)), name);
}

/* Every column of the table that takes a value, in order (CSV without a header). */
static void
add_all_columns(Ingest *in)
{
	TupleDesc	desc = RelationGetDescr(in->rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && att->attgenerated == '\0')
			add_column(in, NameStr(att->attname), 1);
	}
}

/* Prepares INSERT INTO table (columns) VALUES ($1, ...) once the columns are known. */
static void
prepare_insert(Ingest *in)
{
	StringInfoData sql;
	Oid		   *types;
	Relation	rel = in->rel;
	MemoryContext oldcxt;

	if (in->ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s 1: no column to load: the first row names none", in->unit)));
	oldcxt = MemoryContextSwitchTo(in->callcxt);
	types = palloc(sizeof(Oid) * in->ncols);
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)));
	for (int i = 0; i < in->ncols; i++)
		appendStringInfo(&sql, "%s%s", i ? ", " : "", quote_identifier(in->cols[i].name));
	appendStringInfoString(&sql, ") VALUES (");
	for (int i = 0; i < in->ncols; i++)
	{
		appendStringInfo(&sql, "%s$%d", i ? ", " : "", i + 1);
		types[i] = in->cols[i].type;
	}
	appendStringInfoChar(&sql, ')');
	in->plan = SPI_prepare(sql.data, in->ncols, types);
	if (in->plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql.data, SPI_result_code_string(SPI_result));
	in->values = palloc(sizeof(Datum) * Max(in->ncols, 1));
	in->nulls = palloc(sizeof(char) * Max(in->ncols, 1));

	/* The same INSERT over arrays, one a column, when every type has one. */
	for (int i = 0; i < in->ncols; i++)
		if (!OidIsValid(in->cols[i].array_type))
		{
			MemoryContextSwitchTo(oldcxt);
			return;
		}
	sql.data[sql.len - 1] = '\0';
	sql.len = strstr(sql.data, ") VALUES (") - sql.data;
	sql.data[sql.len] = '\0';
	appendStringInfoString(&sql, ") SELECT * FROM unnest(");
	for (int i = 0; i < in->ncols; i++)
	{
		appendStringInfo(&sql, "%s$%d", i ? ", " : "", i + 1);
		types[i] = in->cols[i].array_type;
	}
	appendStringInfoChar(&sql, ')');
	in->batch_plan = SPI_prepare(sql.data, in->ncols, types);
	if (in->batch_plan == NULL)
		elog(ERROR, "could not prepare \"%s\": %s", sql.data, SPI_result_code_string(SPI_result));
	in->batch_lines = palloc(sizeof(long) * INGEST_BATCH_ROWS);
	in->batch_values = palloc(sizeof(Datum *) * in->ncols);
	in->batch_nulls = palloc(sizeof(bool *) * in->ncols);
	for (int i = 0; i < in->ncols; i++)
	{
		in->batch_values[i] = palloc(sizeof(Datum) * INGEST_BATCH_ROWS);
		in->batch_nulls[i] = palloc(sizeof(bool) * INGEST_BATCH_ROWS);
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Raises the error just caught again, its message prefixed with where in
 * the body it happened (column may be NULL).  Called in PG_CATCH.
 */
static void
rethrow_at(Ingest *in, long n, const char *column)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(in->callcxt);
	edata = CopyErrorData();
	FlushErrorState();
	if (column != NULL)
		edata->message = psprintf("%s %ld, column \"%s\": %s", in->unit, n, column, edata->message);
	else
		edata->message = psprintf("%s %ld: %s", in->unit, n, edata->message);
	ReThrowError(edata);
}

/* Converts one field's text (NULL: SQL NULL) for column i of row n. */
static void
set_value(Ingest *in, int i, char *text, long n)
{
	IngestColumn *c = &in->cols[i];

	if (text == NULL)
	{
		/* Domains with NOT NULL see the null through their input function. */
		in->values[i] = InputFunctionCall(&c->input, NULL, c->ioparam, c->typmod);
		in->nulls[i] = 'n';
		return;
	}
	PG_TRY();
	{
		in->values[i] = InputFunctionCall(&c->input, text, c->ioparam, c->typmod);
	}
	PG_CATCH();
	{
		rethrow_at(in, n, c->name);
	}
	PG_END_TRY();
	in->nulls[i] = ' ';
}

/* Inserts the row in in->values as row n. */
static void
insert_row(Ingest *in, long n)
{
	PG_TRY();
	{
		int			rc = SPI_execute_plan(in->plan, in->values, in->nulls, false, 0);

		if (rc != SPI_OK_INSERT)
			elog(ERROR, "INSERT failed: %s", SPI_result_code_string(rc));
	}
	PG_CATCH();
	{
		rethrow_at(in, n, NULL);
	}
	PG_END_TRY();
	in->rows += (int64) SPI_processed;
}

/*
 * Whether a batch that failed with code may be retried a row at a time:
 * not when the statement was cancelled, the server is going away or the
 * transaction cannot go on.
 */
static bool
may_retry_rows(int code)
{
	const char *s = unpack_sql_state(code);

	if (code == ERRCODE_QUERY_CANCELED)
		return false;
	return !(s[0] == '5' && (s[1] == '3' || s[1] == '7')) && !(s[0] == '4' && s[1] == '0') &&
		!(s[0] == 'X' && s[1] == 'X') && !(s[0] == '0' && s[1] == '8');
}

/* Inserts the waiting rows with one statement; on failure, one at a time. */
static void
flush_batch(Ingest *in)
{
	MemoryContext oldcxt;
	ResourceOwner oldowner = CurrentResourceOwner;
	Datum	   *args;
	int			dims[1];
	int			lbs[1] = {1};
	volatile bool failed = false;

	if (in->nbatch == 0)
		return;
	oldcxt = MemoryContextSwitchTo(in->batchcxt);
	dims[0] = in->nbatch;
	args = palloc(sizeof(Datum) * in->ncols);
	for (int i = 0; i < in->ncols; i++)
	{
		IngestColumn *c = &in->cols[i];

		args[i] = PointerGetDatum(construct_md_array(in->batch_values[i], in->batch_nulls[i], 1, dims, lbs,
													 c->type, c->typlen, c->typbyval, c->typalign));
	}

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(in->batchcxt);
	PG_TRY();
	{
		int			rc = SPI_execute_plan(in->batch_plan, args, NULL, false, 0);

		if (rc != SPI_OK_INSERT)
			elog(ERROR, "INSERT failed: %s", SPI_result_code_string(rc));
		in->rows += (int64) SPI_processed;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(in->batchcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(in->callcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(in->batchcxt);
		CurrentResourceOwner = oldowner;
		if (!may_retry_rows(edata->sqlerrcode))
			ReThrowError(edata);
		failed = true;
	}
	PG_END_TRY();

	/* Again a row at a time: the first that fails is reported with its line. */
	if (failed)
		for (int k = 0; k < in->nbatch; k++)
		{
			for (int i = 0; i < in->ncols; i++)
			{
				in->values[i] = in->batch_values[i][k];
				in->nulls[i] = in->batch_nulls[i][k] ? 'n' : ' ';
			}
			insert_row(in, in->batch_lines[k]);
		}
	MemoryContextSwitchTo(oldcxt);
	in->nbatch = 0;
	MemoryContextReset(in->batchcxt);
}

/* Loads the row in in->values (row n): into the batch, or at once. */
static void
add_row(Ingest *in, long n)
{
	MemoryContext oldcxt;
	int			k = in->nbatch;

	if (in->batch_plan == NULL)
	{
		insert_row(in, n);
		return;
	}
	oldcxt = MemoryContextSwitchTo(in->batchcxt);
	for (int i = 0; i < in->ncols; i++)
	{
		IngestColumn *c = &in->cols[i];

		in->batch_nulls[i][k] = in->nulls[i] == 'n';
		in->batch_values[i][k] = in->batch_nulls[i][k] ? (Datum) 0 :
			datumCopy(in->values[i], c->typbyval, c->typlen);
	}
	in->batch_lines[k] = n;
	in->nbatch++;
	MemoryContextSwitchTo(oldcxt);
	if (in->nbatch == INGEST_BATCH_ROWS)
		flush_batch(in);
}

/* A CSV field as a NUL-terminated string; NULL for an unquoted empty field. */
static char *
csv_text(const CsvField *f)
{
	char	   *s;
	size_t		len;

	if (!f->quoted && f->len == 0)
		return NULL;
	s = palloc(f->len + 1);
	len = csv_field_copy(f, s);
	s[len] = '\0';
	check_text(s, len, "a CSV field");
	return s;
}

/* Loads a CSV body. */
static void
load_csv(Ingest *in, const char *body, size_t len, bool header)
{
	CsvScan		scan;
	CsvField   *fields = palloc(sizeof(CsvField) * CSV_MAX_FIELDS);
	int			nfields;
	long		line;
	int			rc;

	csv_begin(&scan, body, len);
	if (header)
	{
		rc = csv_next(&scan, fields, CSV_MAX_FIELDS, &nfields, &line);
		if (rc < 0)
			bad_row(in, scan.line, "%s", scan.error);
		if (rc == 0)
			return;
		for (int i = 0; i < nfields; i++)
		{
			char	   *name = csv_text(&fields[i]);

			if (name == NULL)
				bad_row(in, line, "%s", "the header names an empty column");
			add_column(in, name, line);
		}
	}
	else
		add_all_columns(in);

	/* COPY FROM where it applies; the INSERT below where it refuses (RLS, views). */
	if (in->ncols > 0)
	{
		List	   *colnames = NIL;

		for (int i = 0; i < in->ncols; i++)
			colnames = lappend(colnames, makeString(in->cols[i].name));
		if (ingest_copy_applies(in->rel, colnames))
		{
			in->rows = ingest_copy_csv(in->rel, colnames, scan.s + scan.pos, scan.len - scan.pos,
									   scan.line);
			return;
		}
	}
	prepare_insert(in);

	for (;;)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(in->rowcxt);

		rc = csv_next(&scan, fields, CSV_MAX_FIELDS, &nfields, &line);
		if (rc < 0)
			bad_row(in, scan.line, "%s", scan.error);
		if (rc == 0)
		{
			MemoryContextSwitchTo(oldcxt);
			break;
		}
		if (nfields != in->ncols)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("line %ld: %d fields where %d columns are expected", line, nfields, in->ncols)));
		for (int i = 0; i < nfields; i++)
			set_value(in, i, csv_text(&fields[i]), line);
		add_row(in, line);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(in->rowcxt);
	}
}

/* A JSON value as the text its column's input function reads; NULL for null. */
static char *
json_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return NULL;
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvBinary:
			/* An object or array: its JSON text, for json and jsonb columns. */
			return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return NULL;				/* not reached */
}

/*
 * The column texts of one JSON object (row n) into texts (NULL: SQL NULL).
 * The first row's keys chose the columns; later rows may leave keys out
 * (NULL) but not bring new ones.
 */
static void
object_texts(Ingest *in, JsonbContainer *obj, long n, char **texts)
{
	int			matched = 0;

	for (int i = 0; i < in->ncols; i++)
	{
		JsonbValue	key;
		JsonbValue *v;

		key.type = jbvString;
		key.val.string.val = in->cols[i].name;
		key.val.string.len = (int) strlen(in->cols[i].name);
		v = findJsonbValueFromContainer(obj, JB_FOBJECT, &key);
		if (v != NULL)
			matched++;
		texts[i] = v ? json_text(v) : NULL;
	}
	if (matched < (int) JsonContainerSize(obj))
	{
		JsonbIterator *it = JsonbIteratorInit(obj);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			bool		known = false;

			if (tok != WJB_KEY)
				continue;
			for (int i = 0; i < in->ncols && !known; i++)
				known = strlen(in->cols[i].name) == (size_t) v.val.string.len &&
					memcmp(in->cols[i].name, v.val.string.val, v.val.string.len) == 0;
			if (!known)
				bad_row(in, n, "key \"%s\" is not among the first row's keys, which choose the columns",
						pnstrdup(v.val.string.val, v.val.string.len));
		}
	}
}

/* Adds the columns the first object (row n) names, in the order of its keys. */
static void
add_object_columns(Ingest *in, JsonbContainer *obj, long n)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_KEY)
			add_column(in, pnstrdup(v.val.string.val, v.val.string.len), n);
	if (in->ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s 1: no column to load: the first row names none", in->unit)));
}

/* Parses text as jsonb, its errors prefixed with row n. */
static Jsonb *
parse_json(Ingest *in, const char *s, size_t len, long n)
{
	char	   *cstr = pnstrdup(s, len);
	Jsonb	   *jb = NULL;

	check_text(cstr, len, "the body");
	PG_TRY();
	{
		jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(cstr)));
	}
	PG_CATCH();
	{
		rethrow_at(in, n, NULL);
	}
	PG_END_TRY();
	return jb;
}

/* A JSON body's objects, one at a time. */
typedef struct JsonRows
{
	Ingest	   *in;
	bool		array;
	const char *body;
	size_t		len;
	size_t		pos;			/* NDJSON: where the next line starts */
	long		line;			/* NDJSON: the line before it */
	JsonbIterator *it;			/* an array: its elements */
	long		element;
	JsonbContainer *first;		/* the first object, read to choose the columns */
	long		first_n;
} JsonRows;

/*
 * The next NDJSON line of body[0..len) from *pos that is not blank (spaces,
 * tabs, a CR before the LF): its text and its line; false at the end.
 */
static bool
ndjson_line(const char *body, size_t len, size_t *pos, long *line, const char **text, size_t *textlen)
{
	while (*pos < len)
	{
		const char *s = body + *pos;
		const char *nl = memchr(s, '\n', len - *pos);
		size_t		linelen = nl ? (size_t) (nl - s) : len - *pos;

		(*line)++;
		*pos += linelen + (nl ? 1 : 0);
		if (linelen > 0 && s[linelen - 1] == '\r')
			linelen--;
		while (linelen > 0 && (*s == ' ' || *s == '\t'))
			s++, linelen--;
		if (linelen == 0)
			continue;
		*text = s;
		*textlen = linelen;
		return true;
	}
	return false;
}

/* The body's next object, its line (or element) in *n; NULL at the end. */
static JsonbContainer *
json_rows_next(JsonRows *jr, long *n)
{
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (jr->first != NULL)
	{
		JsonbContainer *obj = jr->first;

		*n = jr->first_n;
		jr->first = NULL;
		return obj;
	}
	if (!jr->array)
	{
		const char *text;
		size_t		textlen;
		Jsonb	   *jb;

		if (!ndjson_line(jr->body, jr->len, &jr->pos, &jr->line, &text, &textlen))
			return NULL;
		jb = parse_json(jr->in, text, textlen, jr->line);
		if (!JB_ROOT_IS_OBJECT(jb))
			bad_row(jr->in, jr->line, "%s", "the line is not a JSON object");
		*n = jr->line;
		return &jb->root;
	}
	while ((tok = JsonbIteratorNext(&jr->it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		*n = ++jr->element;
		if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
			bad_row(jr->in, *n, "%s", "the element is not a JSON object");
		return v.val.binary.data;
	}
	return NULL;
}

/* IngestNextRow for the COPY path: the next object's column texts. */
static bool
json_next_row(void *arg, char **fields, long *n)
{
	JsonRows   *jr = arg;
	JsonbContainer *obj = json_rows_next(jr, n);

	if (obj == NULL)
		return false;
	object_texts(jr->in, obj, *n, fields);
	return true;
}

/* IngestRowNumber for the COPY path: the line (or element) of the k-th object. */
static long
json_row_number(void *arg, uint64 k)
{
	JsonRows   *jr = arg;
	size_t		pos = 0;
	long		line = 0;
	const char *text;
	size_t		textlen;

	if (jr->array)
		return (long) k;
	for (uint64 i = 0; i < k && ndjson_line(jr->body, jr->len, &pos, &line, &text, &textlen); i++)
		;
	return line;
}

/*
 * Loads an NDJSON body (one object a line, blank lines skipped) or a JSON
 * array of objects: through COPY where the table allows it, else INSERT.
 */
static void
load_json(Ingest *in, const char *body, size_t len, bool array)
{
	JsonRows	jr;
	JsonbContainer *obj;
	List	   *colnames = NIL;
	char	  **texts;
	long		n;

	memset(&jr, 0, sizeof(jr));
	jr.in = in;
	jr.array = array;
	jr.body = body;
	jr.len = len;
	if (array)
	{
		Jsonb	   *jb;

		in->unit = "line";
		jb = parse_json(in, body, len, 1);
		in->unit = "element";
		if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the body is not a JSON array of objects")));
		jr.it = JsonbIteratorInit(&jb->root);
	}
	if ((obj = json_rows_next(&jr, &n)) == NULL)
		return;
	add_object_columns(in, obj, n);
	jr.first = obj;
	jr.first_n = n;

	for (int i = 0; i < in->ncols; i++)
		colnames = lappend(colnames, makeString(in->cols[i].name));
	if (ingest_copy_applies(in->rel, colnames))
	{
		in->rows = ingest_copy_rows(in->rel, colnames, in->unit, json_next_row, json_row_number, &jr);
		return;
	}

	prepare_insert(in);
	texts = palloc(sizeof(char *) * in->ncols);
	for (;;)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(in->rowcxt);

		if ((obj = json_rows_next(&jr, &n)) == NULL)
		{
			MemoryContextSwitchTo(oldcxt);
			break;
		}
		object_texts(in, obj, n, texts);
		for (int i = 0; i < in->ncols; i++)
			set_value(in, i, texts[i], n);
		add_row(in, n);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(in->rowcxt);
	}
}

/*
 * ingest(target regclass, body bytea, body_type text): inserts the body's
 * rows into target as the calling role; returns how many were inserted.
 */
Datum
webgres_ingest(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bytea	   *body;
	const char *ct;
	IngestFormat format;
	bool		header;
	const char *text_start;
	size_t		text_len;
	Ingest		in;
	int			rc;

	if (PG_ARGISNULL(1))
		PG_RETURN_INT64(0);
	body = PG_GETARG_BYTEA_PP(1);
	ct = PG_ARGISNULL(2) ? "application/octet-stream" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	format = format_of(ct, &header);
	text_start = VARDATA_ANY(body);
	text_len = VARSIZE_ANY_EXHDR(body);
	/* Spreadsheets start UTF-8 CSV with a byte order mark: not part of the first name. */
	if (text_len >= 3 && memcmp(text_start, "\xEF\xBB\xBF", 3) == 0)
	{
		text_start += 3;
		text_len -= 3;
	}

	/* No lock is taken on a table the role may not insert into. */
	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to insert into %s", get_rel_name(relid) ? get_rel_name(relid) : "the table")));

	memset(&in, 0, sizeof(in));
	in.unit = "line";
	in.callcxt = CurrentMemoryContext;
	in.rel = relation_open(relid, RowExclusiveLock);
	in.cols = palloc(sizeof(IngestColumn) * Max(RelationGetDescr(in.rel)->natts, 1));
	in.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "webgres ingest row",
									  ALLOCSET_DEFAULT_SIZES);
	in.batchcxt = AllocSetContextCreate(CurrentMemoryContext, "webgres ingest batch",
										ALLOCSET_DEFAULT_SIZES);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	switch (format)
	{
		case INGEST_CSV:
			load_csv(&in, text_start, text_len, header);
			break;
		case INGEST_NDJSON:
			load_json(&in, text_start, text_len, false);
			break;
		case INGEST_JSON_ARRAY:
			load_json(&in, text_start, text_len, true);
			break;
	}
	flush_batch(&in);
	SPI_finish();
	MemoryContextDelete(in.rowcxt);
	MemoryContextDelete(in.batchcxt);
	relation_close(in.rel, NoLock);
	PG_RETURN_INT64(in.rows);
}
