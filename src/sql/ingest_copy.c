/*
 * ingest_copy.c
 *		webgres.ingest's fast path: rows loaded by Postgres' own COPY FROM
 *		(BeginCopyFrom with a data source callback, CopyFrom), reading a CSV
 *		body's bytes where they are (docs/uploads.md#speed).
 *
 * COPY FROM runs the table's defaults, constraints, triggers and generated
 * columns as INSERT does, but refuses tables with row-level security for
 * the role and tables that are not tables (views): those keep ingest.c's
 * INSERT path.  For CSV the callback hands COPY the body a record at a
 * time, skipping blank lines (which COPY would read as a row of NULLs) and
 * CRLF turned into LF; JSON rows go as lines of COPY's text format.  An
 * error raised for a row is given back naming the body's line, found
 * again by scanning the body from the start.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "tcop/utility.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "sql/ingest.h"

/* The body's CSV records on their way to COPY. */
typedef struct CsvFeed
{
	const char *s;
	size_t		len;
	size_t		pos;			/* the next byte not yet scanned */
	long		line;			/* the body's line at pos (from 1) */
	const char *pend;			/* what is left of the record being handed */
	size_t		pendlen;
	bool		pend_nl;		/* its newline is still to be handed */
} CsvFeed;

/* One record of the body, without its line end. */
typedef struct CsvRecord
{
	const char *s;
	size_t		len;
	long		line;			/* the body's line it starts on */
	int			lines;			/* how many lines it spans (quoted newlines) */
} CsvRecord;

/* JSON rows on their way to COPY, as lines of its text format. */
typedef struct RowFeed
{
	IngestNextRow next;
	IngestRowNumber number;
	void	   *arg;
	char	  **fields;			/* the row's texts, NULL for NULL */
	int			nfields;
	StringInfoData line;		/* the row as COPY reads it */
	size_t		done;			/* how much of it was handed */
	bool		ended;
	ErrorData  *deferred;		/* why the rows stopped early, or NULL */
	MemoryContext rowcxt;		/* reset after each row */
	MemoryContext cxt;
} RowFeed;

/* One COPY of a body: the feed, and where its error happened. */
typedef struct CopyLoad
{
	CsvFeed		feed;
	CsvFeed		origin;			/* the feed as it started: to number lines again */
	RowFeed    *rows;			/* or JSON rows, when not NULL */
	const char *unit;			/* "line" or "element" */
	CopyFromState cstate;
	ErrorContextCallback errcb;
	bool		at_row;			/* the error was raised for a row COPY read */
	uint64		copy_line;		/* its line as COPY counts them */
	const char *attname;		/* its column, when converting a value */
	MemoryContext cxt;
} CopyLoad;

/*
 * The feed COPY reads from: its data source callback takes no argument,
 * so it is set for the time of one CopyFrom().
 */
static CsvFeed *current_feed = NULL;
static RowFeed *current_rows = NULL;

/*
 * The next non-blank record of the feed, or false at the end.  Only a
 * record with a quote before its first newline needs the byte loop: a
 * newline inside quotes belongs to the record (COPY follows the quotes the
 * same way, "" toggling twice).
 */
static bool
next_record(CsvFeed *f, CsvRecord *r)
{
	while (f->pos < f->len)
	{
		const char *start = f->s + f->pos;
		size_t		rest = f->len - f->pos;
		const char *nl = memchr(start, '\n', rest);
		size_t		n = nl ? (size_t) (nl - start) : rest;
		int			lines = 1;
		bool		in_quote = false;

		if (memchr(start, '"', n) != NULL)
		{
			for (n = 0; n < rest; n++)
			{
				if (start[n] == '"')
					in_quote = !in_quote;
				else if (start[n] == '\n')
				{
					if (!in_quote)
						break;
					lines++;
				}
			}
		}
		r->s = start;
		r->line = f->line;
		r->lines = lines;
		f->pos += n < rest ? n + 1 : n;
		f->line += lines;
		if (!in_quote && n > 0 && start[n - 1] == '\r')
			n--;
		if (n == 0)
			continue;			/* a blank line */
		r->len = n;
		return true;
	}
	return false;
}

/*
 * COPY's data source: fills outbuf with up to maxread bytes of records,
 * each ended by LF; 0 at the end of the body.  A record that is only \.
 * (COPY's end-of-data marker) is handed quoted, as the data it is.
 */
