/*
 * events.c
 *		Event-stream routes: LISTEN/NOTIFY delivered as server-sent events.
 *
 * Postgres delivers a notification to a listening backend's frontend:
 * async.c reads the queue when the backend is signalled and calls
 * NotifyMyFrontEnd(), which writes a protocol message 'A' through
 * PqCommMethods when whereToSendOutput is DestRemote.  A worker has no
 * frontend, so for the length of one ProcessNotifyInterrupt() call it points
 * both at its own methods, as parallel workers redirect theirs to a shm_mq,
 * and each 'A' message it is handed becomes an event for the streams that
 * follow that channel.  Anything else sent through them (a NOTICE, an
 * error's report) is dropped: it went to the server log as well.
 *
 * A burst (one commit of thousands of notifications) is delivered in
 * slices, one per pass of the event loop, so that the streams offer each
 * slice to their clients before they are handed the next.  Postgres reads
 * the queue up to its head in one call, and turns any error raised while it
 * hands the messages on into FATAL, so a read cannot be cut short: what one
 * read returns is kept once, for all streams, and the queue is read again
 * only when that is delivered (the queue holds what comes meanwhile).  No
 * slice is delivered while a stream holds more than webgres.sse_buffer_limit
 * its client has not taken (sse.c): each stream's memory stays bounded by
 * the limit, and a client that does not read holds delivery up for a
 * bounded grace, then is cut.
 *
 * Meanwhile the queue may grow toward its whole size, and one read would
 * hand all of it over: what a read returns beyond webgres.events_read_limit
 * is not kept.  The streams that follow a channel that lost notifications
 * get what was kept, then a comment saying so and the end of their
 * response, so that their clients reconnect and catch up through the
 * handler's rows (Last-Event-ID) instead of silently missing events.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "lib/ilist.h"
#include "libpq/libpq.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "events/events.h"
#include "events/notify_sign.h"
#include "message/response.h"
#include "events/sse.h"
#include "events/ws_socket.h"

/* webgres.events_read_limit's default and bounds, in bytes. */
#define EVENTS_READ_LIMIT_DEFAULT (64 * 1024 * 1024)
#define EVENTS_READ_LIMIT_MIN (16 * 1024)
#define EVENTS_READ_LIMIT_MAX (INT_MAX / 2)

/* webgres.events_read_limit (events_define_settings). */
static int	webgres_events_read_limit = EVENTS_READ_LIMIT_DEFAULT;

/* A channel this worker LISTENs on, and the streams that follow it. */
typedef struct Channel
{
	char		name[NAMEDATALEN];	/* hash key */
	dlist_head	subscribers;
	int			nsubscribers;
	bool		lost;			/* the last read dropped some of its notifications */
} Channel;

typedef struct EventStream EventStream;

/* One stream following one channel. */
typedef struct Subscription
{
	dlist_node	node;			/* in the channel's subscribers */
	Channel    *channel;
	EventStream *stream;
} Subscription;

/* An event stream as events.c knows it. */
struct EventStream
{
	SseStream  *sse;
	WsSocket   *ws;				/* a WebSocket's instead of sse (ws_socket.c) */
	char	  **catchup_ids;	/* ids sent as catch-up, sorted, for de-duplication */
	int			ncatchup_ids;
	uint64		subscribed_at;	/* reads of the queue before the stream began */
	bool		restricted;		/* only notifications signed by senders */
	Oid		   *senders;		/* the handler's `senders`, as role OIDs */
	int			nsenders;
	int			nsubscriptions;
	Subscription subscriptions[FLEXIBLE_ARRAY_MEMBER];
};

/* A notification read from the queue, waiting to be delivered. */
typedef struct Notification
{
	char	   *channel;
	char	   *payload;
	size_t		len;			/* of channel and payload: what a slice counts */
} Notification;

/* What keeping one notification costs besides its bytes: its record and list cell. */
#define NOTIFICATION_OVERHEAD (sizeof(Notification) + 2 * sizeof(ListCell))

/* The last line a stream gets when it is ended for notifications it lost. */
#define EVENTS_LOST_COMMENT ": webgres lost notifications for this stream; reconnect\n\n"

static Channel *channel_enter(const char *name);

