/*
 * sse.h
 *		Server-sent event streams held open on a worker's event loop.
 *
 * A stream is an HTTP response that never ends on its own: its headers go
 * out at once, then each event as it is pushed (chunked on HTTP/1.1, DATA
 * frames on HTTP/2).  Bytes pushed while the client has not taken the
 * previous ones wait in the stream's buffer; a client that leaves more than
 * webgres.sse_buffer_limit there for a second, when it could have taken
 * them, is disconnected.  A comment line goes
 * out every webgres.sse_heartbeat of silence, which keeps proxies from
 * timing the stream out and shows a client that has gone.
 */
#ifndef WEBGRES_SSE_H
#define WEBGRES_SSE_H

#include "lib/stringinfo.h"

#include "parse/sse_format.h"

struct st_h2o_req_t;
struct st_h2o_context_t;

typedef struct SseStream SseStream;

/* Called once when the stream ends, whatever ended it. */
typedef void (*SseCloseCallback) (SseStream *stream, void *arg);

/* Sets up heartbeats on the worker's loop; once per worker. */
extern void sse_init(struct st_h2o_context_t *ctx);

/*
 * Starts the stream as the response to req (whose status and headers the
 * caller may already have added to), sending the first bytes, if any.
 * on_close is called when the stream ends.
 */
extern SseStream *sse_start(struct st_h2o_req_t *req, const char *first, size_t firstlen,
							SseCloseCallback on_close, void *arg);

/*
 * Ends the stream cleanly at expires_at (seconds since 1970): the token it
 * was opened with expires then, and the client must come back with a new
 * one.  Checked about once a second.
 */
extern void sse_set_expiry(SseStream *stream, int64 expires_at);

/*
 * Notes that the stream was opened as role, which route owner owner was
 * allowed to become: sse_end_unauthorised() ends it once it may no longer.
 */
extern void sse_set_identity(SseStream *stream, Oid owner, Oid role);

/*
 * Notes what verified the stream's token: the HS secret of generation
 * secret_generation, or the keys file of generation keys_generation (the
 * other is 0): sse_end_signer_changed() ends it once that changes.
 */
extern void sse_set_signer(SseStream *stream, uint64 secret_generation,
						   uint64 keys_generation);

/*
 * Ends cleanly, on the loop's next pass, every stream whose token was
 * verified with an HS secret or a keys file of a generation other than the
 * current one; returns how many.
 */
extern int	sse_end_signer_changed(uint64 secret_current, uint64 keys_current);

/* How many open streams were opened as a role (sse_set_identity). */
extern int	sse_identified_streams(void);

/*
 * Ends cleanly, on the loop's next pass, every stream opened as a role
 * that allowed(owner, role) no longer allows; returns how many.  The
 * caller runs it in a transaction if allowed() reads the catalog.
 */
extern int	sse_end_unauthorised(bool (*allowed) (Oid owner, Oid role));

/* Queues bytes for the client and offers them to its connection. */
extern void sse_push(SseStream *stream, const char *bytes, size_t len);

/* Ends the stream cleanly (the response's end) once what is queued has gone out. */
extern void sse_end(SseStream *stream);

/*
 * True while some stream holds more than webgres.sse_buffer_limit bytes its
 * client has not taken: push nothing more until it drains or is cut.
 */
extern bool sse_backlogged(void);

/* Ends every stream with a clean end of response and waits (bounded) for them to go out. */
extern void sse_end_all(void);


/*
 * Appends one event in the text/event-stream format: an id: and an event:
 * line when given (NULL for none), one data: line per line of data (CR LF,
 * CR and LF all end a line), and the blank line that dispatches it.
 */
extern void sse_format_event(StringInfo buf, const char *id, const char *event,
							 const char *data, size_t datalen);


/*
 * webgres.sse_buffer_limit: the most bytes an event stream, or a WebSocket,
 * may hold that its client has not taken.
 */
extern size_t sse_buffer_limit_bytes(void);

/* Defines webgres.sse_heartbeat and webgres.sse_buffer_limit; from _PG_init. */
extern void sse_define_settings(void);

#endif
