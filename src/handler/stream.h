/*
 * stream.h
 *		Streamed responses: a handler's rows written as they are fetched.
 *
 * A route in mode stream answers with all its handler's rows as one
 * document (a JSON array, NDJSON or CSV, chosen from the request's Accept
 * header), fetched from a cursor in batches and handed to a sink batch by
 * batch.  The sink is the executor's connection to the worker: its writes
 * block while the client does not read, which holds the cursor where it is.
 * See docs/streaming.md.
 */
#ifndef WEBGRES_STREAM_H
#define WEBGRES_STREAM_H

#include "datatype/timestamp.h"
#include "utils/portal.h"

struct st_h2o_req_t;

/* Rows fetched from the cursor at once, at most. */
#define STREAM_BATCH_ROWS 1000
/* Rendered bytes a batch aims at; batches of large rows shrink to it. */
#define STREAM_BATCH_BYTES (256 * 1024)

typedef enum StreamFormat
{
	STREAM_JSON,				/* application/json: one array of objects */
	STREAM_NDJSON,				/* application/x-ndjson: one object a line */
	STREAM_CSV,					/* text/csv: header line, then one row a line */
	STREAM_NOT_ACCEPTABLE		/* the Accept header allows none of them */
} StreamFormat;

/* Where a stream goes. */
typedef struct StreamSink
{
	/* Sends req->res (status, headers; length unknown).  False: peer gone. */
	bool		(*begin) (void *arg, struct st_h2o_req_t *req);
	/* Sends the next piece of the body.  False: peer gone. */
	bool		(*write) (void *arg, const char *data, size_t len);
	void	   *arg;
} StreamSink;

/* The format the request's Accept header asks for. */
extern StreamFormat stream_negotiate(struct st_h2o_req_t *req);

/*
 * Fetches every row of portal and writes the document to sink.  The head
 * (200, the format's Content-Type, extra_headers: a JSON object as text, or
 * NULL) goes once the first batch has been fetched and rendered without
 * error, so an error up to then is answered as any handler error; at that
 * point the statement timeout is re-armed for stream_deadline (0: none).
 * head_only (HEAD) fetches one row, sends the head and no body.  Errors,
 * including a sink whose peer is gone, are raised.
 */
extern void stream_run(struct st_h2o_req_t *req, Portal portal, StreamFormat format,
					   bool head_only, const char *extra_headers, const StreamSink *sink,
					   TimestampTz stream_deadline);

#endif