static int
feed_copy(void *outbuf, int minread, int maxread)
{
	CsvFeed    *f = current_feed;
	char	   *out = outbuf;
	int			n = 0;

	while (n < maxread)
	{
		if (f->pendlen == 0 && !f->pend_nl)
		{
			CsvRecord	r;

			if (!next_record(f, &r))
				break;
			if (r.len == 2 && r.s[0] == '\\' && r.s[1] == '.')
			{
				f->pend = "\"\\.\"";
				f->pendlen = 4;
			}
			else
			{
				f->pend = r.s;
				f->pendlen = r.len;
			}
			f->pend_nl = true;
		}
		if (f->pendlen > 0)
		{
			size_t		k = Min(f->pendlen, (size_t) (maxread - n));

			memcpy(out + n, f->pend, k);
			n += (int) k;
			f->pend += k;
			f->pendlen -= k;
		}
		if (f->pendlen == 0 && f->pend_nl && n < maxread)
		{
			out[n++] = '\n';
			f->pend_nl = false;
		}
	}
	return n;
}

/* Appends text to buf escaped for COPY's text format. */
static void
append_copy_text(StringInfo buf, const char *text)
{
	const char *run = text;

	for (const char *p = text; *p; p++)
	{
		char		esc;

		switch (*p)
		{
			case '\\':
				esc = '\\';
				break;
			case '\n':
				esc = 'n';
				break;
			case '\r':
				esc = 'r';
				break;
			case '\t':
				esc = 't';
				break;
			default:
				continue;
		}
		appendBinaryStringInfo(buf, run, p - run);
		appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, esc);
		run = p + 1;
	}
	appendStringInfoString(buf, run);
}

/*
 * Makes the feed's next row into f->line; false at the end, or when the
 * row could not be made (its error kept in f->deferred: it was raised by
 * parsing or by the shape of the row, not by the database).
 */
static bool
next_row_line(RowFeed *f)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(f->rowcxt);
	volatile bool got = false;
	long		n;

	PG_TRY();
	{
		got = f->next(f->arg, f->fields, &n);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(f->cxt);
		f->deferred = CopyErrorData();
		FlushErrorState();
		/* COPY's context would name a line COPY is on, not this one. */
		f->deferred->context = NULL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	resetStringInfo(&f->line);
	f->done = 0;
	if (got)
	{
		for (int i = 0; i < f->nfields; i++)
		{
			if (i > 0)
				appendStringInfoChar(&f->line, '\t');
			if (f->fields[i] == NULL)
				appendStringInfoString(&f->line, "\\N");
			else
				append_copy_text(&f->line, f->fields[i]);
		}
		appendStringInfoChar(&f->line, '\n');
	}
	MemoryContextReset(f->rowcxt);
	return got;
}

/* COPY's data source for JSON rows: lines of its text format, 0 at the end. */
static int
feed_rows(void *outbuf, int minread, int maxread)
{
	RowFeed    *f = current_rows;
	char	   *out = outbuf;
	int			n = 0;

	while (n < maxread)
	{
		size_t		k;

		if (f->done == (size_t) f->line.len)
		{
			if (f->ended || !next_row_line(f))
			{
				f->ended = true;
				break;
			}
		}
		k = Min((size_t) f->line.len - f->done, (size_t) (maxread - n));
		memcpy(out + n, f->line.data + f->done, k);
		n += (int) k;
		f->done += k;
	}
	return n;
}

/*
 * The body's line of the record holding COPY's line copy_line.  COPY counts
 * from 1 the lines it was handed, and the newlines inside quotes once it
 * knows its line end: from the end of the first record on (15 to 18 alike).
 */
static long
body_line_of(const CsvFeed *origin, uint64 copy_line)
{
	CsvFeed		f = *origin;
	CsvRecord	r;
	uint64		handed = 0;
	long		last = origin->line;

	while (next_record(&f, &r))
	{
		last = r.line;
		handed += handed == 0 ? 1 : r.lines;
		if (copy_line <= handed)
			break;
	}
	return last;
}

/*
 * Error context callback: notes whether the error being raised is for a
 * row COPY was reading (COPY's own callback is on the stack above this
 * one), and which line and column.  Errors of AFTER triggers, run once
 * the rows are read, are not.
 */
static void
note_copy_row(void *arg)
{
	CopyLoad   *cl = arg;

	cl->at_row = false;
	for (ErrorContextCallback *e = error_context_stack; e != NULL && e != &cl->errcb; e = e->previous)
		if (e->callback == CopyFromErrorCallback)
		{
			cl->at_row = true;
			cl->copy_line = cl->cstate->cur_lineno;
			cl->attname = cl->cstate->cur_attname;
			break;
		}
}

/* Raises the error just caught again, its message prefixed with the body's line. */
static void
rethrow_at_line(CopyLoad *cl)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cl->cxt);
	edata = CopyErrorData();
	FlushErrorState();
	if (cl->at_row)
	{
		long		line = cl->rows ? cl->rows->number(cl->rows->arg, cl->copy_line) :
			body_line_of(&cl->origin, cl->copy_line);

		if (cl->attname != NULL)
			edata->message = psprintf("%s %ld, column \"%s\": %s", cl->unit, line, cl->attname,
									  edata->message);
		else
			edata->message = psprintf("%s %ld: %s", cl->unit, line, edata->message);
	}
	ReThrowError(edata);
}

