/*
 * webgres.h
 *		Settings and entry points shared across webgres' modules.
 */
#ifndef WEBGRES_H
#define WEBGRES_H

#include "postgres.h"

/* GUC variables (webgres.c) */
extern char *webgres_listen;
extern int	webgres_workers;
extern char *webgres_database;
extern int	webgres_handler_timeout;
extern int	webgres_max_body_size;
extern bool webgres_expose_errors;
extern int	webgres_request_timeout;
extern int	webgres_header_timeout;
extern int	webgres_body_timeout;
extern bool webgres_share_read_transactions;
extern bool webgres_http2;
extern int	webgres_http2_max_resets;
extern int	webgres_max_connections_per_worker;
extern int	webgres_executors;
extern int	webgres_inline_budget;
extern int	webgres_max_queue;
extern int	webgres_stream_timeout;
extern int	webgres_sse_heartbeat;
extern int	webgres_sse_buffer_limit;

/* Background worker entry points, looked up by name by the postmaster. */
extern PGDLLEXPORT void webgres_supervisor_main(Datum main_arg);
extern PGDLLEXPORT void webgres_worker_main(Datum main_arg);
extern PGDLLEXPORT void webgres_executor_main(Datum main_arg);

/* The product name, as it goes into the Server header and process titles. */
#define WEBGRES_SERVER_NAME "webgres"

#endif							/* WEBGRES_H */