static HTAB *channels;
static MemoryContext events_cxt;	/* subscriptions, catch-up ids */
static MemoryContext notify_cxt;	/* notifications being delivered; reset after */
static List *received = NIL;	/* of Notification, in notify_cxt */
static int	ndelivered = 0;		/* how many of received went out */
static uint64 nreads = 0;		/* reads of the queue that returned notifications */
static bool unlisten_due = false;
static size_t read_bytes = 0;	/* kept by the current read, overheads included */
static uint64 read_dropped = 0; /* notifications the current read did not keep */
static size_t read_dropped_bytes = 0;
static bool lost_pending = false;	/* some channel is marked lost */

/* The stream phase 2 made ready, until its transaction commits. */
static struct
{
	EventStream *stream;		/* NULL: none */
	char	   *first;			/* the catch-up events, in events_cxt */
	size_t		firstlen;
	TimestampTz expires_at;		/* of the token it was opened with; 0: none */
	Oid			authenticator;	/* the route owner that chose run_as; invalid: none */
	Oid			run_as;			/* the role the stream's handler ran as */
	uint64		secret_generation;	/* of the HS secret that signed its token; 0: none */
	uint64		keys_generation;	/* of the keys file that verified it; 0: none */
	bool		websocket;		/* a WebSocket, made ready by phase 1 */
	const char *ws_key;			/* its Sec-WebSocket-Key, in the request's memory */
	WsHandlers	ws_handlers;	/* what its handlers run with, in the request's memory */
}			pending;

/*
 * Most notification bytes delivered in one pass of the event loop (less
 * with a smaller webgres.sse_buffer_limit): a stream's backlog is never
 * more than the limit, a slice and one notification.
 */
#define EVENTS_SLICE_BYTES (64 * 1024)

static h2o_loop_t *loop;
static h2o_timeout_t next_pass_timeout;	/* 0: the loop comes straight back */
static h2o_timeout_entry_t next_pass;

/* ---- reading a handler's rows ---- */

/* The number of the column called name (1-based), or 0 if there is none. */
static int
column_of(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return i + 1;
	}
	return 0;
}

/* The first row's status column, or 200 when there is none or it is NULL. */
static int64
row_status(SPITupleTable *rows)
{
	int			col = column_of(rows->tupdesc, "status");
	bool		isnull;
	Datum		d;

	if (col == 0)
		return 200;
	d = SPI_getbinval(rows->vals[0], rows->tupdesc, col, &isnull);
	if (isnull)
		return 200;
	switch (TupleDescAttr(rows->tupdesc, col - 1)->atttypid)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* A column of a row as text, or NULL. */
static char *
column_text(SPITupleTable *rows, int row, int col)
{
	if (col == 0)
		return NULL;
	return SPI_getvalue(rows->vals[row], rows->tupdesc, col);
}

/*
 * The distinct channel names of the first row, checked: no NULL, empty or
 * over-long names.  Allocated in the current memory context.
 */
static char **
row_channels(SPITupleTable *rows, int *nchannels)
{
	int			col = column_of(rows->tupdesc, "channels");
	bool		isnull;
	Datum		d;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	char	  **names;
	int			n = 0;

	*nchannels = 0;
	if (col == 0)
		return NULL;			/* a WebSocket's open handler need not listen */
	d = SPI_getbinval(rows->vals[0], rows->tupdesc, col, &isnull);
	if (isnull)
		return NULL;
	deconstruct_array(DatumGetArrayTypeP(d), TupleDescAttr(rows->tupdesc, col - 1)->atttypid == TEXTARRAYOID ? TEXTOID : VARCHAROID,
					  -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	names = palloc(sizeof(char *) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
	{
		char	   *name;
		bool		seen = false;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned a NULL channel name")));
		name = TextDatumGetCString(elems[i]);
		if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned an invalid channel name \"%.*s\"",
							NAMEDATALEN, name),
					 errhint("A channel name is 1 to %d bytes long, as for LISTEN.",
							 NAMEDATALEN - 1)));
		for (int j = 0; j < n; j++)
			if (strcmp(names[j], name) == 0)
				seen = true;
		if (!seen)
			names[n++] = name;
	}
	*nchannels = n;
	return names;
}

/*
 * The first row's `senders` column: the roles whose signed notifications
 * (webgres.notify()) the stream accepts, as OIDs in the current memory
 * context.  False when there is no such column or it is NULL: the stream
 * takes any notification on its channels.
 */
