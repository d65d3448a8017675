/*
 * shmem.h
 *		webgres' pieces of shared memory, asked for and set up in one place.
 *
 * A module that keeps state in shared memory (stats, route_placement,
 * route_stats) names its piece once, at module load; core/shmem.c holds
 * the one pair of shmem_request_hook and shmem_startup_hook that reserves
 * every piece and finds or creates it in each process.
 */
#ifndef WEBGRES_SHMEM_H
#define WEBGRES_SHMEM_H

/* Sets up a piece the first time it is created; its memory is zeroed already. */
typedef void (*ShmemPieceInit) (void *mem);

/*
 * Asks for size bytes of shared memory called name: at start-up, and in every
 * process that attaches, *ptr is set to it; init (if not NULL) runs once, when
 * it is created.  At module load, while shared_preload_libraries is processed.
 */
extern void shmem_piece(const char *name, Size size, void **ptr, ShmemPieceInit init);

#endif
