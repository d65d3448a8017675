/*
 * rate_buckets.c
 *		Token buckets in shared memory, one per key (rate_buckets.h).
 *
 * A set-associative table: the key's hash picks a set of
 * RATE_BUCKETS_WAYS slots, and one spinlock guards the set for the few
 * instructions a take needs (compare keys, a multiplication, a store).
 * Sets are independent, so workers contend only when their clients' keys
 * fall in the same set at the same instant.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "core/rate_buckets.h"
#include "core/shmem.h"

/* One bucket. */
typedef struct RateSlot
{
	RateKey		key;			/* scope 0: empty */
	int64		excess;			/* thousandths of a request over the rate,
								 * beyond the first */
	TimestampTz last;			/* when it was last taken from */
	TimestampTz used;			/* when a request last looked at it */
} RateSlot;

/* A set of slots with its lock. */
typedef struct RateSet
{
	slock_t		mutex;
	RateSlot	slots[RATE_BUCKETS_WAYS];
} RateSet;

typedef struct RateTable
{
	uint32		nsets;
	RateSet		sets[FLEXIBLE_ARRAY_MEMBER];
} RateTable;

static RateTable *table = NULL;
static uint32 wanted_sets = 0;

/* The table's size in bytes, for nsets sets. */
static Size
table_size(uint32 nsets)
{
	return add_size(offsetof(RateTable, sets), mul_size(nsets, sizeof(RateSet)));
}

/* Sets up the table when its shared memory is created (zeroed: every slot empty). */
static void
buckets_init(void *mem)
{
	RateTable  *t = (RateTable *) mem;

	t->nsets = wanted_sets;
	for (uint32 i = 0; i < t->nsets; i++)
		SpinLockInit(&t->sets[i].mutex);
}

/* Asks for the table's shared memory; at module load. */
void
rate_buckets_shmem_request(int slots)
{
	wanted_sets = (uint32) Max(1, (slots + RATE_BUCKETS_WAYS - 1) / RATE_BUCKETS_WAYS);
	shmem_piece("webgres rate buckets", table_size(wanted_sets), (void **) &table,
				buckets_init);
}

/* True if two keys are the same. */
static inline bool
same_key(const RateKey *a, const RateKey *b)
{
	return a->scope == b->scope && a->key[0] == b->key[0] && a->key[1] == b->key[1];
}

/*
 * The excess a bucket would have at now with this request counted: what it
 * had, less what the rate drained since, plus one request, never below 0.
 */
static inline int64
excess_at(const RateSlot *s, int64 rate_milli, TimestampTz now)
{
	int64		elapsed_ms = (now - s->last) / 1000;
	int64		excess;

	if (elapsed_ms < 0)
		elapsed_ms = 0;
	/* No overflow: elapsed time this large has drained any bucket. */
	if (elapsed_ms > PG_INT64_MAX / 4 / Max(rate_milli, 1))
		return 0;
	excess = s->excess - rate_milli * elapsed_ms / 1000 + 1000;
	return Max(excess, 0);
}

/*
 * The slot for key in set, claimed if it has none: an empty slot, else the
 * one used longest ago (refused requests count as use, so a client over
 * its limit does not make its own bucket the first to go).  Called with
 * the set's lock held.
 */
static RateSlot *
slot_for(RateSet *set, const RateKey *key, TimestampTz now)
{
	RateSlot   *victim = &set->slots[0];

	for (int i = 0; i < RATE_BUCKETS_WAYS; i++)
	{
		RateSlot   *s = &set->slots[i];

		if (same_key(&s->key, key))
			return s;
		if (victim->key.scope != 0 && (s->key.scope == 0 || s->used < victim->used))
			victim = s;
	}
	victim->key = *key;
	/* A new bucket's first request leaves it at 0, as nginx's does. */
	victim->excess = -1000;
	victim->last = now;
	return victim;
}

/* Takes one request from key's bucket, nginx limit_req's way. */
RateTake
rate_buckets_take(const RateKey *key, int64 rate_milli, int64 burst, TimestampTz now)
{
	RateTake	take = {true, burst, 0};
	RateSet    *set;
	RateSlot   *s;
	int64		excess;

	if (table == NULL || rate_milli <= 0)
		return take;
	set = &table->sets[hash_bytes((const unsigned char *) key, sizeof(RateKey)) % table->nsets];

	SpinLockAcquire(&set->mutex);
	s = slot_for(set, key, now);
	s->used = now;
	excess = excess_at(s, rate_milli, now);
	if (excess > burst * 1000)
	{
		take.allowed = false;
		take.remaining = 0;
		/* Until the excess has drained to what the burst allows. */
		take.wait_ms = ((excess - burst * 1000) * 1000 + rate_milli - 1) / rate_milli;
	}
	else
	{
		s->excess = excess;
		s->last = now;
		take.remaining = (burst * 1000 - excess) / 1000;
	}
	SpinLockRelease(&set->mutex);
	return take;
}