static bool
row_senders(SPITupleTable *rows, Oid **senders, int *nsenders)
{
	int			col = column_of(rows->tupdesc, "senders");
	bool		isnull;
	Datum		d;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	Oid			elemtype;

	*senders = NULL;
	*nsenders = 0;
	if (col == 0)
		return false;
	d = SPI_getbinval(rows->vals[0], rows->tupdesc, col, &isnull);
	if (isnull)
		return false;
	elemtype = get_element_type(TupleDescAttr(rows->tupdesc, col - 1)->atttypid);
	if (elemtype != TEXTOID && elemtype != VARCHAROID && elemtype != NAMEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("an event-stream handler's senders column must be an array of role names")));
	deconstruct_array(DatumGetArrayTypeP(d), elemtype, elemtype == NAMEOID ? NAMEDATALEN : -1,
					  false, elemtype == NAMEOID ? TYPALIGN_CHAR : TYPALIGN_INT,
					  &elems, &nulls, &nelems);
	*senders = palloc(sizeof(Oid) * Max(nelems, 1));
	for (int i = 0; i < nelems; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned a NULL sender role")));
		/* An unknown role is the handler's mistake: an error, not a silent stream. */
		(*senders)[(*nsenders)++] =
			get_role_oid(elemtype == NAMEOID ? NameStr(*DatumGetName(elems[i])) :
						 TextDatumGetCString(elems[i]), false);
	}
	return true;
}

/* ---- phase 1 ---- */

static EventStream *subscribe(char **names, int n, char **ids, int nids, bool restricted,
							  Oid *senders, int nsenders);

/*
 * Phase 1 of a WebSocket route: its open handler runs once.  LISTENs on
 * the first row's channels and makes the socket ready at once, with the
 * first row's body as its first message; it starts when the transaction
 * has committed (events_stream_ready()).
 */
static bool
ws_first_phase(RequestData *rd, SPITupleTable *rows, EventsListen *listen)
{
	const WsOpen *open = rd->upgrade;
	MemoryContext oldcxt;
	Oid		   *senders;
	int			nsenders;
	bool		restricted;
	char	   *first;
	EventStream *es;

	/* The transaction may have been run again: what the first try made goes. */
	events_forget_stream();
	oldcxt = MemoryContextSwitchTo(rd->cxt);
	listen->channels = row_channels(rows, &listen->nchannels);
	MemoryContextSwitchTo(oldcxt);
	if (listen->nchannels > 0 && RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("WebSockets that listen are not served during recovery"),
				 errdetail("LISTEN cannot be executed on a standby; connect to the primary.")));
	for (int i = 0; i < listen->nchannels; i++)
		Async_Listen(listen->channels[i]);
	restricted = row_senders(rows, &senders, &nsenders);
	first = column_text(rows, 0, column_of(rows->tupdesc, "body"));
	if (first != NULL && ws_text_check(first, strlen(first)) != WS_TEXT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("a WebSocket's first message must be UTF-8 text")));

	es = subscribe(listen->channels, listen->nchannels, NULL, 0, restricted, senders, nsenders);
	pending.stream = es;
	pending.first = MemoryContextStrdup(events_cxt, first != NULL ? first : "");
	pending.firstlen = first != NULL ? strlen(first) : 0;
	pending.expires_at = rd->expires_at;
	pending.authenticator = rd->authenticator;
	pending.run_as = rd->run_as;
	pending.secret_generation = rd->secret_generation;
	pending.keys_generation = rd->keys_generation;
	pending.websocket = true;
	pending.ws_key = open->key;
	pending.ws_handlers.conn_id = open->conn_id;
	pending.ws_handlers.route_id = open->route_id;
	pending.ws_handlers.mode = open->mode;
	pending.ws_handlers.role = OidIsValid(rd->run_as) ? rd->run_as : open->owner;
	pending.ws_handlers.search_path = open->search_path;
	pending.ws_handlers.on_message = open->on_message;
	pending.ws_handlers.on_close = open->on_close;
	pending.ws_handlers.nsettings = rd->nsettings;
	pending.ws_handlers.setting_names = rd->setting_names;
	pending.ws_handlers.setting_values = rd->setting_values;
	unlisten_due = true;
	return true;
}

/* True once events_init() ran: this process is a worker whose loop holds streams. */
bool
events_served_here(void)
{
	return channels != NULL;
}

