/*
 * handoff_frame.h
 *		The messages between an HTTP worker and an executor.
 *
 * Every message is a frame: a 4-byte big-endian payload length, a 1-byte
 * type, then the payload.  A connection carries one request:
 *
 *	 worker -> executor		REQUEST
 *	 executor -> worker		HEAD, BODY*, END
 *
 * REQUEST holds, beside the HTTP request, the states of the pipeline's
 * modules that began one: a section each, its module's id and the bytes
 * its state_encode wrote (serve/phase.h), which only that module reads.
 * HEAD holds the status, whether the response may be compressed (its
 * route's compress column), the headers and the content length, or
 * FRAME_LENGTH_UNKNOWN for a body whose size is not known in advance, and
 * for the worker's logs the role the handler ran as and the time spent
 * planning; each
 * BODY frame holds a piece of the body; END closes the response.  A
 * response produced in one piece is one BODY frame; a streamed one is many,
 * written as they are produced, and the socket's buffers give backpressure.
 */
#ifndef WEBGRES_HANDOFF_FRAME_H
#define WEBGRES_HANDOFF_FRAME_H

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "utils/memutils.h"

#include "serve/phase.h"

struct st_h2o_req_t;

#define FRAME_HEADER_SIZE 5
/* The largest payload either side accepts. */
#define FRAME_MAX_PAYLOAD (MaxAllocSize - FRAME_HEADER_SIZE)
#define FRAME_LENGTH_UNKNOWN UINT64CONST(0xFFFFFFFFFFFFFFFF)
/*
 * What a REQUEST frame keeps for the request beside its body: its target,
 * headers and fixed fields, which h2o and the HTTP/2 screen bound far
 * below this (H2O_MAX_REQLEN is some 400 kB).
 */
#define FRAME_REQUEST_HEAD_ROOM (16 * 1024 * 1024)
/* The largest request body a frame carries: webgres.max_body_size's upper bound. */
#define FRAME_MAX_REQUEST_BODY (FRAME_MAX_PAYLOAD - FRAME_REQUEST_HEAD_ROOM)

typedef enum FrameType
{
	FRAME_REQUEST = 'Q',
	FRAME_HEAD = 'H',
	FRAME_BODY = 'B',
	FRAME_END = 'E'
} FrameType;

/* What a request frame carries besides the HTTP request itself. */
typedef struct HandoffMeta
{
	TimestampTz head_at;		/* when the request's head was complete */
	int64		route_id;		/* the route that sent it off the loop */
	bool		rerun;			/* it ran on the loop first and was cancelled */
	PhaseStates states;			/* the pipeline modules' states, readied to
								 * cross (serve/pipeline_phases.h) */
} HandoffMeta;

/* What a HEAD frame carries besides the response: for the access and slow-request logs. */
typedef struct HandoffAnswerMeta
{
	const char *role;			/* the role a route with auth ran its handler
								 * as; NULL: none */
	int64		plan_us;		/* microseconds spent planning before the head */
} HandoffAnswerMeta;

/* The size of req's REQUEST frame, its header included. */
extern uint64 frame_request_size(struct st_h2o_req_t *req);

/*
 * Appends a REQUEST frame for req to buf but for the bytes of its body,
 * which the caller writes right after it: req->entity, from libh2o's
 * buffer, so that the worker holds no copy of a body it hands off.
 */
extern void frame_put_request_head(StringInfo buf, struct st_h2o_req_t *req,
								   const HandoffMeta *meta);

/*
 * Fills a zeroed h2o request, whose pool is initialised, from a REQUEST
 * payload that palloc returned.  Its target and headers are copied into the
 * pool; its body is not: it is made a bytea where it lies in data, *body
 * points at it (NULL: no body) and req->entity at its bytes, so data must
 * outlive req.  False if the payload is malformed.
 */
extern bool frame_get_request(char *data, size_t len, struct st_h2o_req_t *req,
							  HandoffMeta *meta, bytea **body);

/* Appends a HEAD frame for req->res with the given content length. */
extern void frame_put_head(StringInfo buf, struct st_h2o_req_t *req, uint64 content_length,
						   const HandoffAnswerMeta *meta);

/* Writes the 5-byte header of a BODY frame of len bytes into out. */
extern void frame_put_body_header(char *out, size_t len);

/* Appends an END frame. */
extern void frame_put_end(StringInfo buf);

/* Appends HEAD, one BODY (if bodylen > 0) and END frames for req->res. */
extern void frame_put_response(StringInfo buf, struct st_h2o_req_t *req,
							   const char *body, size_t bodylen,
							   const HandoffAnswerMeta *meta);

/*
 * Sets req->res status, headers and content length, and *meta, from a HEAD
 * payload, copying into req's pool.  False if the payload is malformed.
 */
extern bool frame_get_head(const char *data, size_t len, struct st_h2o_req_t *req,
						   HandoffAnswerMeta *meta);

/* Reads a frame header: payload length and type. */
extern void frame_get_header(const char *data, uint32 *len, char *type);

#endif
