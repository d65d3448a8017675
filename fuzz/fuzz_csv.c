/*
 * Fuzzes the CSV reader (src/parse/csv.c).  Fields lie inside the input,
 * records are never empty, line numbers only grow, the scan ends (0 or -1)
 * and stays ended, and an unquoted field holds no separator or quote.
 */
#include <assert.h>
#include <string.h>

#include "postgres.h"
#include "parse/csv.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define FUZZ_CSV_FIELDS 8

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char	   *s = palloc(size ? size : 1);
	CsvScan		scan;
	CsvField	fields[FUZZ_CSV_FIELDS];
	int			nfields;
	long		line,
				last = 0;
	int			rc;

	memcpy(s, data, size);
	csv_begin(&scan, s, size);
	while ((rc = csv_next(&scan, fields, FUZZ_CSV_FIELDS, &nfields, &line)) == 1)
	{
		assert(nfields >= 1 && nfields <= FUZZ_CSV_FIELDS);
		assert(line > last && line <= (long) size + 1);
		last = line;
		for (int i = 0; i < nfields; i++)
		{
			char	   *out = palloc(fields[i].len + 1);

			assert(fields[i].s >= s && fields[i].s + fields[i].len <= s + size);
			assert(csv_field_copy(&fields[i], out) <= fields[i].len);
			if (!fields[i].quoted)
			{
				assert(memchr(fields[i].s, ',', fields[i].len) == NULL);
				assert(memchr(fields[i].s, '"', fields[i].len) == NULL);
				assert(memchr(fields[i].s, '\n', fields[i].len) == NULL);
			}
		}
	}
	assert(rc == 0 || (rc == -1 && scan.error != NULL));
	assert(csv_next(&scan, fields, FUZZ_CSV_FIELDS, &nfields, &line) == rc);
	shim_reset();
	return 0;
}
