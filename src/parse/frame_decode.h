/*
 * frame_decode.h
 *		Reading the payloads of the frames between HTTP workers and executors.
 *
 * These are the only decoders whose input crosses a process boundary, so
 * they check every length against what is left and never allocate: a
 * decoded string points into the payload.  exec/handoff_frame.c copies what
 * they return into h2o's structures.  Pure C, no Postgres or h2o: a fuzzer
 * builds it (fuzz/fuzz_handoff_frame.c).
 */
#ifndef WEBGRES_FRAME_DECODE_H
#define WEBGRES_FRAME_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A HEAD frame's content length when the body's size is not known. */
#define FRAME_DECODE_LENGTH_UNKNOWN UINT64_C(0xFFFFFFFFFFFFFFFF)
/* The statuses a HEAD frame may carry (1xx are never a handler's answer). */
#define FRAME_DECODE_STATUS_MIN 200
#define FRAME_DECODE_STATUS_MAX 599
/* A role name is shorter than this (Postgres' NAMEDATALEN). */
#define FRAME_DECODE_ROLE_MAX 64
/* The smallest encoded header: two empty length-prefixed strings. */
#define FRAME_DECODE_MIN_HEADER 8

/* Where a payload is read from; ok turns false at the first short read. */
typedef struct FrameReader
{
	const char *p;
	size_t		left;
	bool		ok;
} FrameReader;

/* Module states a REQUEST frame carries, at most: one per pipeline module. */
#define FRAME_MAX_MODULE_STATES 32
/* The most bytes one module's state takes in a REQUEST frame. */
#define FRAME_MODULE_STATE_MAX 1024

/* A string inside a payload (not NUL-terminated). */
typedef struct FrameString
{
	const char *base;
	size_t		len;
} FrameString;

/* One module's state in a REQUEST payload: its bytes are the module's to read. */
typedef struct FrameModuleState
{
	uint8_t		module;			/* its id, below the decoder's nmodules */
	FrameString bytes;
} FrameModuleState;

/* A decoded REQUEST payload; headers are read with frame_decode_header(). */
typedef struct FrameRequest
{
	uint64_t	head_at;
	uint64_t	route_id;
	bool		rerun;
	/* The pipeline modules' states, by increasing module id. */
	uint8_t		nstates;		/* at most FRAME_MAX_MODULE_STATES */
	FrameModuleState states[FRAME_MAX_MODULE_STATES];
	bool		tls;
	FrameString authority;
	FrameString method;
	FrameString path;
	uint64_t	query_at;		/* UINT64_MAX: no query */
	uint32_t	nheaders;
	FrameReader headers;		/* positioned at the first header */
	bool		has_body;
	FrameString body;
} FrameRequest;

/* A decoded HEAD payload; headers are read with frame_decode_header(). */
typedef struct FrameHead
{
	uint32_t	status;
	uint64_t	content_length; /* FRAME_DECODE_LENGTH_UNKNOWN: streamed */
	uint8_t		compress_hint;
	FrameString role;			/* empty: none */
	uint64_t	plan_us;
	uint32_t	nheaders;
	FrameReader headers;		/* positioned at the first header */
} FrameHead;

/*
 * Decodes a REQUEST payload, whose module states name modules below
 * nmodules.  False if it is malformed: a short string, a module state of
 * an unknown module, out of order (so repeated) or longer than
 * FRAME_MODULE_STATE_MAX, a query offset outside the path, bytes left over.
 */
extern bool frame_decode_request(const char *data, size_t len, unsigned nmodules,
								 FrameRequest *out);

/*
 * Decodes a HEAD payload.  False if it is malformed: a status outside
 * 200-599, a compress hint other than those given, a role name too long, a
 * planning time above INT64_MAX, a known content length above max_length,
 * bytes left over.
 */
extern bool frame_decode_head(const char *data, size_t len, uint64_t max_length,
							  uint8_t hint_a, uint8_t hint_b, FrameHead *out);

/*
 * Reads the next header's name and value from a reader that a successful
 * decode positioned; called nheaders times it always succeeds.
 */
extern void frame_decode_header(FrameReader *r, FrameString *name, FrameString *value);

/* Reads a frame header: the payload's length and the frame's type. */
extern void frame_decode_frame_header(const char *data, uint32_t *len, char *type);

#endif
