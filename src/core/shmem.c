/*
 * shmem.c
 *		webgres' pieces of shared memory (shmem.h).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "core/shmem.h"

/* The most pieces webgres asks for: one per module that keeps shared state. */
#define SHMEM_MAX_PIECES 8

/* A piece asked for with shmem_piece(). */
typedef struct ShmemPiece
{
	const char *name;
	Size		size;
	void	  **ptr;
	ShmemPieceInit init;
} ShmemPiece;

static ShmemPiece pieces[SHMEM_MAX_PIECES];
static int	npieces = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* shmem_request_hook: reserves every piece. */
static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < npieces; i++)
		RequestAddinShmemSpace(pieces[i].size);
}

/* shmem_startup_hook: finds every piece, or creates and sets it up. */
static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (int i = 0; i < npieces; i++)
	{
		ShmemPiece *p = &pieces[i];
		bool		found;

		*p->ptr = ShmemInitStruct(p->name, p->size, &found);
		if (!found)
		{
			memset(*p->ptr, 0, p->size);
			if (p->init != NULL)
				p->init(*p->ptr);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Asks for a piece of shared memory; the hooks go in with the first. */
void
shmem_piece(const char *name, Size size, void **ptr, ShmemPieceInit init)
{
	if (npieces >= SHMEM_MAX_PIECES)
		elog(ERROR, "too many pieces of webgres shared memory");
	if (npieces == 0)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = shmem_startup;
	}
	pieces[npieces].name = name;
	pieces[npieces].size = size;
	pieces[npieces].ptr = ptr;
	pieces[npieces].init = init;
	npieces++;
}
