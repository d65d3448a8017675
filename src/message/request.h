/*
 * request.h
 *		The HTTP request as the values of a handler's `request` relation.
 *
 * The columns reach the executor as bind parameters fetched lazily:
 * a value is built (and checked) only when a plan evaluates it, so a handler
 * that never reads headers never pays for turning them into jsonb, and bad
 * input in a field the handler ignores does not fail the request.
 */
#ifndef WEBGRES_REQUEST_H
#define WEBGRES_REQUEST_H

#include "nodes/params.h"
#include "utils/jsonb.h"

#include "parse/pattern.h"

struct st_h2o_req_t;

/* Parameter numbers of the request columns. */
#define REQ_METHOD			1
#define REQ_PATH			2
#define REQ_PARAMS			3
#define REQ_QUERY_STRING	4
#define REQ_QUERY			5
#define REQ_HEADERS			6
#define REQ_BODY			7
#define REQ_TLS				8
#define REQ_CLAIMS			9
#define REQ_NPARAMS			9

/* The type of each parameter, by number less one. */
extern const Oid request_param_types[REQ_NPARAMS];

/* Most settings a request sets for its handler (request_add_setting). */
#define REQ_MAX_SETTINGS	8

typedef struct RequestData
{
	struct st_h2o_req_t *req;
	MemoryContext cxt;			/* where fetched values live */
	const char *path;			/* without the query string */
	size_t		pathlen;
	PathCapture *caps;			/* the current route's captures */
	int			ncaps;
	ParamListInfo params;
	uint32		fetched;		/* bit n set: parameter n is built */
	bool		wrote;			/* a handler that may write has run */
	Oid			run_as;			/* the role the handler runs as; invalid: the owner */
	Oid			authenticator;	/* the route owner that chose run_as (auth.c); invalid: none */
	const char *claims;			/* a verified token's claims (JSON), or NULL */
	int64		expires_at;		/* when the token expires (seconds since 1970); 0: never */
	uint64		secret_generation;	/* of the HS secret that signed the token
									 * (auth.c); 0: no HS-signed token */
	uint64		keys_generation;	/* of the keys file that verified the
									 * token (auth.c); 0: none did */
	struct WsOpen *upgrade;		/* a WebSocket's upgrade (events/ws_socket.h); NULL: none */
	int			nsettings;		/* settings its handlers run with */
	const char *setting_names[REQ_MAX_SETTINGS];
	const char *setting_values[REQ_MAX_SETTINGS];
} RequestData;

/* Sets up rd for req; allocations go to cxt, which must outlive the request. */
extern void request_init(RequestData *rd, struct st_h2o_req_t *req, MemoryContext cxt);

/* Sets the role the next handler runs as and its claims (NULL: none). */
extern void request_set_identity(RequestData *rd, Oid run_as, const char *claims);

/*
 * Adds a setting (such as request.jwt.claims) that the request's handlers
 * run with.  Not copied: name and value must last as long as the request
 * (a literal, or the request's memory); request_apply_settings()
 * puts them in effect, in each transaction that runs a handler of the
 * request, until request_clear_settings().
 */
extern void request_add_setting(RequestData *rd, const char *name, const char *value);
extern void request_apply_settings(const RequestData *rd);

/* Takes them away after the request's last transaction (request.c). */
extern void request_clear_settings(const RequestData *rd);

/*
 * The request relation's headers column (names in lower case, repeated
 * fields joined), built once; raises 22021 for a header that is not text.
 */
extern Jsonb *request_headers(RequestData *rd);

/*
 * Makes the body column of req, while it is served, the bytea body that
 * holds req->entity's bytes (the executor's frame, exec/handoff_frame.h)
 * instead of a copy made when a handler reads it; (NULL, NULL) when req is
 * done.  One request at a time: the last call wins.
 */
extern void request_use_body_datum(const struct st_h2o_req_t *req, bytea *body);

/* Makes params reflect the captures of the route about to run. */
extern void request_set_captures(RequestData *rd, PathCapture *caps, int ncaps);

#endif
