/*
 * ws_dispatch.c
 *		Running a WebSocket's message and close handlers: on the worker's
 *		loop while they are fast, else on an executor.
 *
 * Where a call runs follows its route's mode, as an HTTP request's does
 * (serve/pipeline.c): mode inline runs it on the worker's loop, mode
 * executor on an executor, and mode auto on the loop under
 * webgres.inline_budget while the route is not marked slow.  A run on the
 * loop that goes past the budget is cancelled and rolled back, the route is
 * marked slow for every worker (routes/route_placement.c), and the same
 * call runs again on an executor; each executor run reports its duration
 * back, and enough fast ones return the route to the loop.
 *
 * The worker's side of an executor's call: each call events/ws_socket.c
 * hands over gets its own nonblocking connection to the executors' socket,
 * registered with h2o's loop, as a handed-off request does (handoff.c); the
 * kernel's accept queue is the queue of calls waiting for an executor.  A
 * socket has at most one call out at a time, wherever it runs, so its
 * messages are handled in order, and a slow handler holds up neither the
 * loop (beyond the budget, once) nor the worker's other sockets.
 *
 * The run, wherever it is: the call runs in a transaction of its own, as the
 * role and with the settings (request.jwt.claims and the rest) its socket's
 * open handler had, under the route's search_path, in a security-restricted
 * operation like every handler, bounded by webgres.handler_timeout; what it
 * changes in the settings, even for the session, ends with it, as an HTTP
 * handler's changes end with its request.  Each
 * row's first column is a message: bytea as binary, anything else as text.
 *
 * A call's payload: kind (1 byte), connection id (8), close code (4),
 * role (4), timeout in ms (4), search_path, statement, the number of
 * settings (4) and each one's name and value, the message; a string is a
 * 4-byte length (all ones: NULL) and its bytes; integers big-endian.
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exec/ws_dispatch.h"
#include "exec/exec_socket.h"
#include "exec/handoff.h"
#include "exec/handoff_frame.h"
#include "events/ws_socket.h"
#include "parse/ws_call_decode.h"
#include "routes/route_placement.h"
#include "serve/pipeline.h"

/* A string's length that stands for NULL, and most settings a call carries. */
#define WS_NULL_STRING WS_CALL_NULL_STRING
#define WS_MAX_CALL_SETTINGS WS_CALL_MAX_SETTINGS

/* Largest answer frame a worker takes from an executor. */
#define WS_MAX_REPLY_FRAME ((uint32) (64 * 1024 * 1024))

/* The security context handlers run in (as handler.c's). */
#define WS_SEC_CONTEXT (SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION)

/*
 * Beyond this, the buffer a worker's runs on the loop write their answers
 * to is given back after the run rather than kept for the next.
 */
#define WS_LOOP_OUT_KEEP (64 * 1024)

/*
 * A call to run: decoded from its payload on an executor (strings copied
 * NUL-terminated), or pointing into the socket's WsCall on the worker.
 */
typedef struct WsCallSpec
{
	char		kind;
	int64		conn_id;
	int32		close_code;
	Oid			role;
	int32		timeout_ms;
	const char *search_path;
	const char *sql;
	int			nsettings;
	const char *names[WS_MAX_CALL_SETTINGS];
	const char *values[WS_MAX_CALL_SETTINGS];
	const char *data;			/* NUL-terminated too; binary may hold NULs */
	uint32		datalen;
} WsCallSpec;

/* Where run_call() runs a call. */
typedef enum WsRunPlace
{
	WS_RUN_EXECUTOR,			/* on an executor, for a worker */
	WS_RUN_LOOP,				/* on the worker's loop, whatever it takes */
	WS_RUN_LOOP_BUDGET			/* on the loop under webgres.inline_budget */
} WsRunPlace;

/* How a run ended. */
typedef enum WsRunEnd
{
	WS_RUN_DONE,				/* committed */
	WS_RUN_FAILED,				/* failed, rolled back (logged) */
	WS_RUN_OVER_BUDGET			/* cancelled past the budget, rolled back */
} WsRunEnd;

static h2o_evloop_t *loop;

/* ---- encoding ---- */

