/*
 * response.h
 *		Shapes an HTTP response from a handler's result row.
 */
#ifndef WEBGRES_RESPONSE_H
#define WEBGRES_RESPONSE_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/jsonb.h"

struct st_h2o_req_t;

/*
 * The statuses a handler's response may have: final ones, 2xx to 5xx.  A
 * 1xx is an interim response (RFC 9110 15.2) that a final one must follow;
 * h2o would send it as if it were final, and the client would wait on.
 */
#define HTTP_STATUS_MIN 200
#define HTTP_STATUS_MAX 599

/*
 * Sets status, headers and content length of req->res from the columns
 * status, content_type, headers and body, copying everything into the
 * request's pool.  The body is returned in *body / *bodylen.  A row that
 * would make an unsafe or invalid response raises an error (SQLSTATE 38000,
 * answered 500) naming what is wrong.
 */
extern void response_from_row(struct st_h2o_req_t *req, TupleDesc desc, HeapTuple tuple,
							  char **body, size_t *bodylen);

/*
 * Adds each key of a JSON object as a response header (an array value: one
 * header per element), with the checks response_from_row() applies.
 */
extern void response_add_headers(struct st_h2o_req_t *req, Jsonb *headers);

/* Checks a handler's result columns when the route is saved. */
extern void response_check_columns(TupleDesc desc);

/*
 * A response kept in worker memory, for handlers whose plan folds to one
 * constant row: built from the first request's response, replayed (copied
 * into each request's pool) for the next ones.
 */
typedef struct CachedResponse CachedResponse;

extern CachedResponse *response_capture(struct st_h2o_req_t *req, const char *body,
										size_t bodylen, MemoryContext cxt);
extern void response_replay(struct st_h2o_req_t *req, const CachedResponse *cached,
							char **body, size_t *bodylen);

/* A plain-text response with the given status. */
extern void response_simple(struct st_h2o_req_t *req, int status, const char *message,
							char **body, size_t *bodylen);

#endif
