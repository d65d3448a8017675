/*
 * functions.c
 *		SQL-callable functions: helpers for handlers and the routes triggers.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "handler/handler.h"
#include "sql/html.h"
#include "routes/ownership.h"
#include "routes/route_modules.h"
#include "serve/cors.h"
#include "parse/pattern.h"
#include "message/querystring.h"
#include "sql/sample.h"

PG_FUNCTION_INFO_V1(webgres_html_escape);
PG_FUNCTION_INFO_V1(webgres_int_param);
PG_FUNCTION_INFO_V1(webgres_random_distinct_ints);
PG_FUNCTION_INFO_V1(webgres_random_int);
PG_FUNCTION_INFO_V1(webgres_body_text);
PG_FUNCTION_INFO_V1(webgres_body_json);
PG_FUNCTION_INFO_V1(webgres_body_form);
PG_FUNCTION_INFO_V1(webgres_check_handler);
PG_FUNCTION_INFO_V1(webgres_route_check);
PG_FUNCTION_INFO_V1(webgres_routes_changed);

/* html_escape(text): the text with HTML's special characters escaped. */
Datum
webgres_html_escape(PG_FUNCTION_ARGS)
{
	text	   *in = PG_GETARG_TEXT_PP(0);
	const char *s = VARDATA_ANY(in);
	size_t		len = VARSIZE_ANY_EXHDR(in);
	StringInfoData out;

	if (!html_needs_escape(s, len))
		PG_RETURN_TEXT_P(in);

	initStringInfo(&out);
	html_escape_append(&out, s, len);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out.data, out.len));
}

/*
 * int_param(value, default, min, max): value as an integer clamped to
 * [min, max]; default when value is NULL, empty or not an integer.
 */
Datum
webgres_int_param(PG_FUNCTION_ARGS)
{
	int32		dflt = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	int32		lo = PG_ARGISNULL(2) ? PG_INT32_MIN : PG_GETARG_INT32(2);
	int32		hi = PG_ARGISNULL(3) ? PG_INT32_MAX : PG_GETARG_INT32(3);
	int64		v = dflt;

	if (lo > hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("int_param: min (%d) is greater than max (%d)", lo, hi)));

	if (!PG_ARGISNULL(0))
	{
		text	   *t = PG_GETARG_TEXT_PP(0);
		const char *s = VARDATA_ANY(t);
		int			len = VARSIZE_ANY_EXHDR(t);
		int			i = 0;
		bool		neg = false;
		int64		acc = 0;
		bool		ok = true;

		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			neg = (s[i++] == '-');
		if (i == len || s[i] < '0' || s[i] > '9')
			ok = false;
		for (; ok && i < len && s[i] >= '0' && s[i] <= '9'; i++)
			if (acc < (int64) 1 << 40)	/* saturate: anything this large clamps alike */
				acc = acc * 10 + (s[i] - '0');
		while (ok && i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (ok && i == len)
			v = neg ? -acc : acc;
	}
	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	PG_RETURN_INT32((int32) v);
}

/*
 * random_int(min, max): an integer drawn uniformly from [min, max], as
 * Postgres 17's random(min, max) draws one, for every supported version.
 * One call where 1 + floor(random() * n)::integer is six, each compiled and
 * its EXECUTE privilege checked whenever a plan starts.
 */
Datum
webgres_random_int(PG_FUNCTION_ARGS)
{
	int32		min = PG_GETARG_INT32(0);
	int32		max = PG_GETARG_INT32(1);

	if (min > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("random_int: min (%d) is greater than max (%d)", min, max)));
	PG_RETURN_INT32(sample_int32(min, max));
}

/*
 * random_distinct_ints(count, min, max): count distinct integers drawn
 * uniformly at random from [min, max], in random order (src/sample.c).
 */