/* Appends a big-endian 32-bit integer. */
static void
put_u32(StringInfo buf, uint32 v)
{
	uint32		n = htonl(v);

	appendBinaryStringInfo(buf, (const char *) &n, 4);
}

/* Appends a string (NULL allowed) with its length. */
static void
put_str(StringInfo buf, const char *s, size_t len)
{
	if (s == NULL)
	{
		put_u32(buf, WS_NULL_STRING);
		return;
	}
	put_u32(buf, (uint32) len);
	appendBinaryStringInfo(buf, s, len);
}

/* Appends a frame's header: the payload's length, then its type. */
static void
put_frame_header(StringInfo buf, uint32 len, char type)
{
	put_u32(buf, len);
	appendStringInfoChar(buf, type);
}

/* Appends a whole frame. */
static void
put_frame(StringInfo buf, char type, const char *data, size_t len)
{
	put_frame_header(buf, (uint32) len, type);
	appendBinaryStringInfo(buf, data, len);
}

/* Builds the WS_FRAME_CALL frame of a call. */
static void
put_call(StringInfo buf, const WsCall *call)
{
	const WsHandlers *h = call->handlers;
	int			start;
	uint32		len;
	uint64		id = (uint64) h->conn_id;
	const char *sql = call->kind == WS_CALL_CLOSE ? h->on_close : h->on_message;

	put_frame_header(buf, 0, WS_FRAME_CALL);
	start = buf->len;
	appendStringInfoChar(buf, (char) call->kind);
	put_u32(buf, (uint32) (id >> 32));
	put_u32(buf, (uint32) id);
	put_u32(buf, (uint32) call->close_code);
	put_u32(buf, h->role);
	put_u32(buf, (uint32) pipeline_handler_timeout_ms());
	put_str(buf, h->search_path, h->search_path ? strlen(h->search_path) : 0);
	put_str(buf, sql, strlen(sql));
	put_u32(buf, (uint32) Min(h->nsettings, WS_MAX_CALL_SETTINGS));
	for (int i = 0; i < h->nsettings && i < WS_MAX_CALL_SETTINGS; i++)
	{
		put_str(buf, h->setting_names[i], strlen(h->setting_names[i]));
		put_str(buf, h->setting_values[i], strlen(h->setting_values[i]));
	}
	put_str(buf, call->data, call->len);
	/* The length, now known, goes in front. */
	len = htonl((uint32) (buf->len - start));
	memcpy(buf->data + start - FRAME_HEADER_SIZE, &len, 4);
}

/* ---- decoding ---- */

/* Reads a big-endian 32-bit integer. */
static uint32
get_u32(const char *p)
{
	uint32		n;

	memcpy(&n, p, 4);
	return ntohl(n);
}

/* A string of a decoded call, NUL-terminated in the current memory context. */
static char *
copy_str(WsCallString s)
{
	return s.base == NULL ? NULL : pnstrdup(s.base, s.len);
}

/*
 * Decodes a WS_FRAME_CALL payload (parse/ws_call_decode.c checks every
 * length) into c; false if it is malformed.
 */
static bool
get_call(const char *payload, uint32 len, WsCallSpec *c)
{
	WsCallFields f;
	char	   *data;

	if (!ws_call_decode(payload, len, &f))
		return false;
	c->kind = f.kind;
	c->conn_id = f.conn_id;
	c->close_code = f.close_code;
	c->role = (Oid) f.role;
	c->timeout_ms = f.timeout_ms;
	c->search_path = copy_str(f.search_path);
	c->sql = copy_str(f.sql);
	c->nsettings = (int) f.nsettings;
	for (int i = 0; i < c->nsettings; i++)
	{
		c->names[i] = copy_str(f.names[i]);
		c->values[i] = copy_str(f.values[i]);
	}
	/* The message keeps its length: binary may hold NULs. */
	data = palloc(f.data.len + 1);
	memcpy(data, f.data.base, f.data.len);
	data[f.data.len] = '\0';
	c->data = data;
	c->datalen = f.data.len;
	return true;
}

/*
 * The spec of a call run on the worker: what put_call() would send an
 * executor, without the copies.
 */
