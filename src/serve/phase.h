/*
 * phase.h
 *		The request's phases: one ordered list, and what a module
 *		registered into a phase may read and write.
 *
 * Every request lives through these phases, in this order, and leaves by
 * one exit (http/respond.h).  A phase is either a fixed step of its
 * conductor (route match, admission, content: the worker's on_req() and
 * serve/pipeline.c) or a list of modules, each registered by one line in
 * its floor's list (http/worker_phase_list.h for the phases before the
 * route, which need the connection; serve/phase_list.h for those after it,
 * which also run on executors; http/response_phase_list.h for libh2o's
 * filters and loggers on the worker's paths, PHASE_FILTER and PHASE_LOG).
 * A module whose settings are off is not on its phase's list at all: the
 * lists are built when the process starts, after a reload and (for the
 * pipeline's) when the route table loads, so a request costs nothing for
 * it.  docs/internals-modules.md is the map; scripts/check-map.sh checks
 * its phase table against the enum below and the three lists.
 *
 * A module's hook gets the PhaseRequest and, from the route match on, the
 * route being tried.  It returns true to go on, or false once it answered:
 * req->res and *body hold the answer, and the request goes to the exit,
 * which sends it (a module never sends its answer itself).  What each
 * phase may read and write:
 *
 *	PHASE_CONNECTION  (http) the request head and its connection (req->conn,
 *		req->version); may set req->scheme and the origin-form path; answers
 *		4xx for a head that is refused.
 *	PHASE_ENDPOINT	(http) method and path, worker and shared-memory state;
 *		answers without SQL and without the route table (health, metrics).
 *	PHASE_REDIRECT	(http) scheme and authority; answers 308 to https://.
 *	PHASE_ROUTE		(pipeline step) the route table: the routes the path
 *		matches, in order; a path no route has goes to a static mount.
 *	PHASE_PREFLIGHT	pr->routes (as last loaded, or the transaction's),
 *		pr->segs, the request headers; answers a CORS preflight, never by a
 *		handler.
 *	PHASE_ACCESS	the route, the module's own state (phase_module_state(),
 *		which may hold the client's connection); before any token is looked
 *		at; answers 429.
 *	PHASE_AUTHENTICATE the route, the request headers, pr->auth (written);
 *		with pr->rd (inside the request's transaction) sets the role and
 *		request.* settings for the handler; without it (admitting to an
 *		executor) only verifies; answers 401/403.
 *	PHASE_ACCESS_IDENTITY the route, pr->auth (read), the module's own state;
 *		answers 429.
 *	PHASE_ADMISSION	(pipeline step) where the route runs (pipeline.h's
 *		PipelinePlacement), decided once; caps and queues (exec/handoff.c).
 *	PHASE_CONTENT	(pipeline step) the handler (loop, executor, shared
 *		transaction, memory), an event stream, a static mount's files.
 *	PHASE_FILTER	the response head and body as they leave.  Two kinds of
 *		module: a pipeline module's PHASE_FILTER hook (serve/phase_list.h)
 *		gets the answering route and may add headers to req->res before the
 *		head leaves the pipeline, on the loop or on an executor (CORS' allow
 *		headers); a FilterModule (below, one line each in
 *		http/response_phase_list.h) is libh2o's filter on the worker's
 *		paths, and sees every response as sent, chunk by chunk, whatever
 *		made it (a handler, an executor's stream, a static file, a refusal):
 *		nosniff and HSTS, compression.
 *	PHASE_LOG		read only.  The exit (http/respond.c) counts every
 *		answer and its route's figures; a LogModule (one line each in
 *		http/response_phase_list.h) is libh2o's logger, called when h2o
 *		disposes of the request, after its last byte: the access log.
 */
#ifndef WEBGRES_PHASE_H
#define WEBGRES_PHASE_H

#include "datatype/timestamp.h"
#include "routes/route_modules.h"
#include "routes/routes.h"

struct st_h2o_req_t;
struct st_h2o_filter_t;
struct st_h2o_logger_t;
struct st_h2o_ostream_t;
struct st_h2o_conn_t;
struct PathSegments;
struct StringInfoData;
struct AuthState;
struct RequestData;

/* The phases, in the order a request goes through them. */
typedef enum Phase
{
	PHASE_CONNECTION,
	PHASE_ENDPOINT,
	PHASE_REDIRECT,
	PHASE_ROUTE,
	PHASE_PREFLIGHT,
	PHASE_ACCESS,
	PHASE_AUTHENTICATE,
	PHASE_ACCESS_IDENTITY,
	PHASE_ADMISSION,
	PHASE_CONTENT,
	PHASE_FILTER,
	PHASE_LOG
} Phase;

#define PHASE_COUNT (PHASE_LOG + 1)

/* The most modules one phase's list holds. */
#define PHASE_MAX_MODULES 8