Datum
webgres_random_distinct_ints(PG_FUNCTION_ARGS)
{
	int32		count = PG_GETARG_INT32(0);
	int32		min = PG_GETARG_INT32(1);
	int32		max = PG_GETARG_INT32(2);
	int64		range;
	Size		nbytes;
	ArrayType  *result;

	if (count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("random_distinct_ints: count (%d) must not be negative", count),
				 errhint("Ask for 0 or more values.")));
	if (min > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("random_distinct_ints: min (%d) is greater than max (%d)", min, max),
				 errhint("Give the bounds of the range in order: min <= max.")));
	range = (int64) max - (int64) min + 1;
	if (count > range)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("random_distinct_ints: count (%d) is greater than the number of integers in [%d, %d] (" INT64_FORMAT ")",
						count, min, max, range),
				 errhint("Ask for at most max - min + 1 values, or widen the range.")));
	if ((Size) count > MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("random_distinct_ints: count (%d) exceeds the maximum array size (%d)",
						count, (int) MaxArraySize)));

	if (count == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT4OID));

	/*
	 * A one-dimensional int4[] without nulls, filled in place: its data
	 * starts right after the header (ARR_DATA_PTR says the same, but trips
	 * -Wsign-compare).
	 */
	nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) count * sizeof(int32);
	result = (ArrayType *) palloc0(nbytes);
	SET_VARSIZE(result, nbytes);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = INT4OID;
	ARR_DIMS(result)[0] = count;
	ARR_LBOUND(result)[0] = 1;
	sample_distinct_int32((int32 *) ((char *) result + ARR_OVERHEAD_NONULLS(1)), count, min, max);
	PG_RETURN_ARRAYTYPE_P(result);
}

/* body_text(bytea): the request body as text, checked. */
Datum
webgres_body_text(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	check_text(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), "the request body");
	PG_RETURN_TEXT_P(cstring_to_text_with_len(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)));
}

/* body_json(bytea): the request body parsed as jsonb. */
Datum
webgres_body_json(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	char	   *s;

	check_text(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), "the request body");
	s = pnstrdup(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(s)));
}

/* body_form(bytea): a form-encoded request body as a jsonb object. */
Datum
webgres_body_form(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_JSONB_P(form_to_jsonb(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)));
}

/* SPI_connect, or an error. */
static void
connect_spi(void)
{
	int			rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
}

