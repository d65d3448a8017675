/*
 * events.h
 *		Event-stream routes: LISTEN/NOTIFY delivered as server-sent events.
 *
 * A handler whose result has a `channels` column answers with an event
 * stream.  The request runs in two phases: the handler runs once (phase 1)
 * and the worker LISTENs on the channels it returned, in the request's
 * transaction; after that commits, the handler runs again in a new
 * transaction (phase 2), whose snapshot therefore sees everything committed
 * before the LISTEN took effect: its event rows are sent first, then every
 * notification on the channels both phases returned.  A live event whose
 * id was among the catch-up rows is not sent again.  The worker reads the
 * notification queue between requests and UNLISTENs a channel when its
 * last subscriber leaves.  docs/events.md has the whole story.
 */
#ifndef WEBGRES_EVENTS_H
#define WEBGRES_EVENTS_H

#include "access/tupdesc.h"
#include "executor/spi.h"

#include "message/request.h"

struct st_h2o_context_t;

/* Sets up the worker's subscriptions and streams; once per worker. */
extern void events_init(struct st_h2o_context_t *ctx);

/* True if a handler's result columns declare an event stream. */
extern bool events_declared(TupleDesc desc);

/* Checks an event-stream handler's result columns when the route is saved. */
extern void events_check_columns(TupleDesc desc);

/*
 * Phase 1, inside the request's transaction: looks at all the rows of an
 * event-stream handler.  Zero rows return false ("not mine").  A status
 * other than 200 shapes a normal response from the first row.  Otherwise
 * the worker LISTENs on the channels of the first row (effective when the
 * transaction commits) and the request waits for events_second_phase().
 */
extern bool events_first_phase(RequestData *rd, int64 route_id, SPITupleTable *rows,
							   char **body, size_t *bodylen);

/* True if phase 1 ran for the request just served. */
extern bool events_pending(void);

/*
 * Phase 2, after the request's transaction ended: if its LISTEN committed,
 * runs the handler again in a new transaction and starts the stream with
 * the catch-up events, or shapes a normal response (404, an error) in
 * req->res and *body.
 */
extern void events_second_phase(RequestData *rd, char **body, size_t *bodylen);

/* True, once, if the request just served became an event stream. */
extern bool events_stream_started(void);

/*
 * Between requests, outside any transaction: delivers the notifications
 * that arrived, and UNLISTENs channels nobody on this worker follows.
 */
extern void events_between_requests(void);

/* The worker is stopping: ends every stream cleanly. */
extern void events_shutdown(void);

#endif
