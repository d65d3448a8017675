/*
 * settings.h
 *		webgres' core settings, read on several floors of the code; defined
 *		once in module/settings.c.
 */
#ifndef WEBGRES_SETTINGS_H
#define WEBGRES_SETTINGS_H

#include "postgres.h"

/*
 * The core's GUC variables (module/settings.c): the process pools and the
 * database they serve, read by the supervisor (module/) and by the floors
 * below it down to routes/, and the server's body limit, read by the
 * worker (http/) and bounded by the hand-off frame (exec/).  Every other
 * setting is defined beside the module that reads it, by its
 * NAME_define_settings() (module/settings_list.h), and declared, where
 * another module reads it too, in that module's header.
 */
extern int	webgres_workers;
extern char *webgres_database;
extern int	webgres_max_body_size;
extern int	webgres_executors;

/*
 * The most HTTP workers, and the most executors, webgres runs: the upper
 * bound of webgres.workers and webgres.executors, and the size of the
 * tables kept per process (the supervisor's, the shared counters').
 */
#define WEBGRES_MAX_PROCESSES 256

/* The product name, as it goes into the Server header and process titles. */
#define WEBGRES_SERVER_NAME "webgres"

#endif							/* WEBGRES_SETTINGS_H */