/* check_handler(handler text): raises the error a route with this handler would get. */
Datum
webgres_check_handler(PG_FUNCTION_ARGS)
{
	char	   *handler = text_to_cstring(PG_GETARG_TEXT_PP(0));

	connect_spi();
	handler_validate(handler, GetUserId(), false, NULL);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * The search_path of routes saved before it was recorded, and of restored
 * rows that do not carry one: the default, which the workers used then.
 */
#define ROUTES_DEFAULT_SEARCH_PATH "\"$user\", public"

/* The longest method name a route may give. */
#define ROUTE_METHOD_MAX_LEN 32

/* The number of the column called name of webgres.routes. */
static int
attnum_of(Relation rel, const char *name)
{
	int			attnum = SPI_fnumber(RelationGetDescr(rel), name);

	if (attnum <= 0)
		elog(ERROR, "webgres.routes has no column \"%s\"", name);
	return attnum;
}

/* True if the text columns attnum of old and new differ. */
static bool
column_changed(HeapTuple oldtup, HeapTuple newtup, TupleDesc desc, int attnum)
{
	char	   *a = SPI_getvalue(oldtup, desc, attnum);
	char	   *b = SPI_getvalue(newtup, desc, attnum);

	return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

/* A row of webgres.routes being saved, as its trigger reads it. */
typedef struct RouteRow
{
	TriggerData *trigdata;
	TupleDesc	desc;
	HeapTuple	tuple;			/* the row as it will be saved */
	bool		is_update;
	int			att_method;
	int			att_path;
	int			att_handler;
	int			att_owner;
	int			att_search_path;	/* <= 0 before version 1.2 */
	char	   *method;
	char	   *path;
	char	   *handler;
	Oid			owner;
	bool		owner_isnull;
	char	   *search_path;
	bool		streams;		/* mode stream */
	bool		websocket;		/* upgrade = 'websocket' (1.6) */
	char	   *on_message;		/* its statements, or NULL */
	char	   *on_close;
} RouteRow;

/* The columns the trigger sets in the row, at most one per column it may set. */
#define ROUTE_ROW_MAX_CHANGES 5
typedef struct RouteRowChanges
{
	int			cols[ROUTE_ROW_MAX_CHANGES];
	Datum		values[ROUTE_ROW_MAX_CHANGES];
	bool		nulls[ROUTE_ROW_MAX_CHANGES];
	int			n;
} RouteRowChanges;

/* Notes that the trigger sets column attnum of the row to value. */
static void
change_column(RouteRowChanges *ch, int attnum, Datum value)
{
	Assert(ch->n < ROUTE_ROW_MAX_CHANGES);
	ch->cols[ch->n] = attnum;
	ch->values[ch->n] = value;
	ch->nulls[ch->n++] = false;
}

/* Reads the columns of the row being saved into row. */
static void
read_route_row(TriggerData *trigdata, RouteRow *row)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	int			att_mode;

	row->trigdata = trigdata;
	row->desc = desc;
	row->is_update = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event);
	row->tuple = row->is_update ? trigdata->tg_newtuple : trigdata->tg_trigtuple;
	row->att_method = attnum_of(rel, "method");
	row->att_path = attnum_of(rel, "path");
	row->att_handler = attnum_of(rel, "handler");
	row->att_owner = attnum_of(rel, "owner");
	/* Before ALTER EXTENSION webgres UPDATE to 1.2 there is no search_path. */
	row->att_search_path = SPI_fnumber(desc, "search_path");

	row->method = SPI_getvalue(row->tuple, desc, row->att_method);
	row->path = SPI_getvalue(row->tuple, desc, row->att_path);
	row->handler = SPI_getvalue(row->tuple, desc, row->att_handler);
	row->search_path = row->att_search_path > 0 ?
		SPI_getvalue(row->tuple, desc, row->att_search_path) : NULL;
	row->owner = DatumGetObjectId(SPI_getbinval(row->tuple, desc, row->att_owner,
												&row->owner_isnull));

	/* A database not yet updated to 1.2 has no mode column. */
	row->streams = false;
	att_mode = SPI_fnumber(desc, "mode");
	if (att_mode > 0)
	{
		char	   *mode = SPI_getvalue(row->tuple, desc, att_mode);

		row->streams = (mode != NULL && strcmp(mode, "stream") == 0);
	}
	/* Before 1.6 there are no WebSocket routes. */
	row->websocket = false;
	row->on_message = row->on_close = NULL;
	if (SPI_fnumber(desc, "upgrade") > 0)
	{
		row->websocket = SPI_getvalue(row->tuple, desc, SPI_fnumber(desc, "upgrade")) != NULL;
		row->on_message = SPI_getvalue(row->tuple, desc, SPI_fnumber(desc, "on_message"));
		row->on_close = SPI_getvalue(row->tuple, desc, SPI_fnumber(desc, "on_close"));
	}
}

/* True if column attnum of the row being saved differs from the old row's. */
static bool
row_changed(const RouteRow *row, int attnum)
{
	return column_changed(row->trigdata->tg_trigtuple, row->tuple, row->desc, attnum);
}

/* Checks the method (letters, '-' and '_', at most 32) and saves it upper-cased. */
static void
normalise_method(RouteRow *row, RouteRowChanges *ch)
{
	char	   *method = row->method;
	size_t		len;

	if (method == NULL)
		return;
	len = strlen(method);
	if (len == 0 || len > ROUTE_METHOD_MAX_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("route method \"%s\" is not a valid HTTP method", method),
				 errhint("Use a method name such as GET or POST, or NULL for any method.")));
	for (size_t i = 0; i < len; i++)
	{
		if (!((method[i] >= 'A' && method[i] <= 'Z') || (method[i] >= 'a' && method[i] <= 'z') || method[i] == '-' || method[i] == '_'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("route method \"%s\" is not a valid HTTP method", method),
					 errhint("Use a method name such as GET or POST, or NULL for any method.")));
		method[i] = pg_ascii_toupper(method[i]);
	}
	change_column(ch, row->att_method, CStringGetTextDatum(method));
}

/* Sets the owner to the saving role unless a superuser gave it; it must exist. */
static void
settle_owner(RouteRow *row, RouteRowChanges *ch)
{
	bool		isnull = row->owner_isnull;

	/* Only a superuser may give a route to another role. */
	if (isnull || (!superuser() && row->owner != GetUserId()))
	{
		if (!isnull && TRIGGER_FIRED_BY_INSERT(row->trigdata->tg_event))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("only a superuser can create a route owned by another role")));
		if (!isnull)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("only a superuser can give a route to another role")));
		row->owner = GetUserId();
		change_column(ch, row->att_owner, ObjectIdGetDatum(row->owner));
	}
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(row->owner)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", row->owner)));
}