static void
spec_from_call(const WsCall *call, WsCallSpec *c)
{
	const WsHandlers *h = call->handlers;

	c->kind = (char) call->kind;
	c->conn_id = h->conn_id;
	c->close_code = call->close_code;
	c->role = h->role;
	c->timeout_ms = pipeline_handler_timeout_ms();
	c->search_path = h->search_path;
	c->sql = call->kind == WS_CALL_CLOSE ? h->on_close : h->on_message;
	c->nsettings = Min(h->nsettings, WS_MAX_CALL_SETTINGS);
	for (int i = 0; i < c->nsettings; i++)
	{
		c->names[i] = h->setting_names[i];
		c->values[i] = h->setting_values[i];
	}
	/* ws_socket.c keeps a NUL after every message. */
	c->data = call->data;
	c->datalen = (uint32) call->len;
}

/* ---- running a call ---- */

/* Sets a setting for the transaction only. */
static void
set_local(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
}

/*
 * Puts the call's settings (request.jwt.claims and the rest) in effect
 * until clear_settings(), as message/request.c does for a request: as an
 * override, not stacked, since Postgres 15 ends a nest level or a
 * transaction in which anything was stacked by walking every setting there
 * is (AtEOXact_GUC).  What the handler sets on top is stacked in its own
 * nest level and undone when the call ends.
 */
static void
apply_settings(const WsCallSpec *c)
{
	for (int i = 0; i < c->nsettings; i++)
		(void) set_config_option(c->names[i], c->values[i], PGC_USERSET, PGC_S_OVERRIDE,
								 GUC_ACTION_SET, true, 0, false);
}

/*
 * Takes the call's settings away again (empty, as request.c leaves them),
 * so that no later handler sees them; in or out of a transaction.
 */
static void
clear_settings(const WsCallSpec *c)
{
	for (int i = 0; i < c->nsettings; i++)
		(void) set_config_option(c->names[i], "", PGC_USERSET, PGC_S_OVERRIDE,
								 GUC_ACTION_SET, true, 0, false);
}

