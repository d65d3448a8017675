/*
 * response_phases.h
 *		PHASE_FILTER and PHASE_LOG on the worker's paths: libh2o's filters
 *		and loggers of the modules in http/response_phase_list.h, only
 *		those whose settings are on (serve/phase.h).
 */
#ifndef WEBGRES_RESPONSE_PHASES_H
#define WEBGRES_RESPONSE_PHASES_H

struct st_h2o_pathconf_t;

/* Which modules a path configuration gets. */
typedef enum ResponsePath
{
	RESPONSE_PATH_ROUTES,		/* the path that serves routes: every module */
	RESPONSE_PATH_OTHER			/* libh2o's own answers, the metrics
								 * listeners: the FilterModules marked
								 * every_path, no logger */
} ResponsePath;

/*
 * Creates the filters and loggers of the modules for pathconf, and puts
 * those whose settings are on in its lists; once per path configuration,
 * before its context is initialised.
 */
extern void response_phases_attach(struct st_h2o_pathconf_t *pathconf, ResponsePath kind);

/*
 * Rebuilds every attached path's lists from the modules' settings; after
 * a reload, between requests (no response is setting up its filters then).
 */
extern void response_phases_build(void);

#endif