/*
 * Each pipeline module's id, its place in serve/phase_list.h: it names the
 * module's slot in the request's PhaseStates, its section of a REQUEST
 * frame (exec/handoff_frame.h), its configuration in a Route and its
 * refusal counter (PHASE_MODULE_INDEX below).
 */
typedef enum PhaseModuleId
{
#define PHASE_MODULE(name) PHASE_MODULE_ID_##name,
#include "serve/phase_list.h"
#undef PHASE_MODULE
	PHASE_MODULE_COUNT
} PhaseModuleId;

/*
 * The bytes the pipeline modules' per-request states take together, each
 * rounded up to MAXALIGN; checked when the process starts.
 */
#define PHASE_STATE_SIZE 256

/* The most bytes one module's state takes in a REQUEST frame. */
#define PHASE_STATE_WIRE_MAX 1024

/*
 * The pipeline modules' per-request states: one area, in the request's own
 * struct (no allocation), a slot in it for each module with state_size,
 * and which of the slots hold a state.  Only a module reads its slot;
 * everything else moves the area as bytes.
 */
typedef struct PhaseStates
{
	uint32		begun;			/* bit 1 << PhaseModuleId: the slot holds a state */
	union
	{
		char		bytes[PHASE_STATE_SIZE];
		int64		force_align_i64;
		double		force_align_d;
		void	   *force_align_p;
	}			area;
} PhaseStates;

StaticAssertDecl(PHASE_MODULE_COUNT <= 32, "PhaseStates.begun has a bit per pipeline module");

/* Where each pipeline module's slot starts in PhaseStates.area (phase.c). */
extern uint16 phase_state_offsets[PHASE_MODULE_COUNT];

/* What a phase's modules see of the request (see the table above). */
typedef struct PhaseRequest
{
	struct st_h2o_req_t *req;	/* the request; its res is the answer */
	char	  **body;			/* the answer's body, in req->pool */
	size_t	   *bodylen;
	const RouteTable *routes;	/* PHASE_PREFLIGHT: the table to look in */
	const struct PathSegments *segs;	/* the path, split (pipeline phases) */
	struct st_h2o_conn_t *client;	/* the connection; NULL on an executor */
	TimestampTz now;			/* the request's clock */
	PhaseStates *states;		/* the pipeline modules' own states */
	struct AuthState *auth;		/* the request's token, once looked at */
	struct RequestData *rd;		/* inside the request's transaction; else NULL */
	MemoryContext cxt;			/* for what a module allocates beyond req->pool */
} PhaseRequest;

/* Begins module id's slot of st (phase.c): phase_module_state()'s slow path. */
extern void phase_state_begin(PhaseStates *st, PhaseModuleId id,
							  struct st_h2o_conn_t *client, TimestampTz now);

/*
 * The slot of pipeline module id in pr's states (its state_size bytes,
 * MAXALIGNed), begun by its state_begin the first time it is asked for.
 */
static inline void *
phase_module_state(PhaseRequest *pr, PhaseModuleId id)
{
	PhaseStates *st = pr->states;

	if (unlikely((st->begun & (UINT32_C(1) << id)) == 0))
		phase_state_begin(st, id, pr->client, pr->now);
	return st->area.bytes + phase_state_offsets[id];
}

/* A module's hook in one phase: true to go on, false once it answered. */
typedef bool (*PhaseHook) (PhaseRequest *pr, const Route *r);

/*
 * A module: its name (as the map lists it), whether its settings put it
 * on the lists (NULL: always; routes is the table just loaded, or NULL
 * when there is none yet or the module is a worker's), and its hook in
 * each phase it takes part in.
 *
 * A pipeline module (serve/phase_list.h) may also plug in beside the
 * request, by the optional members after the hooks (NULL: none), so that
 * all of it is in its own file and its one line in the list:
 *
 *	shmem_request	called from _PG_init while shared_preload_libraries is
 *		processed (pipeline_modules_shmem_request()): asks for the module's
 *		shared memory by core/shmem.h's shmem_piece(), which also finds or
 *		creates it in every process, so no startup hook is needed.
 *	route	its columns of webgres.routes, read into the route's
 *		module_conf[PHASE_MODULE_INDEX(name)] as the table loads, checked by
 *		the table's trigger, and its refusal counter per route
 *		(routes/route_modules.h; handed to the routes floor by
 *		pipeline_modules_register()).
 *
 * A worker's module (http/worker_phase_list.h) leaves them unset: they are
 * looked at for the pipeline's list only.
 *
 * A pipeline module (serve/phase_list.h) may keep a state for each
 * request, state_size bytes in its slot of the request's PhaseStates
 * (phase_module_state(pr, PHASE_MODULE_ID_name)), which it alone reads:
 * the pipeline, the hand-off and the executor only move the area as bytes.
 * Its state hooks (all five, or state_size 0 and none):
 *
 *	state_begin		sets up the whole slot, the first time one of the
 *		module's hooks asks for it (phase_module_state()), or before a
 *		hand-off.  client is the request's connection (valid only while the
 *		pipeline runs it), or NULL where there is none: on an executor, for
 *		a module the worker handed no state over for, or for a caller
 *		without HTTP.
 *	state_hand_off	before the request crosses to an executor: drops
 *		whatever points into the worker (the connection), keeping in the
 *		slot what the executor needs of it (the client's address key).
 *	state_encode	appends the slot's bytes to the REQUEST frame, at most
 *		PHASE_STATE_WIRE_MAX of them, after state_hand_off.
 *	state_decode	on the executor, fills a slot from what state_encode
 *		wrote (whether or not the module is on the executor's lists); the
 *		bytes come over a socket: false if they are not what state_encode
 *		writes, and the frame is refused.
 *	state_resume	on the executor, before its pipeline runs a decoded
 *		slot: the request's clock is now.
 *
 * The slot is all a module has: its hooks allocate nothing, raise no
 * error (state_decode says false instead) and keep no pointer into the
 * request past it.  A request pays one store for the states while no
 * module with state is on the lists, and a module only when it asks.
 */
