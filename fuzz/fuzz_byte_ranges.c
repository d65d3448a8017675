/*
 * Fuzzes the Range reader (src/parse/byte_ranges.c).  The input is one byte
 * for the setting, seven for the file's size, then the field's value.
 * Whatever it is: no crash; a partial answer has between one and
 * max_ranges ranges, each inside the file, pairwise disjoint and apart by
 * more than the merge gap, adding up to no more than the file (so the
 * body can never be larger than the file plus a part header per range);
 * and a value read under a smaller setting reads the same under the
 * largest.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/byte_ranges.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Checks the invariants of a partial answer. */
static void
check_partial(const ByteRange *r, int n, int max_ranges, uint64_t size)
{
	uint64_t	total = 0;

	assert(n >= 1 && n <= max_ranges);
	for (int i = 0; i < n; i++)
	{
		assert(r[i].first <= r[i].last && r[i].last < size);
		total += r[i].last - r[i].first + 1;
		for (int j = 0; j < n; j++)
		{
			if (i == j || r[i].first > r[j].first)
				continue;
			/* r[j] starts after r[i] ends, with more than the gap between. */
			assert(r[j].first > r[i].last);
			assert(r[j].first - r[i].last > 1 + BYTE_RANGES_MERGE_GAP);
		}
	}
	assert(total <= size);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	int			max_ranges;
	uint64_t	size = 0;
	char	   *value;
	ByteRange  *small;
	ByteRange  *large;
	int			nsmall,
				nlarge;
	ByteRangesVerdict vsmall,
				vlarge;

	if (len < 8)
		return 0;
	max_ranges = data[0] == 0xff ? BYTE_RANGES_LIMIT : data[0] % 64 + 1;
	for (int i = 1; i < 8; i++)
		size = (size << 8) | data[i];
	data += 8;
	len -= 8;

	/* Exact-size copies, so that ASan sees any read or write past the end. */
	value = malloc(len ? len : 1);
	memcpy(value, data, len);
	small = malloc(sizeof(ByteRange) * max_ranges);
	large = malloc(sizeof(ByteRange) * BYTE_RANGES_LIMIT);

	vsmall = byte_ranges_plan(value, len, size, max_ranges, small, &nsmall);
	if (vsmall == BYTE_RANGES_PARTIAL)
		check_partial(small, nsmall, max_ranges, size);
	else
		assert(nsmall == 0);

	vlarge = byte_ranges_plan(value, len, size, BYTE_RANGES_LIMIT, large, &nlarge);
	if (vlarge == BYTE_RANGES_PARTIAL)
		check_partial(large, nlarge, BYTE_RANGES_LIMIT, size);
	if (vsmall != BYTE_RANGES_WHOLE)
	{
		assert(vlarge == vsmall && nlarge == nsmall);
		assert(memcmp(large, small, sizeof(ByteRange) * nsmall) == 0);
	}

	free(value);
	free(small);
	free(large);
	return 0;
}