/* Appends a frame per row of the result: its first column as a message. */
static void
put_rows(StringInfo out)
{
	TupleDesc	desc;

	if (SPI_tuptable == NULL || SPI_processed == 0)
		return;
	desc = SPI_tuptable->tupdesc;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;

		if (TupleDescAttr(desc, 0)->atttypid == BYTEAOID)
		{
			Datum		d = SPI_getbinval(tup, desc, 1, &isnull);
			bytea	   *b;

			if (isnull)
				continue;
			b = DatumGetByteaPP(d);
			put_frame(out, WS_FRAME_BINARY, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
		}
		else if (TupleDescAttr(desc, 0)->atttypid == TEXTOID)
		{
			/* Its bytes are its output: no output function, copy or strlen. */
			Datum		d = SPI_getbinval(tup, desc, 1, &isnull);
			text	   *t;

			if (isnull)
				continue;
			t = DatumGetTextPP(d);
			put_frame(out, WS_FRAME_TEXT, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		}
		else
		{
			char	   *text = SPI_getvalue(tup, desc, 1);

			if (text != NULL)
				put_frame(out, WS_FRAME_TEXT, text, strlen(text));
		}
	}
}

/*
 * The most handler statements whose plans an executor keeps; past it the
 * cache starts again empty (routes are few; a statement no route uses any
 * more goes with the next clearing).
 */
#define WS_PLAN_CACHE_MAX 64

/* A kept plan of one handler statement for one argument list. */
typedef struct WsPlan
{
	char	   *sql;			/* in TopMemoryContext */
	int			nargs;
	Oid			arg1;			/* the second argument's type: the kind */
	SPIPlanPtr	plan;			/* SPI_keepplan()ed */
} WsPlan;

static WsPlan ws_plans[WS_PLAN_CACHE_MAX];
static int	ws_nplans = 0;

/*
 * The kept plan of sql for these arguments, prepared (as the current user)
 * on first use.  Postgres' plan cache revalidates it as it would a
 * prepared statement's: after DDL on what it reads, a changed search_path
 * (the role's "$user" included) and, for tables with row-level security,
 * another user.  Each message is parsed and planned once per executor
 * rather than once per message.
 */
static SPIPlanPtr
ws_plan_for(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan;
	WsPlan	   *p;

	for (int i = 0; i < ws_nplans; i++)
		if (ws_plans[i].nargs == nargs && ws_plans[i].arg1 == types[1] &&
			strcmp(ws_plans[i].sql, sql) == 0)
			return ws_plans[i].plan;

	plan = SPI_prepare(sql, nargs, types);
	if (plan == NULL)
		elog(ERROR, "could not prepare the WebSocket handler: %s",
			 SPI_result_code_string(SPI_result));
	if (ws_nplans == WS_PLAN_CACHE_MAX)
	{
		for (int i = 0; i < ws_nplans; i++)
		{
			SPI_freeplan(ws_plans[i].plan);
			pfree(ws_plans[i].sql);
		}
		ws_nplans = 0;
	}
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep the WebSocket handler's plan");
	p = &ws_plans[ws_nplans++];
	p->sql = MemoryContextStrdup(TopMemoryContext, sql);
	p->nargs = nargs;
	p->arg1 = types[1];
	p->plan = plan;
	return plan;
}

/*
 * Runs a call at place in a transaction of its own and appends its
 * answer's frames to out: a message per row, then WS_FRAME_DONE with the
 * run's milliseconds; on an error (logged), what it made is dropped and
 * WS_FRAME_FAILED is the answer.  A run under the budget that the budget
 * cancelled is rolled back and appends nothing: WS_RUN_OVER_BUDGET.
 */
static WsRunEnd
run_call(const WsCallSpec *c, StringInfo out, WsRunPlace place)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			start = out->len;
	volatile bool budgeted = false;
	volatile WsRunEnd end = WS_RUN_DONE;
	TimestampTz began;

	SetCurrentStatementStartTimestamp();
	began = GetCurrentStatementStartTimestamp();
	/* On the loop: out of the pass's shared transaction, maybe under the budget. */
	if (place != WS_RUN_EXECUTOR)
		budgeted = pipeline_inline_begin(began, place == WS_RUN_LOOP_BUDGET);
	StartTransactionCommand();
	PG_TRY();
	{
		Oid			save_userid;
		int			save_sec_context;
		Oid			types[3] = {INT8OID, TEXTOID, BYTEAOID};
		Datum		values[3];
		char		nulls[3] = {' ', ' ', ' '};
		int			nargs = 3;
		int			rc;
		int			nguc;
		uint32		ms;

		pgstat_report_activity(STATE_RUNNING, c->sql);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		/* What the handler sets, even for the session, ends with the call. */
		nguc = NewGUCNestLevel();
		apply_settings(c);
		/*
		 * Only if another one is in force (as handler.c's
		 * enter_search_path): setting it, even to the same value, throws
		 * away the namespace lookup's cached path, which the plan cache's
		 * check of every kept plan then computes again.
		 */
		if (c->search_path != NULL && strcmp(c->search_path, namespace_search_path) != 0)
			set_local("search_path", c->search_path);
		if (c->timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, c->timeout_ms);

		values[0] = Int64GetDatum(c->conn_id);
		if (c->kind == WS_CALL_CLOSE)
		{
			types[1] = INT4OID;
			values[1] = Int32GetDatum(c->close_code);
			nargs = 2;
		}
		else if (c->kind == WS_CALL_TEXT)
		{
			values[1] = PointerGetDatum(cstring_to_text_with_len(c->data, c->datalen));
			nulls[2] = 'n';
			values[2] = (Datum) 0;
		}
		else
		{
			bytea	   *b = palloc(VARHDRSZ + c->datalen);

			SET_VARSIZE(b, VARHDRSZ + c->datalen);
			memcpy(VARDATA(b), c->data, c->datalen);
			nulls[1] = 'n';
			values[1] = (Datum) 0;
			values[2] = PointerGetDatum(b);
		}

		GetUserIdAndSecContext(&save_userid, &save_sec_context);
		SetUserIdAndSecContext(c->role, save_sec_context | WS_SEC_CONTEXT);
		rc = SPI_execute_plan(ws_plan_for(c->sql, nargs, types), values, nulls, false, 0);
		/* It finished as the budget ran out: nothing to cancel. */
		if (budgeted && pipeline_inline_end())
			QueryCancelPending = false;
		if (rc < 0)
			elog(ERROR, "could not run the WebSocket handler: %s", SPI_result_code_string(rc));
		/* In SPI's memory, which SPI_finish() frees: out holds the copies. */
		if (c->kind != WS_CALL_CLOSE)
			put_rows(out);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		disable_timeout(STATEMENT_TIMEOUT, false);
		AtEOXact_GUC(false, nguc);
		clear_settings(c);

		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcxt);
		/* How long it took, for mode auto's placement (route_placement.c). */
		ms = (uint32) Max(0, TimestampDifferenceMilliseconds(began, GetCurrentTimestamp()));
		ms = htonl(ms);
		put_frame(out, WS_FRAME_DONE, (const char *) &ms, sizeof(ms));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false;
		/* Cancelled by the budget: not the handler's failure (pipeline.c's give_up_on_loop). */
		if (budgeted && pipeline_inline_end() && edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			end = WS_RUN_OVER_BUDGET;
		else
		{
			EmitErrorReport();
			end = WS_RUN_FAILED;
		}
		FreeErrorData(edata);
		FlushErrorState();
		AbortCurrentTransaction();
		clear_settings(c);
		out->len = start;
		out->data[start] = '\0';
		if (end == WS_RUN_FAILED)
		{
			ereport(LOG,
					(errmsg("webgres WebSocket %lld: its %s handler failed", (long long) c->conn_id,
							c->kind == WS_CALL_CLOSE ? "on_close" : "on_message")));
			put_frame(out, WS_FRAME_FAILED, NULL, 0);
		}
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	return end;
}

/* Executor: runs the call in a WS_FRAME_CALL payload. */
bool
ws_dispatch_serve(const char *payload, uint32 len, StringInfo out)
{
	WsCallSpec	c;

	memset(&c, 0, sizeof(c));
	if (!get_call(payload, len, &c))
		return false;
	(void) run_call(&c, out, WS_RUN_EXECUTOR);
	return true;
}

/* ---- the worker's side ---- */

/* A call out to an executor. */
typedef struct WsLink
{
	h2o_socket_t *sock;
	WsCall	   *call;
	StringInfoData out;			/* the call's frame, until written */
} WsLink;

/* The call is over: gives it back to its socket and closes the link. */
static void
link_end(WsLink *l, bool failed)
{
	ws_call_done(l->call, failed);
	h2o_socket_close(l->sock);
	pfree(l->out.data);
	pfree(l);
}

/*
 * An executor ran a call of mode auto's route in the milliseconds its
 * WS_FRAME_DONE carries: enough fast runs return the route to the loop.
 */
static void
observe_run(const WsHandlers *h, const char *payload, uint32 len)
{
	if (h->mode == ROUTE_MODE_AUTO && len == sizeof(uint32))
		route_placement_observe_run(route_placement_get(h->route_id), (long) get_u32(payload));
}

/* The executor's answer arrives: its messages go to the socket. */
static void
on_link_read(h2o_socket_t *sock, const char *err)
{
	WsLink	   *l = sock->data;

	if (err != NULL)
	{
		link_end(l, true);
		return;
	}
	while (sock->input->size >= FRAME_HEADER_SIZE)
	{
		uint32		len;
		char		type;
		const char *payload = sock->input->bytes + FRAME_HEADER_SIZE;

		frame_get_header(sock->input->bytes, &len, &type);
		if (len > WS_MAX_REPLY_FRAME)
		{
			link_end(l, true);
			return;
		}
		if (sock->input->size < FRAME_HEADER_SIZE + (size_t) len)
			return;
		switch (type)
		{
			case WS_FRAME_TEXT:
			case WS_FRAME_BINARY:
				ws_call_reply(l->call, type == WS_FRAME_BINARY, payload, len);
				break;
			case WS_FRAME_DONE:
				observe_run(l->call->handlers, payload, len);
				link_end(l, false);
				return;
			default:
				link_end(l, true);
				return;
		}
		h2o_buffer_consume(&sock->input, FRAME_HEADER_SIZE + len);
	}
}

/* The call's frame went out (or could not). */
static void
on_link_written(h2o_socket_t *sock, const char *err)
{
	if (err != NULL)
		link_end(sock->data, true);
}

/*
 * Sends the messages of a run's answer (its frames in out) to the call's
 * socket; true if the run failed.
 */
static bool
deliver(WsCall *call, const StringInfo out)
{
	uint32		len;
	char		type;
	size_t		at = 0;
	bool		failed = true;

	while (at + FRAME_HEADER_SIZE <= (size_t) out->len)
	{
		frame_get_header(out->data + at, &len, &type);
		if (type == WS_FRAME_TEXT || type == WS_FRAME_BINARY)
			ws_call_reply(call, type == WS_FRAME_BINARY, out->data + at + FRAME_HEADER_SIZE, len);
		else
			failed = (type != WS_FRAME_DONE);
		at += FRAME_HEADER_SIZE + len;
	}
	return failed;
}

/*
 * Runs the call on the worker's loop (under the budget if asked) and ends
 * it; false, with nothing done, if the budget cancelled it: its route is
 * then marked slow and the caller hands the call to an executor.
 */
static bool
run_on_loop(WsCall *call, bool budget)
{
	static StringInfoData out;
	WsCallSpec	c;
	WsRunEnd	end;

	if (out.data == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&out);
		MemoryContextSwitchTo(oldcxt);
	}
	spec_from_call(call, &c);
	resetStringInfo(&out);
	end = run_call(&c, &out, budget ? WS_RUN_LOOP_BUDGET : WS_RUN_LOOP);
	if (end == WS_RUN_OVER_BUDGET)
	{
		route_placement_mark_slow(route_placement_get(call->handlers->route_id));
		ereport(LOG,
				(errmsg("webgres WebSocket %lld: the %s handler of route %lld ran longer than webgres.inline_budget (%d ms) on the event loop",
						(long long) c.conn_id, c.kind == WS_CALL_CLOSE ? "on_close" : "on_message",
						(long long) call->handlers->route_id, route_placement_inline_budget_ms()),
				 errdetail("It was rolled back and runs again on an executor; the route's calls run on executors until their runs there are fast again.")));
		return false;
	}
	ws_call_done(call, deliver(call, &out));
	/* A large answer's buffer is not kept for the next run. */
	if (out.maxlen > WS_LOOP_OUT_KEEP)
	{
		pfree(out.data);
		out.data = NULL;
	}
	return true;
}