/* Phase 1 of an event stream: answers, or LISTENs and awaits phase 2. */
bool
events_first_phase(RequestData *rd, SPITupleTable *rows, EventsListen *listen,
				   char **body, size_t *bodylen)
{
	h2o_req_t  *req = rd->req;
	MemoryContext oldcxt;

	if (row_status(rows) != 200 && !(rd->upgrade != NULL && row_status(rows) == 101))
	{
		/* Refused (403), or told to stop reconnecting (204): a normal response. */
		response_from_row(req, rows->tupdesc, rows->vals[0], body, bodylen);
		return false;
	}
	if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
	{
		response_simple(req, 200, "", body, bodylen);
		req->res.headers = (h2o_headers_t) {NULL};
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
					   H2O_STRLIT("text/event-stream"));
		*bodylen = 0;
		req->res.content_length = SIZE_MAX;
		return false;
	}
	if (rd->upgrade != NULL)
		return ws_first_phase(rd, rows, listen);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("event streams are not served during recovery"),
				 errdetail("LISTEN cannot be executed on a standby; connect to the primary.")));

	oldcxt = MemoryContextSwitchTo(rd->cxt);
	listen->channels = row_channels(rows, &listen->nchannels);
	MemoryContextSwitchTo(oldcxt);

	/* Takes effect when the request's transaction commits. */
	for (int i = 0; i < listen->nchannels; i++)
		Async_Listen(listen->channels[i]);

	*body = NULL;
	*bodylen = 0;
	return true;
}

/* Phase 1's transaction committed: its channels are this worker's. */
void
events_listened(const EventsListen *listen)
{
	/* Known now, so that a failure in phase 2 still UNLISTENs them. */
	for (int i = 0; i < listen->nchannels; i++)
		channel_enter(listen->channels[i]);
	unlisten_due = true;
}

/* ---- subscriptions ---- */

/* The worker's entry for a channel it now LISTENs on, made if new. */
static Channel *
channel_enter(const char *name)
{
	bool		found;
	Channel    *c = hash_search(channels, name, HASH_ENTER, &found);

	if (!found)
	{
		dlist_init(&c->subscribers);
		c->nsubscribers = 0;
		c->lost = false;
		ereport(DEBUG1,
				(errmsg_internal("webgres worker listens on channel \"%s\"", name)));
	}
	return c;
}

/* sse.c: the stream ended; its subscriptions go. */
static void
on_stream_close(SseStream *sse, void *arg)
{
	EventStream *es = (EventStream *) arg;

	for (int i = 0; i < es->nsubscriptions; i++)
	{
		Subscription *sub = &es->subscriptions[i];

		dlist_delete(&sub->node);
		if (--sub->channel->nsubscribers == 0)
			unlisten_due = true;
	}
	for (int i = 0; i < es->ncatchup_ids; i++)
		pfree(es->catchup_ids[i]);
	if (es->catchup_ids)
		pfree(es->catchup_ids);
	if (es->senders)
		pfree(es->senders);
	pfree(es);
}

/* ws_socket.c: the socket's transport is gone; its subscriptions go. */
static void
on_socket_gone(WsSocket *ws, void *arg)
{
	on_stream_close(NULL, arg);
}

/* True if phase 1 made a stream ready (a WebSocket): there is no phase 2. */
bool
events_stream_ready(void)
{
	return pending.stream != NULL;
}

/* qsort and bsearch comparator: event ids as strings. */
static int
compare_ids(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Makes the stream's record and subscribes it to its channels. */
static EventStream *
subscribe(char **names, int n, char **ids, int nids, bool restricted,
		  Oid *senders, int nsenders)
{
	EventStream *es = MemoryContextAllocZero(events_cxt,
											 offsetof(EventStream, subscriptions) +
											 sizeof(Subscription) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		Subscription *sub = &es->subscriptions[i];

		sub->channel = channel_enter(names[i]);
		sub->stream = es;
		dlist_push_tail(&sub->channel->subscribers, &sub->node);
		sub->channel->nsubscribers++;
	}
	es->nsubscriptions = n;
	es->subscribed_at = nreads;
	es->restricted = restricted;
	if (nsenders > 0)
	{
		es->senders = MemoryContextAlloc(events_cxt, sizeof(Oid) * nsenders);
		memcpy(es->senders, senders, sizeof(Oid) * nsenders);
		es->nsenders = nsenders;
	}
	if (nids > 0)
	{
		es->catchup_ids = MemoryContextAlloc(events_cxt, sizeof(char *) * nids);
		for (int i = 0; i < nids; i++)
			es->catchup_ids[i] = MemoryContextStrdup(events_cxt, ids[i]);
		qsort(es->catchup_ids, nids, sizeof(char *), compare_ids);
		es->ncatchup_ids = nids;
	}
	return es;
}

/* ---- phase 2 ---- */

/*
 * Formats the catch-up rows into buf and collects their ids.  Rows whose
 * data is NULL carry no event.
 */
static void
format_catchup(SPITupleTable *rows, StringInfo buf, char ***ids, int *nids)
{
	int			idcol = column_of(rows->tupdesc, "id");
	int			eventcol = column_of(rows->tupdesc, "event");
	int			datacol = column_of(rows->tupdesc, "data");

	*ids = palloc(sizeof(char *) * Max(SPI_processed, 1));
	*nids = 0;
	if (datacol == 0)
		return;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		char	   *data = column_text(rows, r, datacol);
		char	   *id = column_text(rows, r, idcol);
		char	   *event = column_text(rows, r, eventcol);

		if (data == NULL)
			continue;
		if ((id && !sse_field_ok(id, strlen(id))) || (event && !sse_field_ok(event, strlen(event))))
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("handler returned an event id or type with a line break in it"),
					 errhint("CR and LF would end the field early; they are never sent in id or event.")));
		sse_format_event(buf, id, event, data, strlen(data));
		if (id != NULL)
			(*ids)[(*nids)++] = id;
	}
}

