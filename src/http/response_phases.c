/*
 * response_phases.c
 *		The lists of PHASE_FILTER and PHASE_LOG on the worker's paths,
 *		built from http/response_phase_list.h.
 *
 * libh2o runs a path's filters (pathconf->filters, as each response
 * starts) and loggers (pathconf->loggers, as each request is disposed of)
 * from two vectors, fixed in its own configuration once the context
 * exists.  Every module's filter and logger is created once, when its path
 * is attached; the vectors then hold only those whose module's settings
 * are on, written again after each reload.  A module that is off is not
 * called at all, and a setting that turns it on takes effect on reload,
 * as libh2o never copies the vectors: h2o_setup_next_ostream() and the
 * request's disposal read them as they are.  Its own filters and loggers
 * have no per-context state (on_context_init), so none is lost or left
 * behind when one leaves a list.
 */
#include "postgres.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/response_phases.h"
#include "serve/phase.h"

/* The path configurations attached: the worker's path and fallback, the metrics listeners'. */
#define RESPONSE_MAX_PATHS 4

/* Every module, declared from its line in http/response_phase_list.h. */
#define FILTER_MODULE(name) extern const FilterModule name##_filter;
#define LOG_MODULE(name) extern const LogModule name##_logger;
#include "http/response_phase_list.h"
#undef FILTER_MODULE
#undef LOG_MODULE

/* The filter modules, in the order of http/response_phase_list.h. */
static const FilterModule *const filter_modules[] = {
#define FILTER_MODULE(name) &name##_filter,
#define LOG_MODULE(name)
#include "http/response_phase_list.h"
#undef FILTER_MODULE
#undef LOG_MODULE
};

/* The log modules, in the same order. */
static const LogModule *const log_modules[] = {
#define FILTER_MODULE(name)
#define LOG_MODULE(name) &name##_logger,
#include "http/response_phase_list.h"
#undef FILTER_MODULE
#undef LOG_MODULE
};

/* How many modules each list has. */
#define NFILTERS ((int) lengthof(filter_modules))
#define NLOGGERS ((int) lengthof(log_modules))

/* The most filters, or loggers, one path holds: libh2o's own (chunked) and ours. */
#define RESPONSE_MAX_PER_PATH 16

/*
 * One attached path: its vectors as they were with every module's filter
 * and logger in them (libh2o's own included, in libh2o's order), and
 * which entries are a module's, and which module's (-1: libh2o's own).
 */
typedef struct AttachedPath
{
	h2o_pathconf_t *pathconf;
	int			nfilters;
	h2o_filter_t *filters[RESPONSE_MAX_PER_PATH];
	int			filter_module[RESPONSE_MAX_PER_PATH];
	int			nloggers;
	h2o_logger_t *loggers[RESPONSE_MAX_PER_PATH];
	int			logger_module[RESPONSE_MAX_PER_PATH];
} AttachedPath;

static AttachedPath paths[RESPONSE_MAX_PATHS];
static int	npaths = 0;

/* Whether a module with this enabled() test is on. */
static inline bool
is_on(bool (*enabled) (void))
{
	return enabled == NULL || enabled();
}

/*
 * Writes p's vectors: every entry of the full ones, in their order, but
 * those of modules that are off.  The vectors only shrink from the full
 * ones, so their room suffices.
 */
static void
build_path(AttachedPath *p)
{
	h2o_pathconf_t *pc = p->pathconf;

	pc->filters.size = 0;
	for (int i = 0; i < p->nfilters; i++)
		if (p->filter_module[i] < 0 || is_on(filter_modules[p->filter_module[i]]->enabled))
			pc->filters.entries[pc->filters.size++] = p->filters[i];
	pc->loggers.size = 0;
	for (int i = 0; i < p->nloggers; i++)
		if (p->logger_module[i] < 0 || is_on(log_modules[p->logger_module[i]]->enabled))
			pc->loggers.entries[pc->loggers.size++] = p->loggers[i];
}

/* Which of the n objects made for the modules entry is, or -1 (libh2o's own). */
static int
module_of(const void *entry, void *const *made, int n)
{
	for (int m = 0; m < n; m++)
		if (made[m] == entry)
			return m;
	return -1;
}

/* Creates the modules' filters and loggers on pathconf (response_phases.h). */
void
response_phases_attach(h2o_pathconf_t *pathconf, ResponsePath kind)
{
	AttachedPath *p;
	h2o_filter_t *filter[NFILTERS];
	h2o_logger_t *logger[NLOGGERS];

	if (npaths >= RESPONSE_MAX_PATHS)
		elog(ERROR, "too many paths for the response phases");
	p = &paths[npaths++];
	memset(p, 0, sizeof(*p));
	p->pathconf = pathconf;

	/*
	 * h2o_create_filter() puts a filter first in the vector, so that the
	 * last created runs first: created last to first, they run in the
	 * list's order, and before libh2o's own (its chunked encoder, which
	 * must see the body as compressed).
	 */
	for (int i = NFILTERS - 1; i >= 0; i--)
	{
		filter[i] = NULL;
		if (kind == RESPONSE_PATH_OTHER && !filter_modules[i]->every_path)
			continue;
		filter[i] = h2o_create_filter(pathconf, sizeof(h2o_filter_t));
		filter[i]->on_setup_ostream = filter_modules[i]->on_setup_ostream;
	}
	for (int i = 0; i < NLOGGERS; i++)
	{
		logger[i] = NULL;
		if (kind != RESPONSE_PATH_ROUTES)
			continue;
		logger[i] = h2o_create_logger(pathconf, sizeof(h2o_logger_t));
		logger[i]->log_access = log_modules[i]->log_access;
	}

	/* The full vectors, each entry with its module. */
	if (pathconf->filters.size > RESPONSE_MAX_PER_PATH ||
		pathconf->loggers.size > RESPONSE_MAX_PER_PATH)
		elog(ERROR, "too many filters or loggers on a path for the response phases");
	p->nfilters = (int) pathconf->filters.size;
	for (int i = 0; i < p->nfilters; i++)
	{
		p->filters[i] = pathconf->filters.entries[i];
		p->filter_module[i] = module_of(p->filters[i], (void *const *) filter, NFILTERS);
	}
	p->nloggers = (int) pathconf->loggers.size;
	for (int i = 0; i < p->nloggers; i++)
	{
		p->loggers[i] = pathconf->loggers.entries[i];
		p->logger_module[i] = module_of(p->loggers[i], (void *const *) logger, NLOGGERS);
	}
	build_path(p);
}

/* Rebuilds every attached path's lists (response_phases.h). */
void
response_phases_build(void)
{
	for (int i = 0; i < npaths; i++)
		build_path(&paths[i]);
}
