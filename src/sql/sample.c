/*
 * sample.c
 *		Random sampling without replacement: count distinct integers from a
 *		range, for handlers that need several distinct random keys at once.
 *
 * A Fisher-Yates shuffle of the whole range [min, max], stopped after count
 * steps, leaves a uniformly random ordered sample in its first count slots.
 * When the range is small next to count it is shuffled as a real array.
 * Otherwise (up to 2^32 values for a few) the array is virtual: a hash map
 * holds only the slots a swap has changed, every other slot k holding k.
 * Each step draws once from the PRNG and touches at most two slots, so both
 * ways take O(count) time; the map holds at most count entries.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "common/pg_prng.h"

#include "sql/sample.h"

/* A slot of the virtual array whose value is no longer its own offset. */
typedef struct MovedSlot
{
	uint32		offset;
	uint32		value;
	char		status;			/* for simplehash */
} MovedSlot;

#define SH_PREFIX moved
#define SH_ELEMENT_TYPE MovedSlot
#define SH_KEY_TYPE uint32
#define SH_KEY offset
#define SH_HASH_KEY(tb, key) murmurhash32(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Uniform in [lo, hi]: pg_prng_uint64_range rejects rather than folds, so no bias. */
static inline uint32
draw(uint32 lo, uint32 hi)
{
	return (uint32) pg_prng_uint64_range(&pg_global_prng_state, lo, hi);
}

/*
 * An array pays for itself when the range is at most this many times count:
 * filling it is far cheaper per slot than a hash map entry, and its memory
 * stays within a small multiple of the result's.
 */
#define DENSE_FACTOR 4

/* One random integer from [min, max] (min <= max), every value equally likely. */
int32
sample_int32(int32 min, int32 max)
{
	return (int32) ((int64) min + (int64) draw(0, (uint32) ((int64) max - (int64) min)));
}

/* Fills out with count distinct random integers from [min, max], in random order. */
void
sample_distinct_int32(int32 *out, int count, int32 min, int32 max)
{
	/* Values are handled as offsets from min: range can be 2^32. */
	uint64		range = (uint64) ((int64) max - (int64) min + 1);
	uint32		last = (uint32) (range - 1);

	Assert(count >= 0 && (uint64) count <= range);
	if (count == 0)
		return;

	if (range <= (uint64) count * DENSE_FACTOR)
	{
		uint32	   *slots = palloc_extended(range * sizeof(uint32), MCXT_ALLOC_HUGE);

		for (uint64 k = 0; k < range; k++)
			slots[k] = (uint32) k;
		for (uint32 i = 0; i < (uint32) count; i++)
		{
			uint32		j = draw(i, last);
			uint32		picked = slots[j];

			slots[j] = slots[i];
			out[i] = (int32) ((int64) min + picked);
		}
		pfree(slots);
	}
	else
	{
		moved_hash *moved = moved_create(CurrentMemoryContext, count, NULL);

		for (uint32 i = 0; i < (uint32) count; i++)
		{
			uint32		j = draw(i, last);
			MovedSlot  *at_i = moved_lookup(moved, i);
			uint32		value_i = at_i ? at_i->value : i;
			MovedSlot  *at_j;
			bool		found;

			/* Inserting may move entries: at_i is not used past here. */
			at_j = moved_insert(moved, j, &found);
			if (!found)
				at_j->value = j;
			out[i] = (int32) ((int64) min + at_j->value);
			at_j->value = value_i;
		}
		moved_destroy(moved);
	}
}