/* Phase 2 of an event stream: starts it with the catch-up events, or answers. */
bool
events_second_phase(RequestData *rd, const EventsListen *listen, SPITupleTable *rows,
					char **body, size_t *bodylen)
{
	h2o_req_t  *req = rd->req;
	StringInfoData first;
	char	  **names;
	char	  **ids;
	int			n;
	int			nkept = 0;
	int			nids;
	char	   *ignored;
	size_t		ignoredlen;
	ssize_t		h;
	EventStream *es;
	Oid		   *senders;
	int			nsenders;
	bool		restricted;

	if (row_status(rows) != 200)
	{
		response_from_row(req, rows->tupdesc, rows->vals[0], body, bodylen);
		return false;
	}

	/* Only channels both phases returned: the second may know better. */
	names = row_channels(rows, &n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < listen->nchannels; j++)
			if (strcmp(names[i], listen->channels[j]) == 0)
				names[nkept++] = names[i];

	restricted = row_senders(rows, &senders, &nsenders);
	initStringInfo(&first);
	format_catchup(rows, &first, &ids, &nids);
	/* The first row's headers column applies to the stream too, but not a content type. */
	response_from_row(req, rows->tupdesc, rows->vals[0], &ignored, &ignoredlen);
	while ((h = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1)) != -1)
		h2o_delete_header(&req->res.headers, h);

	/*
	 * Nothing goes out before phase 2 commits: its COMMIT may still fail (a
	 * deferred constraint, a serialization failure), and the request is then
	 * answered with the error instead.  Notifications are read only between
	 * requests, so none reaches the stream before it starts.
	 */
	es = subscribe(names, nkept, ids, nids, restricted, senders, nsenders);
	pending.stream = es;
	pending.first = MemoryContextAlloc(events_cxt, Max(first.len, 1));
	memcpy(pending.first, first.data, first.len);
	pending.firstlen = first.len;
	/* Opened with a token: it ends when the token does. */
	pending.expires_at = rd->expires_at;
	/* Opened as a role: it ends when the route's owner may no longer become it. */
	pending.authenticator = rd->authenticator;
	pending.run_as = rd->run_as;
	/*
	 * Opened with an HS-signed token: it ends when the secret changes; with
	 * one the keys file verified: when the file's keys change.
	 */
	pending.secret_generation = rd->secret_generation;
	pending.keys_generation = rd->keys_generation;
	/* A stream only listened to what both phases returned. */
	unlisten_due = true;
	return true;
}

/* Phase 2 committed: the stream it made ready starts as req's response. */
void
events_start_stream(h2o_req_t *req)
{
	EventStream *es = pending.stream;

	Assert(es != NULL);
	pending.stream = NULL;
	if (pending.websocket)
	{
		pending.websocket = false;
		es->ws = ws_start(req, pending.ws_key, &pending.ws_handlers,
						  pending.first, pending.firstlen, on_socket_gone, es);
		if (pending.expires_at > 0)
			ws_set_expiry(es->ws, pending.expires_at);
		/* Closed when the owner may no longer become its role, or the secret changes. */
		ws_set_identity(es->ws, pending.authenticator, pending.run_as, pending.secret_generation,
						pending.keys_generation);
		pfree(pending.first);
		pending.first = NULL;
		return;
	}
	es->sse = sse_start(req, pending.first, pending.firstlen, on_stream_close, es);
	if (pending.expires_at > 0)
		sse_set_expiry(es->sse, pending.expires_at);
	/* Opened as a role: it ends when the route's owner may no longer become it. */
	if (OidIsValid(pending.authenticator))
		sse_set_identity(es->sse, pending.authenticator, pending.run_as);
	if (pending.secret_generation != 0 || pending.keys_generation != 0)
		sse_set_signer(es->sse, pending.secret_generation, pending.keys_generation);
	pfree(pending.first);
	pending.first = NULL;
}

