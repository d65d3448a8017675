/*
 * static_files.h
 *		Serving a static mount's files with libh2o's file handler
 *		(docs/static-files.md).
 */
#ifndef WEBGRES_STATIC_FILES_H
#define WEBGRES_STATIC_FILES_H

#include <stdbool.h>
#include <stddef.h>

struct st_h2o_req_t;
struct st_h2o_globalconf_t;
struct st_h2o_context_t;
struct Mount;

/* Keeps the worker's h2o configuration and context; once, after both exist. */
extern void static_files_init(struct st_h2o_globalconf_t *config, struct st_h2o_context_t *ctx);

/*
 * Answers req from mount m, whose prefix its path is under and which no
 * route matches (pipeline.c decided that).  Returns true when libh2o's file
 * handler has started the response; false when the answer (400, 404, 405)
 * is in req->res and *body, for the caller to send.
 */
extern bool static_files_serve(struct st_h2o_req_t *req, const struct Mount *m,
							   char **body, size_t *bodylen);

/* Defines webgres.static_max_ranges; from _PG_init. */
extern void static_files_define_settings(void);

#endif
