/*
 * csv.h
 *		Splits CSV text (RFC 4180, as COPY ... CSV reads it) into records of
 *		field spans.
 *
 * Pure byte-level code, no allocation: sql/ingest.c copies and converts the
 * fields, and the fuzzer drives this directly.
 */
#ifndef WEBGRES_CSV_H
#define WEBGRES_CSV_H

#include <stdbool.h>
#include <stddef.h>

/* The most fields a record may have: a table has at most 1600 columns. */
#define CSV_MAX_FIELDS		1600

typedef struct CsvField
{
	const char *s;				/* inside the quotes, "" still doubled */
	size_t		len;
	bool		quoted;			/* quoted: "" is an empty string, not NULL */
} CsvField;

typedef struct CsvScan
{
	const char *s;
	size_t		len;
	size_t		pos;
	long		line;			/* the line the next record starts on (from 1);
								 * after an error, the line of the record at fault */
	const char *error;			/* why csv_next returned -1 */
} CsvScan;

/* Starts reading s[0..len). */
extern void csv_begin(CsvScan *scan, const char *s, size_t len);

/*
 * Reads the next record into fields (room for maxfields): 1 with *nfields
 * and *line (where it starts) set, 0 at the end, -1 with scan->error set.
 * Records end in LF or CRLF (the last may end the text instead); blank
 * lines are skipped.
 */
extern int	csv_next(CsvScan *scan, CsvField *fields, int maxfields, int *nfields, long *line);

/* Copies a field's text to out (room for f->len bytes), "" undoubled; its length. */
extern size_t csv_field_copy(const CsvField *f, char *out);

#endif
