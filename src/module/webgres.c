/*
 * webgres.c
 *		Module load: settings, shared memory requests, and the supervisor
 *		that runs the HTTP workers.
 *
 * Everything that serves HTTP runs in background workers started by the
 * supervisor registered here, so the library must be in
 * shared_preload_libraries.  Loaded any other way (CREATE EXTENSION alone),
 * the settings and SQL functions work but nothing listens.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"

#include "exec/exec_socket.h"
#include "routes/ownership.h"
#include "routes/route_placement.h"
#include "routes/route_stats.h"
#include "events/notify_sign.h"
#include "http/tls_tickets.h"
#include "serve/pipeline_phases.h"
#include "core/stats.h"
#include "module/settings_define.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Registers the supervisor, which starts the workers and executors. */
static void
register_supervisor(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	/* Serve on hot standbys too: handlers there run read-only. */
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "webgres");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "webgres_supervisor_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "webgres supervisor");
	snprintf(worker.bgw_type, BGW_MAXLEN, "webgres supervisor");
	RegisterBackgroundWorker(&worker);
}

/* Module load: settings, shared memory, and the supervisor when preloaded. */
void
_PG_init(void)
{
	define_settings();
	ownership_init();
	pipeline_modules_register();

	if (process_shared_preload_libraries_in_progress)
	{
		stats_shmem_request();
		route_placement_shmem_request();
		route_stats_shmem_request();
		notify_sign_shmem_request();
		tls_tickets_shmem_request();
		pipeline_modules_shmem_request();
		exec_socket_create();
		register_supervisor();
	}
}
