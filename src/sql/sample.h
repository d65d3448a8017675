/*
 * sample.h
 *		Random sampling without replacement.
 */
#ifndef WEBGRES_SAMPLE_H
#define WEBGRES_SAMPLE_H

/*
 * Fills out[0 .. count-1] with count distinct integers drawn uniformly at
 * random from [min, max], in uniformly random order, from Postgres' global
 * PRNG (pg_global_prng_state: seeded per process, not by setseed()).
 * The caller checks 0 <= count <= max - min + 1.  Time O(count), extra
 * memory O(count).
 */
extern void sample_distinct_int32(int32 *out, int count, int32 min, int32 max);
extern int32 sample_int32(int32 min, int32 max);

#endif
