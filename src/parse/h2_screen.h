/*
 * h2_screen.h
 *		Counting what an HTTP/2 client sends, before libh2o acts on it.
 *
 * libh2o 2.2.5 parses HTTP/2 itself and has none of the 2023-24 limits on
 * frames that are cheap to send and costly to serve (rapid reset, control
 * frame and CONTINUATION floods).  webgres reads the frame headers of each
 * chunk a connection delivers, before h2o processes it, and keeps per
 * connection budgets; a connection that overspends one is ended with
 * GOAWAY (ENHANCE_YOUR_CALM).  It also remembers which streams the chunk
 * resets, so that a request whose reset has already been read is not run.
 *
 * Only the 9-byte frame headers and the pad-length byte of padded DATA
 * frames are read; HPACK is left to h2o.  Frames may be split anywhere
 * across chunks.
 *
 * Once h2o has decoded a request, its pseudo-header fields and fields are
 * screened with the rules of the HTTP/1 screen (screen.c), so that a
 * request refused over HTTP/1.1 is refused over HTTP/2 too, and with the
 * few HTTP/2 adds (RFC 9113 8.2).
 *
 * Pure byte-level code: no allocation, no Postgres, no h2o; the fuzzer
 * links it as it is.
 */
#ifndef WEBGRES_H2_SCREEN_H
#define WEBGRES_H2_SCREEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse/screen.h"

#define H2_FRAME_HEADER_SIZE 9

/* RFC 9113 frame types and flags that the screening looks at. */
#define H2_FRAME_DATA 0x0
#define H2_FRAME_HEADERS 0x1
#define H2_FRAME_PRIORITY 0x2
#define H2_FRAME_RST_STREAM 0x3
#define H2_FRAME_SETTINGS 0x4
#define H2_FRAME_PUSH_PROMISE 0x5
#define H2_FRAME_PING 0x6
#define H2_FRAME_GOAWAY 0x7
#define H2_FRAME_WINDOW_UPDATE 0x8
#define H2_FRAME_CONTINUATION 0x9

#define H2_FLAG_END_STREAM 0x1
#define H2_FLAG_ACK 0x1
#define H2_FLAG_END_HEADERS 0x4
#define H2_FLAG_PADDED 0x8

/*
 * A header block (HEADERS plus its CONTINUATION frames) may be this large
 * and span this many frames.  64 kB is the largest HTTP/1 head webgres
 * takes (SCREEN_MAX_HEAD); four frames of h2o's 16 kB maximum carry it.
 */
#define H2_MAX_HEADER_BLOCK 65536
#define H2_MAX_HEADER_BLOCK_FRAMES 16

/*
 * The decoded header list of a request, counted as RFC 7541 section 4.1
 * does (name, value and 32 octets per field), may be this large.  HPACK
 * lets one byte name a table entry of up to 4 kB, so a small block can
 * decode to a huge list.
 */
#define H2_MAX_HEADER_LIST 65536

/*
 * Control frames (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, GOAWAY, empty
 * DATA, and frame types h2o ignores) a connection may send on credit.
 * Every request answered earns H2_CONTROL_REFUND_PER_REQUEST back, plus
 * one per H2_CONTROL_REFUND_BYTES of response body (a client acknowledges
 * what it receives with WINDOW_UPDATEs), never above the starting budget.
 */
#define H2_CONTROL_BUDGET 1000
#define H2_CONTROL_REFUND_PER_REQUEST 16
#define H2_CONTROL_REFUND_BYTES 4096

/* Streams reset in one chunk that are remembered, at most. */
#define H2_MAX_REMEMBERED_RESETS 1024

typedef enum H2Verdict
{
	H2_OK = 0,
	H2_TOO_MANY_RESETS,
	H2_TOO_MANY_CONTROL_FRAMES,
	H2_HEADER_BLOCK_TOO_LARGE,
	H2_TOO_MANY_CONTINUATIONS,
	H2_HEADER_LIST_TOO_LARGE
} H2Verdict;

typedef struct H2Screen
{
	/* framing, carried across chunks */
	uint8_t		hdr[H2_FRAME_HEADER_SIZE];
	uint8_t		hdr_have;		/* bytes of hdr collected */
	bool		want_pad;		/* the next payload byte is a pad length */
	uint8_t		type;
	uint8_t		flags;
	uint32_t	stream;
	uint32_t	length;
	uint32_t	payload_left;	/* payload bytes of the current frame to pass */

	/* the header block under way, if its END_HEADERS has not been seen */
	bool		in_block;
	uint32_t	block_bytes;
	uint32_t	block_frames;

	/*
	 * Budgets, in points.  A reset spends two reset points and an answered
	 * request earns one back, so a client that resets fewer than one in
	 * three of its requests never runs out.
	 */
	int32_t		reset_points;
	int32_t		reset_points_max;
	int32_t		control_points;

	/* streams whose RST_STREAM was read but not yet processed by h2o */
	uint32_t	resets[H2_MAX_REMEMBERED_RESETS];
	int			nresets;

	H2Verdict	verdict;		/* sticky: the first budget overspent */

	/* totals, for the log */
	uint64_t	frames;
	uint64_t	reset_frames;
	uint64_t	control_frames;
} H2Screen;

/* Starts a connection's screening; max_resets is webgres.http2_max_resets. */
extern void h2_screen_init(H2Screen *s, int max_resets);

/*
 * Reads the frame headers in buf[0..len), the next bytes the connection
 * delivered after its preface.  Returns H2_OK, or the budget the client
 * overspent (the connection must then be ended and nothing more fed).
 */
extern H2Verdict h2_screen_feed(H2Screen *s, const uint8_t *buf, size_t len);

/* The next byte fed starts a frame (bytes were read that were not fed). */
extern void h2_screen_resync(H2Screen *s);

/* h2o has processed every complete frame fed so far. */
extern void h2_screen_processed(H2Screen *s);

/* True if an RST_STREAM for stream was fed and not yet processed. */
extern bool h2_screen_was_reset(const H2Screen *s, uint32_t stream);

/* A request was answered with body_bytes of body: earns credit back. */
extern void h2_screen_answered(H2Screen *s, size_t body_bytes);

/* Checks a request's decoded header list size (RFC 7541 section 4.1). */
extern H2Verdict h2_screen_header_list(H2Screen *s, size_t list_size);

/* What a verdict means, for the log and the GOAWAY's debug data. */
extern const char *h2_screen_reason(H2Verdict v);

/*
 * Fields a request may carry besides its pseudo-header fields: libh2o's
 * HTTP/1 parser takes as many.
 */
#define H2_MAX_HEADER_FIELDS 100

/*
 * Screens a decoded request's :method, :path and :authority (NULL if it
 * had none) and the number of its other fields, as screen_request screens
 * a request line and Host: true if they may be routed, else res->status
 * and res->reason say how to answer.  Absolute-form has no place in :path,
 * and the authority must come as :authority (libh2o drops a Host field).
 */
extern bool h2_screen_request(const char *method, size_t method_len,
							  const char *path, size_t path_len,
							  const char *authority, size_t authority_len,
							  size_t nfields, ScreenResult *res);

/*
 * Screens one field of a decoded request as screen_request screens a field
 * line, and by RFC 9113 8.2: no upper-case name, no whitespace around the
 * value, no connection-specific field (TE only as "trailers").
 */
extern bool h2_screen_field(const char *name, size_t namelen, const char *value, size_t valuelen,
							ScreenResult *res);

#endif
