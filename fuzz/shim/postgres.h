/*
 * A stand-in for postgres.h, for fuzzing pattern.c outside a backend:
 * palloc and friends allocate from an arena that each fuzz iteration frees.
 */
#ifndef FUZZ_SHIM_POSTGRES_H
#define FUZZ_SHIM_POSTGRES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Min(a, b) ((a) < (b) ? (a) : (b))
#define Max(a, b) ((a) > (b) ? (a) : (b))
#define UINT64CONST(x) (x##ULL)

extern void *palloc(size_t size);
extern void *repalloc(void *p, size_t size);
extern char *pnstrdup(const char *s, size_t len);
extern char *psprintf(const char *fmt, ...);
extern void shim_reset(void);

#endif