typedef struct PhaseModule
{
	const char *name;
	bool		(*enabled) (const RouteTable *routes);
	PhaseHook	hooks[PHASE_COUNT];

	/* Beside the request: shared memory, route columns, counter. */
	void		(*shmem_request) (void);
	RouteModuleHooks route;

	/* Per-request state (pipeline modules only; 0: none, hooks NULL). */
	size_t		state_size;
	void		(*state_begin) (void *state, struct st_h2o_conn_t *client, TimestampTz now);
	void		(*state_hand_off) (void *state);
	void		(*state_encode) (struct StringInfoData *buf, const void *state);
	bool		(*state_decode) (const char *data, size_t len, void *state);
	void		(*state_resume) (void *state, TimestampTz now);
} PhaseModule;

/*
 * A pipeline module's id (PhaseModuleId, above) by its name: where a Route
 * keeps its configuration (Route.module_conf) and what it counts its
 * refusals under (route_stats_count_module()).
 */
#define PHASE_MODULE_INDEX(name) PHASE_MODULE_ID_##name

/* Route r's configuration of pipeline module name (NULL: none). */
#define PHASE_MODULE_CONF(r, name) ((r)->module_conf[PHASE_MODULE_INDEX(name)])

/* A phase's list: the hooks of its modules that are on, in order. */
typedef struct PhaseList
{
	int			n;
	PhaseHook	hooks[PHASE_MAX_MODULES];
} PhaseList;

/* Builds lists[] from modules (nmodules of them) for table routes. */
extern void phase_lists_build(PhaseList *lists, const PhaseModule *const *modules,
							  int nmodules, const RouteTable *routes);

/* Runs list's hooks in order: false as soon as one answered. */
static inline bool
phase_run(const PhaseList *list, PhaseRequest *pr, const Route *r)
{
	for (int i = 0; i < list->n; i++)
		if (!list->hooks[i] (pr, r))
			return false;
	return true;
}

/*
 * A module of PHASE_FILTER on the worker's paths: libh2o's filter
 * (h2o_filter_t), its on_setup_ostream called as each response starts,
 * which adds headers or an output stream and hands on with
 * h2o_setup_next_ostream().  Defined as "const FilterModule NAME_filter"
 * in the module's file, registered by one line in
 * http/response_phase_list.h.  While enabled() is false the filter is not
 * in the path's list at all (rebuilt at start and after a reload).
 */
typedef struct FilterModule
{
	const char *name;
	bool		(*enabled) (void);	/* NULL: always */
	bool		every_path;		/* also on libh2o's own answers (the host's
								 * fallback path) and the metrics listeners;
								 * else on the path that serves routes only */
	void		(*on_setup_ostream) (struct st_h2o_filter_t *self, struct st_h2o_req_t *req,
									 struct st_h2o_ostream_t **slot);
} FilterModule;

/*
 * A module of PHASE_LOG: libh2o's logger (h2o_logger_t), called for each
 * request on the path that serves routes as h2o disposes of it.  Defined
 * as "const LogModule NAME_logger", one line in http/response_phase_list.h;
 * not on the list while enabled() is false.
 */
typedef struct LogModule
{
	const char *name;
	bool		(*enabled) (void);	/* NULL: always */
	void		(*log_access) (struct st_h2o_logger_t *self, struct st_h2o_req_t *req);
} LogModule;

/*
 * The exit every response leaves by (http/respond.h), for a floor below
 * the worker's that answers its requests: the hand-off.
 */
typedef struct PhaseExit
{
	/* A whole answer: framed, counted, sent; counted under route_id if started. */
	void		(*send) (struct st_h2o_req_t *req, char *body, size_t bodylen,
						 int64 route_id, TimestampTz started);
	/* A streamed answer's head goes out. */
	void		(*stream_head) (struct st_h2o_req_t *req);
	/* A streamed answer of status ended or was cut after bytes. */
	void		(*stream_end) (int status, int64 route_id, uint64 bytes, TimestampTz started);
} PhaseExit;

#endif
