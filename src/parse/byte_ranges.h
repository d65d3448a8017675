/*
 * byte_ranges.h
 *		Reading a Range header field (RFC 9110 14.2) for a static file, and
 *		deciding which byte ranges, if any, to send.
 *
 * libh2o 2.2.5's file handler sends every range a client lists, as many as
 * fit in the head, overlapping or not: "bytes=0-,0-,0-,..." asks a 6 kB
 * file 20,000 times over.  webgres reads the field first and hands the file
 * handler a canonical one: at most a configured number of ranges, none
 * overlapping (RFC 9110 14.2 lets a server coalesce them), or none at all,
 * and the whole file is sent.
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it.
 */
#ifndef WEBGRES_BYTE_RANGES_H
#define WEBGRES_BYTE_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most ranges a request may ask for, whatever the setting says. */
#define BYTE_RANGES_LIMIT 1000

/*
 * Ranges closer than this are sent as one: a part of a multipart answer
 * costs about this much in its own header (RFC 9110 14.2 allows coalescing
 * ranges "separated by a gap that is smaller than the overhead of sending
 * multiple parts").
 */
#define BYTE_RANGES_MERGE_GAP 80

/* One range, first and last byte included. */
typedef struct ByteRange
{
	uint64_t	first;
	uint64_t	last;
} ByteRange;

typedef enum ByteRangesVerdict
{
	BYTE_RANGES_WHOLE,			/* ignore the field: send the whole file (200) */
	BYTE_RANGES_PARTIAL,		/* send the ranges given (206) */
	BYTE_RANGES_UNSATISFIABLE	/* no range overlaps the file (416) */
} ByteRangesVerdict;

/*
 * Reads the Range value[0..len) for a file of size bytes.  WHOLE when the
 * unit is not "bytes", the value is malformed, or it lists more than
 * max_ranges ranges (1 to BYTE_RANGES_LIMIT); UNSATISFIABLE when no range
 * starts inside the file; otherwise PARTIAL with *nout ranges (at least one,
 * at most max_ranges) in out, which has room for max_ranges: each inside the
 * file, pairwise disjoint and more than BYTE_RANGES_MERGE_GAP bytes apart,
 * in the order the client asked for them unless some had to be merged (then
 * in ascending order).  Their lengths add up to at most size.
 */
extern ByteRangesVerdict byte_ranges_plan(const char *value, size_t len, uint64_t size,
										  int max_ranges, ByteRange *out, int *nout);

#endif
