/*
 * khash.h
 *		Type-only stand-in for klib's khash.h.
 *
 * Debian's libh2o headers include khash.h from <h2o/http2_internal.h> but
 * do not ship it.  webgres reads the HTTP/2 connection and stream structs
 * declared there and never touches their stream table, which is only a
 * pointer in them: an incomplete type is enough.  The lookup the header
 * defines inline is declared here and defined nowhere, so any use of it
 * fails to link rather than misread h2o's table.
 */
#ifndef WEBGRES_KHASH_STANDIN_H
#define WEBGRES_KHASH_STANDIN_H

#include <stdint.h>

typedef uint32_t khint_t;
typedef khint_t khiter_t;

#define khash_t(name) kh_##name##_t

#define KHASH_MAP_INIT_INT64(name, khval_t) \
	typedef struct kh_##name##_s kh_##name##_t;

#define kh_get(name, h, k) khash_standin_get(h, k)
#define kh_end(h) khash_standin_end(h)
#define kh_val(h, x) khash_standin_val(h, x)

extern khint_t khash_standin_get(const void *h, uint64_t key);
extern khint_t khash_standin_end(const void *h);
extern void *khash_standin_val(const void *h, khint_t i);

#endif