/* Phase 2 failed, or did not make a stream ready: forgets what it made. */
void
events_forget_stream(void)
{
	if (pending.stream == NULL)
		return;
	on_stream_close(NULL, pending.stream);
	pending.stream = NULL;
	pending.websocket = false;
	pfree(pending.first);
	pending.first = NULL;
}

/* ---- receiving notifications ---- */

/* PQcommMethods: nothing to reset. */
static void
comm_reset(void)
{
}

/* PQcommMethods: nothing is buffered, so flushing always succeeds. */
static int
comm_flush(void)
{
	return 0;
}

/* PQcommMethods: nothing is ever waiting to be sent. */
static bool
comm_is_send_pending(void)
{
	return false;
}

/* Keeps each notification ('A': pid, channel, payload) for delivery after the read. */
static int
comm_putmessage(char msgtype, const char *s, size_t len)
{
	Notification *n;
	const char *channel;
	size_t		clen;
	MemoryContext oldcxt;

	if (msgtype != 'A' || len < 4)
		return 0;
	channel = s + 4;
	clen = strnlen(channel, len - 4);
	if (4 + clen + 1 >= len)
		return 0;
	/* Over the limit: not kept, and the channel's streams are told later. */
	if (read_bytes + len + NOTIFICATION_OVERHEAD > (size_t) webgres_events_read_limit)
	{
		Channel    *c = clen < NAMEDATALEN ?
			hash_search(channels, channel, HASH_FIND, NULL) : NULL;

		if (c != NULL && c->nsubscribers > 0)
		{
			c->lost = true;
			lost_pending = true;
		}
		read_dropped++;
		read_dropped_bytes += len;
		return 0;
	}
	read_bytes += len + NOTIFICATION_OVERHEAD;
	oldcxt = MemoryContextSwitchTo(notify_cxt);
	n = palloc(sizeof(Notification));
	n->channel = pstrdup(channel);
	n->payload = pstrdup(channel + clen + 1);
	n->len = len;
	received = lappend(received, n);
	MemoryContextSwitchTo(oldcxt);
	return 0;
}

/* PQcommMethods: comm_putmessage, which never blocks anyway. */
static void
comm_putmessage_noblock(char msgtype, const char *s, size_t len)
{
	(void) comm_putmessage(msgtype, s, len);
}

static const PQcommMethods notification_methods = {
	comm_reset,
	comm_flush,
	comm_flush,
	comm_is_send_pending,
	comm_putmessage,
	comm_putmessage_noblock
};

