/*
 * stream.c
 *		Streamed responses: a handler's rows written as they are fetched.
 *
 * The rows come from a cursor, STREAM_BATCH_ROWS at a time (fewer when rows
 * are large: a batch aims at STREAM_BATCH_BYTES of output).  Each batch is
 * rendered into one buffer and handed to the sink before the next is
 * fetched, so memory holds one batch whatever the size of the result, and a
 * sink that blocks holds the query.  JSON objects are built by Postgres'
 * own row_to_json(), CSV fields by each type's output function.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timeout.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "message/errors.h"
#include "message/response.h"
#include "handler/stream.h"
#include "parse/accept_media.h"

/* The formats in the order preferred when the Accept header ties. */
static const struct
{
	AcceptOffer offer;
	StreamFormat format;
	const char *content_type;
}			formats[] = {
	{{"application", "json"}, STREAM_JSON, "application/json"},
	{{"application", "x-ndjson"}, STREAM_NDJSON, "application/x-ndjson"},
	{{"text", "csv"}, STREAM_CSV, "text/csv; charset=utf-8; header=present"},
};

#define NFORMATS ((int) lengthof(formats))

/* The format the request's Accept header asks for (parse/accept_media.c). */
StreamFormat
stream_negotiate(h2o_req_t *req)
{
	AcceptOffer offers[NFORMATS];
	AcceptScore scores[NFORMATS];
	bool		any_accept = false;
	int			best;

	for (int f = 0; f < NFORMATS; f++)
		offers[f] = formats[f].offer;
	accept_media_init(scores, NFORMATS);
	for (size_t i = 0; i < req->headers.size; i++)
	{
		h2o_header_t *h = &req->headers.entries[i];

		if (h2o_lcstris(h->name->base, h->name->len, H2O_STRLIT("accept")) &&
			accept_media_scan(h->value.base, h->value.len, offers, NFORMATS, scores))
			any_accept = true;
	}
	if (!any_accept)
		return STREAM_JSON;
	best = accept_media_best(scores, NFORMATS);
	return best < 0 ? STREAM_NOT_ACCEPTABLE : formats[best].format;
}

/* What rendering a stream needs, set up once. */
typedef struct Renderer
{
	StreamFormat format;
	TupleDesc	desc;			/* blessed copy of the cursor's: row_to_json */
	FmgrInfo   *out;			/* CSV: each column's output function */
	uint64		rows;
} Renderer;

/* Appends s as one CSV field: quoted when it must be (RFC 4180). */
static void
csv_field(StringInfo buf, const char *s)
{
	bool		quote = (*s == '\0');

	for (const char *p = s; *p && !quote; p++)
		if (*p == ',' || *p == '"' || *p == '\r' || *p == '\n')
			quote = true;
	if (!quote)
	{
		appendStringInfoString(buf, s);
		return;
	}
	appendStringInfoChar(buf, '"');
	for (const char *p = s; *p; p++)
	{
		if (*p == '"')
			appendStringInfoChar(buf, '"');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

/* Sets up r for the cursor's columns; allocates in the current context. */
static void
renderer_init(Renderer *r, StreamFormat format, TupleDesc portal_desc)
{
	r->format = format;
	r->rows = 0;
	r->desc = CreateTupleDescCopy(portal_desc);
	BlessTupleDesc(r->desc);
	r->out = NULL;
	if (format == STREAM_CSV)
	{
		r->out = palloc0(sizeof(FmgrInfo) * Max(r->desc->natts, 1));
		for (int i = 0; i < r->desc->natts; i++)
		{
			Oid			typoutput;
			bool		typisvarlena;

			getTypeOutputInfo(TupleDescAttr(r->desc, i)->atttypid, &typoutput, &typisvarlena);
			fmgr_info(typoutput, &r->out[i]);
		}
	}
}

/* What the document holds before its first row. */
static void
render_start(Renderer *r, StringInfo buf)
{
	if (r->format == STREAM_JSON)
		appendStringInfoChar(buf, '[');
	else if (r->format == STREAM_CSV)
	{
		for (int i = 0; i < r->desc->natts; i++)
		{
			if (i > 0)
				appendStringInfoChar(buf, ',');
			csv_field(buf, NameStr(TupleDescAttr(r->desc, i)->attname));
		}
		appendStringInfoString(buf, "\r\n");
	}
}

/* Appends one row. */
static void
render_row(Renderer *r, StringInfo buf, HeapTuple tuple)
{
	if (r->format == STREAM_CSV)
	{
		for (int i = 0; i < r->desc->natts; i++)
		{
			bool		isnull;
			Datum		value = heap_getattr(tuple, i + 1, r->desc, &isnull);

			if (i > 0)
				appendStringInfoChar(buf, ',');
			if (!isnull)	/* NULL is an empty field; '' is "" */
				csv_field(buf, OutputFunctionCall(&r->out[i], value));
		}
		appendStringInfoString(buf, "\r\n");
	}
	else
	{
		Datum		row = heap_copy_tuple_as_datum(tuple, r->desc);
		text	   *json = DatumGetTextPP(DirectFunctionCall1(row_to_json, row));

		if (r->format == STREAM_JSON && r->rows > 0)
			appendStringInfoString(buf, ",\n");
		appendBinaryStringInfo(buf, VARDATA_ANY(json), VARSIZE_ANY_EXHDR(json));
		if (r->format == STREAM_NDJSON)
			appendStringInfoChar(buf, '\n');
	}
	r->rows++;
}

/* What the document holds after its last row. */
static void
render_end(Renderer *r, StringInfo buf)
{
	if (r->format == STREAM_JSON)
		appendStringInfoString(buf, "]\n");
}

/* Sets the head: 200, extra headers, the format's type unless they set one. */
static void
set_head(h2o_req_t *req, StreamFormat format, const char *extra_headers)
{
	bool		has_type = false;

	req->res.status = 200;
	req->res.reason = http_reason(200);
	req->res.headers = (h2o_headers_t) {NULL};
	if (extra_headers != NULL)
		response_add_headers(req, DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																	 CStringGetDatum(extra_headers))));
	for (size_t i = 0; i < req->res.headers.size; i++)
		if (req->res.headers.entries[i].name == &H2O_TOKEN_CONTENT_TYPE->buf)
			has_type = true;
	for (int f = 0; f < NFORMATS && !has_type; f++)
		if (formats[f].format == format)
			h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
						   formats[f].content_type, strlen(formats[f].content_type));
	req->res.content_length = SIZE_MAX;
}

