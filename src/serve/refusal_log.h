/*
 * refusal_log.h
 *		Logging refused requests (tokens, CSRF checks, roles) without
 *		letting a client flood the server log.
 *
 * Each refusal is worth a line at LOG: it says why a client got 401 or
 * 403, which the client itself is not told.  But a client can send them as
 * fast as it likes.  So each process logs at most REFUSAL_LOG_BURST of them
 * per REFUSAL_LOG_PERIOD_S seconds and counts the rest; once a period with
 * refusals left out is over, one line says how many there were and the
 * last one's reason.
 */
#ifndef WEBGRES_REFUSAL_LOG_H
#define WEBGRES_REFUSAL_LOG_H

/* Refusals logged in full per period, per process. */
#define REFUSAL_LOG_BURST 64
/* The period, in seconds. */
#define REFUSAL_LOG_PERIOD_S 10

/*
 * True if a refusal may be logged now; otherwise it is counted, with
 * reason (copied) as the last one left out, and the caller logs nothing.
 */
extern bool refusal_log_allowed(const char *reason);

/*
 * Writes the summary of the refusals left out, once their period is over;
 * cheap when there is none.  Called before the process waits.
 */
extern void refusal_log_flush(void);

#endif							/* WEBGRES_REFUSAL_LOG_H */
