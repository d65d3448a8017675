/*
 * errors.h
 *		Which HTTP status an SQL error becomes.
 */
#ifndef WEBGRES_ERRORS_H
#define WEBGRES_ERRORS_H

/*
 * The status for an error raised while serving a request.  A handler picks
 * the status of an error it raises on purpose with SQLSTATE 'WGnnn' (for
 * example RAISE EXCEPTION 'no such user' USING ERRCODE = 'WG404'); its
 * message is then the response body.  Everything else follows the table in
 * the README: client-input errors 400, conflicts 409, privileges 403,
 * timeouts 504, retryable conditions 503, the rest 500.
 */
extern int	http_status_for_sqlstate(int sqlerrcode, bool *chosen_by_handler);

/* The standard reason phrase for a status, or "Unknown". */
extern const char *http_reason(int status);

#endif
