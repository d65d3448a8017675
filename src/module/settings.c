/*
 * settings.c
 *		Defines every webgres setting (GUC): the core's here (the process
 *		pools, the database, the server's body limit), each module's by its
 *		NAME_define_settings(), beside the code that reads it, listed in
 *		settings_list.h.
 */
#include "postgres.h"

#include <unistd.h>

#include "utils/guc.h"

#include "core/settings.h"
#include "exec/handoff_frame.h"
#include "module/settings_define.h"

/* The modules that define their own settings, declared from settings_list.h. */
#define SETTINGS_MODULE(name) extern void name##_define_settings(void);
#include "module/settings_list.h"
#undef SETTINGS_MODULE

/*
 * The settings' variables.  Each default is written once, as the boot value
 * in define_settings(), which _PG_init() calls before anything reads them.
 */
int			webgres_workers;
char	   *webgres_database;
int			webgres_max_body_size;
int			webgres_executors;

/* webgres.workers' default is one per CPU, up to this many. */
#define DEFAULT_WORKERS_MAX 64
/* webgres.executors' default. */
#define DEFAULT_EXECUTORS 2
/* webgres.max_body_size's default, in bytes. */
#define DEFAULT_MAX_BODY_SIZE (1024 * 1024)

/* The number of CPUs online, between 1 and DEFAULT_WORKERS_MAX. */
static int
online_cpus(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1) ? 1 : (n > DEFAULT_WORKERS_MAX ? DEFAULT_WORKERS_MAX : (int) n);
}

/* Defines every webgres setting; from _PG_init. */
void
define_settings(void)
{
	DefineCustomIntVariable("webgres.workers",
							"Number of HTTP worker processes.",
							"Each worker is a database backend with its own event loop "
							"and its own SO_REUSEPORT listening sockets. 0 stops serving. "
							"Changes take effect on reload. The default is the number of "
							"online CPUs.",
							&webgres_workers,
							online_cpus(),
							0, WEBGRES_MAX_PROCESSES,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.database",
							   "Database whose routes the HTTP workers serve.",
							   "The webgres extension must be created in this database.",
							   &webgres_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.max_body_size",
							"Largest request body accepted.",
							"A request with a larger body is answered 413 without "
							"running any handler.  At most what one hand-off frame "
							"carries (1 GB less 16 MB), the largest body a handler "
							"could be given.",
							&webgres_max_body_size,
							DEFAULT_MAX_BODY_SIZE,
							0, FRAME_MAX_REQUEST_BODY,
							PGC_SIGHUP,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("webgres.executors",
							"Number of executor processes that run handlers off the event loop.",
							"Executors are database backends that run the requests the HTTP "
							"workers hand to them: requests of routes in mode executor or "
							"stream, and "
							"of routes in mode auto once a run took longer than "
							"webgres.inline_budget. 0 runs every handler on the event loop. "
							"Changes take effect on reload.",
							&webgres_executors,
							DEFAULT_EXECUTORS,
							0, WEBGRES_MAX_PROCESSES,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	/* The modules that define their own settings, one line each. */
#define SETTINGS_MODULE(name) name##_define_settings();
#include "module/settings_list.h"
#undef SETTINGS_MODULE

	MarkGUCPrefixReserved("webgres");
}
