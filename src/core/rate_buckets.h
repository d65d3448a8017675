/*
 * rate_buckets.h
 *		Token buckets in shared memory, one per key, for rate limits.
 *
 * Every worker takes from one table, so a client whose connections
 * SO_REUSEPORT spreads over several workers still has one budget.  The
 * table is a fixed number of slots, asked for at start-up
 * (webgres.rate_limit_slots), in sets of RATE_BUCKETS_WAYS slots with a
 * spinlock each: a key's hash picks its set, and the key lives in one slot
 * of it.  A key that finds no slot takes an empty one, else the one of its
 * set used longest ago: so memory is bounded, and a key evicted while its
 * bucket was not yet full gets a full one again (the limit errs on the
 * client's side, and only when more keys are busy at once than the table
 * has slots).
 *
 * A bucket keeps nginx limit_req's state: the excess, in thousandths of a
 * request, over what the rate allows since it was last taken from, and
 * when that was.  Nothing is written to disk: a restart forgets every
 * bucket.
 */
#ifndef WEBGRES_RATE_BUCKETS_H
#define WEBGRES_RATE_BUCKETS_H

#include "datatype/timestamp.h"

/* Slots of one set; a key is looked for in its set only. */
#define RATE_BUCKETS_WAYS 8

/* What a bucket is for: a limit's scope and the client's key in it. */
typedef struct RateKey
{
	uint64		scope;			/* which limit (its route and key kind) */
	uint64		key[2];			/* the client: an address, or a hash */
} RateKey;

/* What taking from a bucket found. */
typedef struct RateTake
{
	bool		allowed;
	int64		remaining;		/* requests still allowed now (allowed) */
	int64		wait_ms;		/* until one more is allowed (refused) */
} RateTake;

/* Module load: asks for slots (rounded up to whole sets) of shared memory. */
extern void rate_buckets_shmem_request(int slots);

/*
 * Takes one request from key's bucket at now, for a limit of rate_milli
 * thousandths of a request a second with burst requests over it; the
 * bucket is charged only when the request is allowed.  With no table
 * (webgres not preloaded) every request is allowed.
 */
extern RateTake rate_buckets_take(const RateKey *key, int64 rate_milli, int64 burst,
								  TimestampTz now);

#endif
