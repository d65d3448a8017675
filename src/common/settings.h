/*
 * settings.h
 *		webgres' core settings, read by every floor of the code; defined once
 *		in module/settings.c.
 */
#ifndef WEBGRES_SETTINGS_H
#define WEBGRES_SETTINGS_H

#include "postgres.h"

/*
 * The core's GUC variables (module/settings.c).  A module with settings of
 * its own defines them beside its code (module/settings_list.h).
 */
extern int	webgres_workers;
extern char *webgres_database;
extern int	webgres_handler_timeout;
extern int	webgres_max_body_size;
extern bool webgres_expose_errors;
extern bool webgres_share_read_transactions;
extern int	webgres_executors;
extern int	webgres_inline_budget;
extern int	webgres_max_queue;
extern int	webgres_stream_timeout;
extern int	webgres_sse_heartbeat;
extern int	webgres_sse_buffer_limit;
extern int	webgres_events_read_limit;

extern char *webgres_primary_url;
extern bool webgres_track_route_stats;
extern bool webgres_compress;
extern int	webgres_compress_min_size;


/*
 * The most HTTP workers, and the most executors, webgres runs: the upper
 * bound of webgres.workers and webgres.executors, and the size of the
 * tables kept per process (the supervisor's, the shared counters').
 */
#define WEBGRES_MAX_PROCESSES 256

/* The product name, as it goes into the Server header and process titles. */
#define WEBGRES_SERVER_NAME "webgres"

#endif							/* WEBGRES_SETTINGS_H */
