/*
 * events.h
 *		Event-stream routes: LISTEN/NOTIFY delivered as server-sent events.
 *
 * A handler whose result has a `channels` column answers with an event
 * stream (handler.c tells; the pipeline conducts both phases and hands
 * this module the rows).  The request runs in two phases: the handler runs
 * once (phase 1) and the worker LISTENs on the channels it returned, in the
 * request's transaction; after that commits, the handler runs again in a new
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

/*
 * True if this process holds event streams: a worker, after events_init().
 * An executor does not; phase 1 must not run there (its LISTEN would never
 * be read, and there is no loop to stream from).
 */
extern bool events_served_here(void);

/* The channels phase 1 LISTENed on, kept by the caller until phase 2. */
typedef struct EventsListen
{
	char	  **channels;		/* distinct names, in the request's memory */
	int			nchannels;
} EventsListen;

/*
 * Phase 1, inside the request's transaction, with every row (at least one)
 * of an event-stream handler: a status other than 200 (or a HEAD request)
 * shapes a normal response from the first row, and false is returned.
 * Otherwise the worker LISTENs on the channels of the first row (effective
 * when the transaction commits), notes them in *listen and returns true:
 * the request waits for events_second_phase().
 */
extern bool events_first_phase(RequestData *rd, SPITupleTable *rows, EventsListen *listen,
							   char **body, size_t *bodylen);

/*
 * Phase 1's transaction committed: its channels are this worker's from now
 * on, and are UNLISTENed once no stream follows them, even should phase 2
 * fail.
 */
extern void events_listened(const EventsListen *listen);

/*
 * Phase 2, in a new transaction, with every row (at least one) of the
 * handler run again: a status other than 200 shapes a normal response from
 * the first row and returns false; otherwise the stream is made ready with
 * the catch-up events, on the channels both phases returned, and true is
 * returned.  Nothing is sent yet: once the transaction has committed,
 * events_start_stream() starts the response (sse.c); should it fail,
 * events_forget_stream() drops what was made ready, and the request is
 * answered with the error.
 */
extern bool events_second_phase(RequestData *rd, const EventsListen *listen,
								SPITupleTable *rows, char **body, size_t *bodylen);

/*
 * True when phase 1 made the stream ready itself: a WebSocket route's open
 * handler runs once, so there is no phase 2 and events_start_stream()
 * follows phase 1's commit.
 */
extern bool events_stream_ready(void);

/* Phase 2 committed: starts the stream it made ready as req's response. */
extern void events_start_stream(struct st_h2o_req_t *req);

/* Phase 2 did not commit: forgets the stream it made ready, if any. */
extern void events_forget_stream(void);

/*
 * Between requests, outside any transaction: delivers the notifications
 * that arrived, and UNLISTENs channels nobody on this worker follows.
 */
extern void events_between_requests(void);

/* The worker is stopping: ends every stream cleanly. */
extern void events_shutdown(void);

/* Defines webgres.events_read_limit; from _PG_init. */
extern void events_define_settings(void);

#endif
