/*
 * access_log.h
 *		The access log and the slow-request log: a line per request when it
 *		ends, written by an h2o logger.
 *
 * Each is off unless its setting is set.  While either is on, the code
 * that routes and answers a request fills in the request's note (which
 * route answered, where it ran and when each step ended); the logger reads
 * it when h2o disposes of the request, after the last byte of the response
 * (of a stream too) was sent or the client went away.
 */
#ifndef WEBGRES_ACCESS_LOG_H
#define WEBGRES_ACCESS_LOG_H

#include "datatype/timestamp.h"

struct st_h2o_req_t;

/* Where a request's handler ran. */
typedef enum AccessPlace
{
	ACCESS_PLACE_NONE,			/* no handler ran (no route, refused) */
	ACCESS_PLACE_LOOP,			/* on the worker's event loop */
	ACCESS_PLACE_EXECUTOR		/* handed to an executor */
} AccessPlace;

/* What the access and slow-request logs know of a request beyond h2o's. */
typedef struct AccessNote
{
	int64		route_id;		/* the route that answered; 0: none */
	AccessPlace place;
	TimestampTz started;		/* the pipeline began routing it */
	TimestampTz handed_off;		/* it left the loop for an executor's queue */
	TimestampTz admitted;		/* it was sent to an executor */
	TimestampTz answered;		/* its response (or a stream's head) was ready */
	int64		plan_us;		/* of its handler time, spent planning */
	const char *role;			/* the role authentication chose, in the
								 * request's pool; NULL: none */
} AccessNote;

/*
 * The request's note, zeroed when first asked for; NULL when neither log
 * is on (then nothing need be noted).
 */
extern AccessNote *access_log_note(struct st_h2o_req_t *req);

/*
 * At start and after SIGHUP: takes the settings, reopens the log file.
 * The logger itself is "access_log_logger", a LogModule of PHASE_LOG
 * (http/response_phase_list.h), on the worker's path while either log is
 * on: call this before the lists are built again.
 */
extern void access_log_configure(void);

/* Writes the lines buffered in this pass of the event loop. */
extern void access_log_flush(void);

/* Defines webgres.access_log and its companions; from _PG_init. */
extern void access_log_define_settings(void);

#endif