/*
 * A new route, and a new handler given without a search_path of its own,
 * take the saving session's.  A row that brings one keeps it, as does an
 * UPDATE that leaves the handler alone.
 */
static void
settle_search_path(RouteRow *row, RouteRowChanges *ch)
{
	if (row->att_search_path <= 0)
		row->search_path = NULL;	/* checked with the session's, as before */
	else if (row->search_path == NULL ||
			 (row->is_update && row_changed(row, row->att_handler) &&
			  !row_changed(row, row->att_search_path)))
	{
		/* A restored row without one predates it: it ran with the default. */
		if (row->search_path == NULL && !check_function_bodies)
			row->search_path = ROUTES_DEFAULT_SEARCH_PATH;
		else
			row->search_path = namespace_search_path;
		change_column(ch, row->att_search_path, CStringGetTextDatum(row->search_path));
	}
}

/*
 * BEFORE INSERT OR UPDATE on webgres.routes: normalises the method, sets the
 * owner and the search_path, checks that the path is not another role's
 * (routes/ownership.c), and checks the path pattern and the handler, so
 * that a bad route is refused with the Postgres error instead of failing
 * later for a client.
 *
 * The handler is planned under the row's search_path, the one the workers
 * will use: a restore, whose session has search_path '', checks each route
 * with the search_path it was saved with.  Like a function body, it is not
 * planned at all when check_function_bodies is off, as it is while pg_dump
 * output or pg_restore loads a database: the objects a handler uses may be
 * restored after the routes (a unique index for ON CONFLICT, a schema's
 * USAGE grant to the owner), and a backup must restore every route.
 */
Datum
webgres_route_check(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	RouteRow	row;
	RouteRowChanges ch;
	PathPattern pattern;
	char	   *error;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		elog(ERROR, "webgres_route_check must be fired BEFORE ... FOR EACH ROW");

	ch.n = 0;
	read_route_row(trigdata, &row);
	normalise_method(&row, &ch);

	if (row.path == NULL || !pattern_compile(row.path, &pattern, &error))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", row.path == NULL ? "route path must not be null" : error),
				 errhint("Write paths like /users/:handle or /static/*.")));
	if (row.handler == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("route handler must not be null")));

	settle_owner(&row, &ch);
	settle_search_path(&row, &ch);

	/* Only a new path or a new owner can take a path from another role. */
	if (!row.is_update || row_changed(&row, row.att_path) || row_changed(&row, row.att_owner))
		ownership_check_path(trigdata->tg_relation, row.path, &pattern, row.owner);

	/* The CORS columns: entries well formed, never credentials with any origin. */
	cors_check_route(row.tuple, row.desc);
	/* The pipeline modules' own columns (routes/route_modules.h). */
	route_modules_check_route(row.tuple, row.desc);

	if (check_function_bodies && !ownership_changing_owner)
	{
		connect_spi();
		if (row.websocket)
			handler_validate_websocket(row.handler, row.on_message, row.on_close,
									   row.owner, row.search_path);
		else
			handler_validate(row.handler, row.owner, row.streams, row.search_path);
		SPI_finish();
	}

	if (superuser_arg(row.owner))
		ereport(NOTICE,
				(errmsg("route %s %s runs its handler with superuser privileges",
						row.method ? row.method : "*", row.path),
				 errhint("Give routes to a role with only the privileges they need: SET ROLE to it before inserting, or set the owner column.")));

	if (ch.n > 0)
		row.tuple = heap_modify_tuple_by_cols(row.tuple, row.desc, ch.n, ch.cols,
											  ch.values, ch.nulls);
	return PointerGetDatum(row.tuple);
}

/*
 * AFTER ... FOR EACH STATEMENT on webgres.routes: a relcache invalidation of
 * the table tells every worker to reload its routes.  Invalidations travel
 * in WAL too, so hot standbys follow.
 */
Datum
webgres_routes_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "webgres_routes_changed must be fired as a trigger");
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}
