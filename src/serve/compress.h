/*
 * compress.h
 *		Response compression with libh2o's gzip compressor, and which
 *		responses it compresses (docs/compression.md).
 */
#ifndef WEBGRES_COMPRESS_H
#define WEBGRES_COMPRESS_H

#include <stdbool.h>

#include "routes/routes.h"

struct st_h2o_pathconf_t;
struct st_h2o_req_t;

/*
 * Registers the compression filter on pathconf; once per worker, before
 * the context is initialised.  Whether anything is compressed is read per
 * response from webgres.compress, so the setting is reloadable.
 */
extern void compress_register(struct st_h2o_pathconf_t *pathconf);

/*
 * Records whether the route about to answer req lets its response be
 * compressed: by its compress column, and for a column left NULL only if
 * req carries no credentials (an Authorization or Cookie header), against
 * BREACH.  Called before each route's handler runs, as the next route
 * answers if one returns no row; the mark survives the hand-off to an
 * executor (handoff_frame.c carries it back).
 */
extern void compress_for_route(struct st_h2o_req_t *req, RouteCompress mode);

/* Whether a Content-Type value names a type worth compressing. */
extern bool compress_type_is_compressible(const char *type, size_t len);

/* Defines webgres.compress and webgres.compress_min_size; from _PG_init. */
extern void compress_define_settings(void);

#endif