/*
 * Whether the call runs on the worker's loop: always in mode inline, and
 * in mode auto while its route is not marked slow (as wants_executor() in
 * serve/pipeline.c decides for a request).
 */
static bool
runs_on_loop(const WsHandlers *h)
{
	if (h->mode == ROUTE_MODE_INLINE)
		return true;
	return h->mode == ROUTE_MODE_AUTO && route_placement_inline_budget_ms() > 0 &&
		!route_placement_is_slow(route_placement_get(h->route_id));
}

/* Hands the call to an executor over a connection of its own. */
static void
hand_off(WsCall *call)
{
	WsLink	   *l;
	int			fd;
	h2o_iovec_t iov;

	if ((fd = exec_socket_connect()) < 0)
	{
		ereport(LOG,
				(errmsg("webgres WebSocket %lld: no executor could take a message",
						(long long) call->handlers->conn_id)));
		ws_call_done(call, true);
		return;
	}
	l = MemoryContextAllocZero(TopMemoryContext, sizeof(WsLink));
	l->call = call;
	initStringInfo(&l->out);
	put_call(&l->out, call);
	l->sock = h2o_evloop_socket_create(loop, fd, 0);
	l->sock->data = l;
	iov = h2o_iovec_init(l->out.data, l->out.len);
	h2o_socket_write(l->sock, &iov, 1, on_link_written);
	h2o_socket_read_start(l->sock, on_link_read);
}

/*
 * The runner: runs the call on the loop (with no executors, or as its
 * route's mode says) or hands it to an executor; a run on the loop that the
 * budget cancelled runs again there.  The socket has no other call out
 * meanwhile, so its messages stay in order across the move.
 */
static void
dispatch(WsCall *call)
{
	if (!handoff_enabled())
	{
		(void) run_on_loop(call, false);
		return;
	}
	if (runs_on_loop(call->handlers) &&
		run_on_loop(call, call->handlers->mode == ROUTE_MODE_AUTO))
		return;
	hand_off(call);
}

/* Registers the runner; once per worker. */
void
ws_dispatch_init(h2o_evloop_t *evloop)
{
	loop = evloop;
	ws_set_runner(dispatch);
}
