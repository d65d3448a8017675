/*
 * csv.c
 *		Splits CSV text into records of field spans (csv.h).
 *
 * Fields are separated by commas; a field that starts with a double quote
 * runs to the matching quote, holds commas, newlines and doubled quotes, and
 * must be followed by a comma or the end of the record.  An unquoted empty
 * field is NULL and a quoted one the empty string, as COPY reads them.
 */
#include <string.h>

#include "parse/csv.h"

/* Starts reading s[0..len). */
void
csv_begin(CsvScan *scan, const char *s, size_t len)
{
	scan->s = s;
	scan->len = len;
	scan->pos = 0;
	scan->line = 1;
	scan->error = NULL;
}

/* Fails the scan at the record that began on line; returns -1. */
static int
fail(CsvScan *scan, long line, const char *why)
{
	scan->error = why;
	scan->line = line;
	scan->pos = scan->len;
	return -1;
}

/* Reads the next record. */
int
csv_next(CsvScan *scan, CsvField *fields, int maxfields, int *nfields, long *line)
{
	const char *s = scan->s;
	size_t		len = scan->len;
	size_t		pos = scan->pos;
	int			n = 0;

	if (scan->error != NULL)
		return -1;
	/* Blank lines between records are not records. */
	while (pos < len && (s[pos] == '\n' || (s[pos] == '\r' && pos + 1 < len && s[pos + 1] == '\n')))
	{
		pos += (s[pos] == '\r') ? 2 : 1;
		scan->line++;
	}
	if (pos >= len)
	{
		scan->pos = pos;
		return 0;
	}
	*line = scan->line;
	for (;;)
	{
		CsvField   *f;

		if (n == maxfields)
			return fail(scan, *line, "a record has more fields than the table has columns");
		f = &fields[n++];
		if (pos < len && s[pos] == '"')
		{
			size_t		start = ++pos;

			for (;;)
			{
				if (pos >= len)
					return fail(scan, *line, "a quoted field is not closed");
				if (s[pos] == '"')
				{
					if (pos + 1 < len && s[pos + 1] == '"')
					{
						pos += 2;
						continue;
					}
					break;
				}
				if (s[pos] == '\n')
					scan->line++;
				pos++;
			}
			f->s = s + start;
			f->len = pos - start;
			f->quoted = true;
			pos++;				/* the closing quote */
			if (pos < len && s[pos] != ',' && s[pos] != '\n' &&
				!(s[pos] == '\r' && pos + 1 < len && s[pos + 1] == '\n'))
				return fail(scan, *line, "a quoted field is followed by other text than a comma or the end of the line");
		}
		else
		{
			size_t		start = pos;

			while (pos < len && s[pos] != ',' && s[pos] != '\n' &&
				   !(s[pos] == '\r' && pos + 1 < len && s[pos + 1] == '\n'))
			{
				if (s[pos] == '"')
					return fail(scan, *line, "an unquoted field holds a double quote");
				pos++;
			}
			f->s = s + start;
			f->len = pos - start;
			f->quoted = false;
		}
		if (pos < len && s[pos] == ',')
		{
			pos++;
			continue;
		}
		/* The end of the record: LF, CRLF or the end of the text. */
		if (pos < len)
		{
			pos += (s[pos] == '\r') ? 2 : 1;
			scan->line++;
		}
		break;
	}
	scan->pos = pos;
	*nfields = n;
	return 1;
}

/* Copies a field's text, "" undoubled. */
size_t
csv_field_copy(const CsvField *f, char *out)
{
	size_t		n = 0;

	for (size_t i = 0; i < f->len; i++)
	{
		out[n++] = f->s[i];
		if (f->quoted && f->s[i] == '"')
			i++;				/* the second of a doubled quote */
	}
	return n;
}