/* Raised when the sink's peer (the worker, and so the client) is gone. */
static void
peer_gone(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("the client went away during a streamed response"),
			 errdetail("The query was cancelled and its transaction rolled back.")));
}

/* Fetches every row of portal and writes the document to sink. */
void
stream_run(h2o_req_t *req, Portal portal, StreamFormat format, bool head_only,
		   const char *extra_headers, const StreamSink *sink, TimestampTz stream_deadline)
{
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "webgres stream batch",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt;
	Renderer	r;
	long		batch = head_only ? 1 : STREAM_BATCH_ROWS;
	bool		first = true;
	bool		done = false;

	renderer_init(&r, format, portal->tupDesc);
	while (!done)
	{
		StringInfoData buf;
		SPITupleTable *tuptable;
		uint64		n;

		MemoryContextReset(batch_cxt);
		oldcxt = MemoryContextSwitchTo(batch_cxt);
		initStringInfo(&buf);
		MemoryContextSwitchTo(oldcxt);

		SPI_cursor_fetch(portal, true, batch);
		tuptable = SPI_tuptable;
		n = SPI_processed;
		done = head_only || n < (uint64) batch;

		oldcxt = MemoryContextSwitchTo(batch_cxt);
		if (first && !head_only)
			render_start(&r, &buf);
		for (uint64 i = 0; i < n && !head_only; i++)
			render_row(&r, &buf, tuptable->vals[i]);
		if (done && !head_only)
			render_end(&r, &buf);
		MemoryContextSwitchTo(oldcxt);
		SPI_freetuptable(tuptable);

		if (first)
		{
			/* The first batch is in: from here on errors cut the stream. */
			set_head(req, format, extra_headers);
			if (!sink->begin(sink->arg, req))
				peer_gone();
			disable_timeout(STATEMENT_TIMEOUT, false);
			if (stream_deadline != 0)
				enable_timeout_at(STATEMENT_TIMEOUT, stream_deadline);
			first = false;
		}
		if (buf.len > 0 && !sink->write(sink->arg, buf.data, buf.len))
			peer_gone();

		/* Large rows: fewer a batch; small ones: back up to the maximum. */
		if (buf.len > STREAM_BATCH_BYTES && batch > 1)
			batch = Max(1, (long) ((double) batch * STREAM_BATCH_BYTES / buf.len));
		else if (buf.len < STREAM_BATCH_BYTES / 2 && batch < STREAM_BATCH_ROWS && !head_only)
			batch = Min(STREAM_BATCH_ROWS, batch * 2);
	}
	MemoryContextDelete(batch_cxt);
}
