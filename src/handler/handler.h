/*
 * handler.h
 *		Runs a route's handler for a request.
 *
 * What running a handler needs between requests (its prepared plan, what
 * is known of that plan, a constant handler's response) is kept here, in a
 * HandlerState per route that this module allocates, hangs on the Route
 * and drops when routes.c replaces the table.  Nothing else looks inside.
 */
#ifndef WEBGRES_HANDLER_H
#define WEBGRES_HANDLER_H

#include "datatype/timestamp.h"
#include "executor/spi.h"

#include "message/request.h"
#include "message/response.h"
#include "routes/routes.h"

struct StreamSink;

/* Registers with routes.c to hear when the table is replaced; once per process. */
extern void handler_init(void);

/* What running a route's handler gave. */
typedef enum HandlerResult
{
	HANDLER_NO_ROWS,			/* no row: the route declines the request */
	HANDLER_ANSWERED,			/* its first row is shaped into the response */
	HANDLER_EVENT_ROWS			/* an event stream's rows, all of them, for the
								 * caller to hand to events.c; nothing shaped */
} HandlerResult;

/*
 * Runs route's handler with the route owner's privileges, inside the
 * caller's transaction and SPI connection.  A handler whose columns declare
 * an event stream (a channels column) returns its rows in *rows; any other
 * has its first row shaped into rd->req and *body.  Errors propagate.
 */
extern HandlerResult handler_run(Route *route, RequestData *rd, SPITupleTable **rows,
								 char **body, size_t *bodylen);

/*
 * True if route's handler, as last run, neither writes nor calls a volatile
 * function and its plan is still current, so that the request may share a
 * read-only transaction with others.  Needs no transaction.
 */
extern bool handler_can_share(const Route *route);

/*
 * True if route's handler writes or locks rows, or answers an event stream
 * (LISTEN cannot run during recovery): what a standby cannot serve.
 * Prepares the handler if this process has not.
 */
extern bool handler_needs_primary(Route *route);

/*
 * Runs route's handler as handler_run() does and returns all its rows (in
 * SPI_tuptable), or NULL for none, without shaping a response: for the
 * second phase of an event stream.
 */
extern SPITupleTable *handler_run_rows(Route *route, RequestData *rd);

/*
 * The response of route's handler if its plan folds to one constant row
 * and it has run once since it was prepared; NULL otherwise.  Needs no
 * transaction.
 */
extern const CachedResponse *handler_cached_response(const Route *route);

/* Drops constant responses whose plan was invalidated.  Inside a transaction. */
extern void handler_forget_stale_responses(void);

/*
 * True if route's handler answers with an event stream (its result has a
 * channels column), or route is a WebSocket's: the worker that listens
 * holds either open, so neither may leave its event loop.  Once this
 * process has prepared or described the handler, a field's read; until
 * then it parses the handler, as its owner, without planning it: only
 * inside a transaction with SPI connected (handler_knows_event_stream()
 * tells whether it would have to).  Parsing waits at most a few
 * milliseconds for a lock on a table the handler reads; false if that was
 * not enough to tell (it tries again next time).
 */
extern bool handler_answers_event_stream(Route *route);

/*
 * True if handler_answers_event_stream() can answer for route without
 * SQL: a WebSocket route, or a handler this process prepared or described
 * since the route table was last replaced.  Needs no transaction.
 */
extern bool handler_knows_event_stream(const Route *route);

/*
 * Runs route's handler (mode stream) as a cursor and streams its rows to
 * sink, inside the caller's transaction and SPI connection (see stream.h).
 * Answers in *body instead, without running anything, when the Accept
 * header allows no format (406) or there is no sink (503: no executors).
 * Errors propagate.
 */
extern void handler_stream(Route *route, RequestData *rd, const struct StreamSink *sink,
						   bool head_only, TimestampTz stream_deadline,
						   char **body, size_t *bodylen);

/*
 * Prepares a handler as role owner, with search_path in effect (NULL: the
 * session's), to check it (for the routes trigger); a handler that streams
 * needs rows but no particular columns.
 */
extern void handler_validate(const char *handler, Oid owner, bool streams,
							 const char *search_path);

/* The same for a WebSocket route's handler, on_message and on_close (NULL: none). */
extern void handler_validate_websocket(const char *handler, const char *on_message,
									   const char *on_close, Oid owner,
									   const char *search_path);

#endif