/* Reads the notification queue, keeping what it holds for this worker in `received`. */
static void
read_notifications(void)
{
	CommandDest save_dest = whereToSendOutput;
	const PQcommMethods *save_methods = PqCommMethods;
	MemoryContext oldcxt = CurrentMemoryContext;

	whereToSendOutput = DestRemote;
	PqCommMethods = &notification_methods;
	PG_TRY();
	{
		ProcessNotifyInterrupt(false);
	}
	PG_CATCH();
	{
		whereToSendOutput = save_dest;
		PqCommMethods = save_methods;
		MemoryContextSwitchTo(oldcxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	whereToSendOutput = save_dest;
	PqCommMethods = save_methods;
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Ends the streams that follow a channel the last read lost notifications
 * of, once what it kept is delivered: they get a comment and the end of
 * their response.  Streams that began after that read lost nothing.
 */
static void
end_streams_that_lost(void)
{
	HASH_SEQ_STATUS status;
	Channel    *c;

	lost_pending = false;
	hash_seq_init(&status, channels);
	while ((c = hash_seq_search(&status)) != NULL)
	{
		dlist_mutable_iter iter;

		if (!c->lost)
			continue;
		c->lost = false;
		dlist_foreach_modify(iter, &c->subscribers)
		{
			Subscription *sub = dlist_container(Subscription, node, iter.cur);

			if (sub->stream->subscribed_at >= nreads)
				continue;
			sse_push(sub->stream->sse, EVENTS_LOST_COMMENT, sizeof(EVENTS_LOST_COMMENT) - 1);
			sse_end(sub->stream->sse);
		}
	}
}

/* The text of a jsonb value: strings as they are, anything else as JSON. */
static char *
jsonb_value_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvBinary:
			return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
		default:
			return NULL;
	}
}

/*
 * A payload that is a JSON object with a "data" member is an envelope: its
 * "id" (string or number) and "event" (string) members, when present, are
 * the event's id and type, and "data" its data (a string as it is, other
 * JSON as JSON text; null carries no event).  Any other payload is the data
 * of an event with neither.  Returns false if there is no event to send.
 */
static bool
decode_payload(const char *payload, char **id, char **event, char **data)
{
	const char *p = payload;
	Jsonb	   *jb = NULL;

	*id = *event = NULL;
	*data = (char *) payload;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p != '{')
		return true;

	PG_TRY();
	{
		jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(payload)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(notify_cxt);
		FlushErrorState();
		jb = NULL;
	}
	PG_END_TRY();

	if (jb != NULL && JB_ROOT_IS_OBJECT(jb))
	{
		JsonbValue	key;
		JsonbValue *v;
		JsonbValue *idv;
		JsonbValue *eventv;
		char	   *i = NULL;
		char	   *e = NULL;

		key.type = jbvString;
		key.val.string.val = "data";
		key.val.string.len = 4;
		v = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &key);
		if (v == NULL)
			return true;
		key.val.string.val = "id";
		key.val.string.len = 2;
		idv = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &key);
		key.val.string.val = "event";
		key.val.string.len = 5;
		eventv = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &key);

		if (idv != NULL && (idv->type == jbvString || idv->type == jbvNumeric))
			i = jsonb_value_text(idv);
		else if (idv != NULL && idv->type != jbvNull)
			return true;
		if (eventv != NULL && eventv->type == jbvString)
			e = jsonb_value_text(eventv);
		else if (eventv != NULL && eventv->type != jbvNull)
			return true;
		/* An id or type with a line break would end its field early. */
		if ((i && !sse_field_ok(i, strlen(i))) || (e && !sse_field_ok(e, strlen(e))))
			return true;
		if (v->type == jbvNull)
			return false;
		*id = i;
		*event = e;
		*data = jsonb_value_text(v);
	}
	return true;
}

/* Whether the stream accepts a notification signed by role (InvalidOid: unsigned). */
static bool
sender_accepted(const EventStream *es, Oid role)
{
	if (!OidIsValid(role))
		return false;
	for (int i = 0; i < es->nsenders; i++)
		if (es->senders[i] == role)
			return true;
	return false;
}

/* Sends one notification to the streams that follow its channel. */
static void
deliver(Notification *n, StringInfo buf)
{
	Channel    *c = hash_search(channels, n->channel, HASH_FIND, NULL);
	char	   *id;
	char	   *event;
	char	   *data;
	const char *payload = n->payload;
	Oid			signer = InvalidOid;
	dlist_mutable_iter iter;

	if (c == NULL || c->nsubscribers == 0 || strlen(n->channel) >= NAMEDATALEN)
		return;
	/* Signed by webgres.notify(): its sender is known, its payload inside. */
	(void) notify_sign_verify(n->channel, n->payload, &signer, &payload);
	if (!decode_payload(payload, &id, &event, &data))
		return;
	resetStringInfo(buf);
	sse_format_event(buf, id, event, data, strlen(data));

	dlist_foreach_modify(iter, &c->subscribers)
	{
		Subscription *sub = dlist_container(Subscription, node, iter.cur);
		EventStream *es = sub->stream;

		/* Read before the stream's LISTEN: a burst being delivered in slices. */
		if (es->subscribed_at >= nreads)
			continue;
		/* The stream takes only what its senders signed. */
		if (es->restricted && !sender_accepted(es, signer))
			continue;
		/* Sent already as a catch-up row: the NOTIFY committed before phase 2's snapshot. */
		if (id != NULL && es->ncatchup_ids > 0 &&
			bsearch(&id, es->catchup_ids, es->ncatchup_ids, sizeof(char *), compare_ids) != NULL)
			continue;
		if (es->ws != NULL)
			ws_push_text(es->ws, data, strlen(data));
		else
			sse_push(es->sse, buf->data, buf->len);
	}
}

