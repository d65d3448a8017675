/*
 * compress.h
 *		Response compression with libh2o's gzip compressor, and which
 *		responses it compresses (docs/compression.md).
 */
#ifndef WEBGRES_COMPRESS_H
#define WEBGRES_COMPRESS_H

#include <stdbool.h>

#include "routes/routes.h"

struct st_h2o_req_t;

/*
 * The filter itself is "compress_filter", a FilterModule of PHASE_FILTER
 * (http/response_phase_list.h): on the worker's path while webgres.compress
 * is on, so that no response pays for it while it is off.
 */

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
