/*
 * ws_dispatch.c
 *		Running a WebSocket's message and close handlers off the worker's
 *		loop, on an executor.
 *
 * The worker's side: each call events/ws_socket.c hands over gets its own
 * nonblocking connection to the executors' socket, registered with h2o's
 * loop, as a handed-off request does (handoff.c); the kernel's accept queue
 * is the queue of calls waiting for an executor.  A socket has at most one
 * call out at a time, so its messages are handled in order, and a slow
 * handler holds up neither the loop nor the worker's other sockets.
 *
 * The executor's side: the call runs in a transaction of its own, as the
 * role and with the settings (request.jwt.claims and the rest) its socket's
 * open handler had, under the route's search_path, in a security-restricted
 * operation like every handler, bounded by webgres.handler_timeout.  Each
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
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exec/ws_dispatch.h"
#include "exec/exec_socket.h"
#include "exec/handoff.h"
#include "exec/handoff_frame.h"
#include "events/ws_socket.h"
#include "parse/ws_call_decode.h"
#include "serve/pipeline.h"

/* A string's length that stands for NULL, and most settings a call carries. */
#define WS_NULL_STRING WS_CALL_NULL_STRING
#define WS_MAX_CALL_SETTINGS WS_CALL_MAX_SETTINGS

/* Largest answer frame a worker takes from an executor. */
#define WS_MAX_REPLY_FRAME ((uint32) (64 * 1024 * 1024))

/* The security context handlers run in (as handler.c's). */
#define WS_SEC_CONTEXT (SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION)

/* A decoded call, pointing into its payload (strings copied NUL-terminated). */
typedef struct WsCallSpec
{
	char		kind;
	int64		conn_id;
	int32		close_code;
	Oid			role;
	int32		timeout_ms;
	char	   *search_path;
	char	   *sql;
	int			nsettings;
	char	   *names[WS_MAX_CALL_SETTINGS];
	char	   *values[WS_MAX_CALL_SETTINGS];
	char	   *data;
	uint32		datalen;
} WsCallSpec;

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
	c->data = palloc(f.data.len + 1);
	memcpy(c->data, f.data.base, f.data.len);
	c->data[f.data.len] = '\0';
	c->datalen = f.data.len;
	return true;
}

/* ---- running a call ---- */

/* Sets a setting for the transaction only. */
static void
set_local(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
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
 * Runs a call in a transaction of its own and appends its answer's frames
 * to out: a message per row, then WS_FRAME_DONE; on an error (logged),
 * what it made is dropped and WS_FRAME_FAILED is the answer.
 */
static void
run_call(const WsCallSpec *c, StringInfo out)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			start = out->len;

	SetCurrentStatementStartTimestamp();
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

		pgstat_report_activity(STATE_RUNNING, c->sql);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		for (int i = 0; i < c->nsettings; i++)
			set_local(c->names[i], c->values[i]);
		if (c->search_path != NULL)
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
		if (rc < 0)
			elog(ERROR, "could not run the WebSocket handler: %s", SPI_result_code_string(rc));
		MemoryContextSwitchTo(oldcxt);
		if (c->kind != WS_CALL_CLOSE)
			put_rows(out);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		disable_timeout(STATEMENT_TIMEOUT, false);

		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
		put_frame(out, WS_FRAME_DONE, NULL, 0);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		QueryCancelPending = false;
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errmsg("webgres WebSocket %lld: its %s handler failed", (long long) c->conn_id,
						c->kind == WS_CALL_CLOSE ? "on_close" : "on_message")));
		out->len = start;
		out->data[start] = '\0';
		put_frame(out, WS_FRAME_FAILED, NULL, 0);
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Executor: runs the call in a WS_FRAME_CALL payload. */
bool
ws_dispatch_serve(const char *payload, uint32 len, StringInfo out)
{
	WsCallSpec	c;

	memset(&c, 0, sizeof(c));
	if (!get_call(payload, len, &c))
		return false;
	run_call(&c, out);
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

/* Runs the call on the worker itself: no executors. */
static void
run_here(WsCall *call)
{
	StringInfoData buf;
	StringInfoData out;
	uint32		len;
	char		type;
	size_t		at = 0;
	bool		failed = true;

	initStringInfo(&buf);
	initStringInfo(&out);
	put_call(&buf, call);
	if (ws_dispatch_serve(buf.data + FRAME_HEADER_SIZE, buf.len - FRAME_HEADER_SIZE, &out))
	{
		while (at + FRAME_HEADER_SIZE <= (size_t) out.len)
		{
			frame_get_header(out.data + at, &len, &type);
			if (type == WS_FRAME_TEXT || type == WS_FRAME_BINARY)
				ws_call_reply(call, type == WS_FRAME_BINARY, out.data + at + FRAME_HEADER_SIZE, len);
			else
				failed = (type != WS_FRAME_DONE);
			at += FRAME_HEADER_SIZE + len;
		}
	}
	pfree(buf.data);
	pfree(out.data);
	ws_call_done(call, failed);
}

/* The runner: hands the call to an executor (or runs it here). */
static void
dispatch(WsCall *call)
{
	WsLink	   *l;
	int			fd;
	h2o_iovec_t iov;

	if (!handoff_enabled())
	{
		run_here(call);
		return;
	}
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

/* Registers the runner; once per worker. */
void
ws_dispatch_init(h2o_evloop_t *evloop)
{
	loop = evloop;
	ws_set_runner(dispatch);
}