/*
 * Whether COPY FROM may load rel: a table (or partitioned table) without
 * row-level security for the current role, whose named columns COPY and
 * INSERT treat alike (INSERT refuses a value for a generated column or an
 * identity column GENERATED ALWAYS; COPY writes the latter).
 */
bool
ingest_copy_applies(Relation rel, List *colnames)
{
	TupleDesc	desc = RelationGetDescr(rel);
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return false;
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		return false;
	foreach(lc, colnames)
	{
		const char *name = strVal(lfirst(lc));

		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0 &&
				(att->attgenerated != '\0' || att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS))
				return false;
		}
	}
	return true;
}

/*
 * Runs COPY FROM of rel's columns colnames with options, reading through
 * source, as the current user.  Returns the rows COPY loaded.
 */
static int64
run_copy(CopyLoad *cl, Relation rel, List *colnames, List *options, copy_data_source_cb source)
{
	ParseState *pstate;
	uint64		rows;

	/* What the executor checks for INSERT, COPY's caller checks. */
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP)
		PreventCommandIfReadOnly("COPY FROM");
	cl->cxt = CurrentMemoryContext;

	/* CopyFrom() builds its executor state from this range table. */
	pstate = make_parsestate(NULL);
	addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	/* The body is in the database's encoding: checked, not converted. */
	options = lappend(options, makeDefElem("encoding",
										   (Node *) makeString(pstrdup(GetDatabaseEncodingName())), -1));

	/* As SPI runs a statement: earlier changes seen, a snapshot of its own. */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	cl->cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, source, colnames, options);
	current_feed = &cl->feed;
	current_rows = cl->rows;
	cl->errcb.callback = note_copy_row;
	cl->errcb.arg = cl;
	cl->errcb.previous = error_context_stack;
	error_context_stack = &cl->errcb;
	PG_TRY();
	{
		rows = CopyFrom(cl->cstate);
	}
	PG_CATCH();
	{
		error_context_stack = cl->errcb.previous;
		current_feed = NULL;
		current_rows = NULL;
		rethrow_at_line(cl);
	}
	PG_END_TRY();
	error_context_stack = cl->errcb.previous;
	current_feed = NULL;
	current_rows = NULL;
	EndCopyFrom(cl->cstate);
	PopActiveSnapshot();
	free_parsestate(pstate);
	return (int64) rows;
}

/*
 * Loads CSV records s[0..len) into the columns colnames of rel (open, with
 * RowExclusiveLock) through COPY FROM, as the current user; first_line is
 * the body's line s starts on.  Returns the rows COPY loaded.
 */
int64
ingest_copy_csv(Relation rel, List *colnames, const char *s, size_t len, long first_line)
{
	CopyLoad	cl;

	memset(&cl, 0, sizeof(cl));
	cl.feed.s = s;
	cl.feed.len = len;
	cl.feed.line = first_line;
	cl.origin = cl.feed;
	cl.unit = "line";
	return run_copy(&cl, rel, colnames, list_make1(makeDefElem("format", (Node *) makeString("csv"), -1)),
					feed_copy);
}

/*
 * Loads the rows next gives (ncols texts each) into the columns colnames of
 * rel through COPY FROM in its text format; number turns COPY's line into
 * the body's line (or element, as unit says).  An error next raises stops
 * the rows: raised once COPY has loaded the rows before it, so that the
 * first bad row is the one named.  Returns the rows COPY loaded.
 */
int64
ingest_copy_rows(Relation rel, List *colnames, const char *unit, IngestNextRow next,
				 IngestRowNumber number, void *arg)
{
	CopyLoad	cl;
	RowFeed		rf;
	int64		rows;

	memset(&cl, 0, sizeof(cl));
	memset(&rf, 0, sizeof(rf));
	rf.next = next;
	rf.number = number;
	rf.arg = arg;
	rf.nfields = list_length(colnames);
	rf.fields = palloc0(sizeof(char *) * rf.nfields);
	initStringInfo(&rf.line);
	rf.cxt = CurrentMemoryContext;
	rf.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "webgres ingest row", ALLOCSET_DEFAULT_SIZES);
	cl.rows = &rf;
	cl.unit = unit;
	rows = run_copy(&cl, rel, colnames, list_make1(makeDefElem("format", (Node *) makeString("text"), -1)),
					feed_rows);
	if (rf.deferred != NULL)
		ReThrowError(rf.deferred);
	MemoryContextDelete(rf.rowcxt);
	return rows;
}