/* UNLISTENs the channels no stream on this worker follows any more. */
static void
unlisten_idle_channels(void)
{
	HASH_SEQ_STATUS status;
	Channel    *c;
	MemoryContext oldcxt = CurrentMemoryContext;

	unlisten_due = false;
	PG_TRY();
	{
		StartTransactionCommand();
		hash_seq_init(&status, channels);
		while ((c = hash_seq_search(&status)) != NULL)
		{
			if (c->nsubscribers > 0)
				continue;
			Async_Unlisten(c->name);
			ereport(DEBUG1,
					(errmsg_internal("webgres worker stops listening on channel \"%s\"", c->name)));
			hash_search(channels, c->name, HASH_REMOVE, NULL);
		}
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Delivers the next slice of what the last read returned; forgets it all
 * once all is delivered.
 */
static void
deliver_slice(void)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(notify_cxt);
	size_t		slice = Min(EVENTS_SLICE_BYTES, sse_buffer_limit_bytes());
	size_t		sent = 0;
	StringInfoData buf;

	initStringInfo(&buf);
	while (ndelivered < list_length(received) && sent < slice)
	{
		Notification *n = (Notification *) list_nth(received, ndelivered++);

		deliver(n, &buf);
		sent += n->len;
	}
	pfree(buf.data);
	MemoryContextSwitchTo(oldcxt);
	if (ndelivered == list_length(received))
	{
		received = NIL;
		ndelivered = 0;
		read_bytes = 0;
		MemoryContextReset(notify_cxt);
		if (lost_pending)
			end_streams_that_lost();
	}
}

/* The loop's next pass: nothing to do but come back to events_between_requests(). */
static void
on_next_pass(h2o_timeout_entry_t *entry)
{
}

/* Delivers the notifications that arrived and UNLISTENs idle channels. */
void
events_between_requests(void)
{
	/*
	 * The queue is read again once the last read is delivered, outside the
	 * read's transaction, so that the queue moves on at once.
	 */
	if (received == NIL && !lost_pending && notifyInterruptPending)
	{
		read_dropped = 0;
		read_dropped_bytes = 0;
		read_notifications();
		if (received != NIL || read_dropped > 0)
			nreads++;
		if (read_dropped > 0)
			ereport(LOG,
					(errmsg("webgres worker dropped " UINT64_FORMAT " notifications (%zu bytes) over webgres.events_read_limit",
							read_dropped, read_dropped_bytes),
					 errdetail("The event streams that follow their channels are ended once the %d notifications kept are delivered.",
							   list_length(received)),
					 errhint("Raise webgres.events_read_limit, or make clients read faster: delivery waits while a stream is over webgres.sse_buffer_limit.")));
	}
	/* Everything read was dropped: its streams end now. */
	if (received == NIL && lost_pending)
		end_streams_that_lost();
	/* While a client has not taken its backlog, the rest waits (sse.c). */
	if (received != NIL && !sse_backlogged() && !ws_backlogged())
	{
		deliver_slice();
		/* More to do: on the loop's next pass, not after its wait. */
		if ((received != NIL || notifyInterruptPending) && !h2o_timeout_is_linked(&next_pass))
			h2o_timeout_link(loop, &next_pass_timeout, &next_pass);
	}
	if (unlisten_due)
		unlisten_idle_channels();
}

/* The worker is stopping: ends every stream cleanly. */
void
events_shutdown(void)
{
	ws_close_all();
	sse_end_all();
}

/* Sets up the worker's subscriptions and streams; once per worker. */
void
events_init(h2o_context_t *ctx)
{
	HASHCTL		info;

	events_cxt = AllocSetContextCreate(TopMemoryContext, "webgres event subscriptions",
									   ALLOCSET_DEFAULT_SIZES);
	notify_cxt = AllocSetContextCreate(TopMemoryContext, "webgres notifications",
									   ALLOCSET_DEFAULT_SIZES);
	info.keysize = NAMEDATALEN;
	info.entrysize = sizeof(Channel);
	info.hcxt = events_cxt;
	channels = hash_create("webgres channels", 64, &info,
						   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	loop = ctx->loop;
	h2o_timeout_init(ctx->loop, &next_pass_timeout, 0);
	next_pass.cb = on_next_pass;
	sse_init(ctx);
	ws_init(ctx);
}

/* Defines webgres.events_read_limit; from _PG_init. */
void
events_define_settings(void)
{
	DefineCustomIntVariable("webgres.events_read_limit",
							"Most notification bytes a worker keeps from one read of the notification queue.",
							"Postgres hands a listening worker everything queued for it in one "
							"read; what is over this limit is not kept, and the event streams "
							"that follow a channel that lost notifications are ended once the "
							"rest is delivered, so that their clients reconnect and catch up "
							"through the handler's rows.",
							&webgres_events_read_limit,
							EVENTS_READ_LIMIT_DEFAULT,
							EVENTS_READ_LIMIT_MIN, EVENTS_READ_LIMIT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}
