/*
 * access_log.c
 *		The access log and the slow-request log.
 *
 * libh2o 2.2.5 compiles Apache-style formats (h2o_logconf_compile) and
 * formats a request's line (h2o_log_request); webgres uses both, but not
 * its file logger (h2o_access_log_register): that one keeps its descriptor
 * for the life of the process, so a log rotated by logrotate would go on
 * being written after it was moved away, and it writes a line per
 * request.  Here each worker opens the file itself, opens it again on
 * SIGHUP, and writes the lines of one pass of its event loop at once.
 * The destination 'postgres' sends each line to the Postgres log instead.
 *
 * webgres' own fields are request environment variables, which h2o's
 * %{NAME}e prints; they are set from the request's note just before its
 * line is formatted, so they cost nothing while the log is off.  The note
 * lives in the request's memory pool; this process finds it by the
 * request's address in a hash table, from which the logger removes it.
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "serve/access_log.h"
#include "serve/phase.h"
#include "routes/route_names.h"

/* webgres.access_log's value that sends lines to the Postgres log. */
#define DESTINATION_POSTGRES "postgres"
/* Lines are written once this many bytes wait, or when the loop waits. */
#define FLUSH_BYTES 65536
/* Room for a line on the stack; h2o allocates a longer one itself. */
#define LINE_BUFFER 4096
/* The longest part of a path that goes into a slow-request message. */
#define SLOW_PATH_MAX 200
/* The error buffer h2o_logconf_compile() writes to: libh2o's own size. */
#define LOGCONF_ERROR_MAX 256

/* webgres.log_slow_requests' value that turns slow-request messages off. */
#define LOG_SLOW_REQUESTS_OFF (-1)
/* The requests noted at once as the table of notes starts; it grows as needed. */
#define NOTES_INITIAL 256

/*
 * The settings (access_log_define_settings): the GUCs point into it.  The
 * format is checked by its hook and compiled when the log is configured:
 * the compiled form is libh2o's, in its memory, so it cannot be the hook's
 * extra.
 */
typedef struct AccessLogSettings
{
	char	   *destination;	/* webgres.access_log: "", "postgres" or a path */
	char	   *format;			/* webgres.access_log_format */
	int			slow_ms;		/* webgres.log_slow_requests */
} AccessLogSettings;

static AccessLogSettings settings = {.slow_ms = LOG_SLOW_REQUESTS_OFF};

typedef struct NoteEntry
{
	h2o_req_t  *req;			/* the key */
	AccessNote *note;
} NoteEntry;

static HTAB *notes = NULL;
static long nnotes = 0;			/* entries in notes: none, no lookup */
static h2o_logconf_t *logconf = NULL;
static char *compiled_format = NULL;
static bool to_postgres = false;
static int	log_fd = -1;
static StringInfoData pending;

/* Whether a note is wanted: either log is on. */
static inline bool
noting(void)
{
	return logconf != NULL || settings.slow_ms >= 0;
}

/* The request's note for the logs, zeroed when first asked for; NULL when no log is on. */
AccessNote *
access_log_note(h2o_req_t *req)
{
	NoteEntry  *e;
	bool		found;

	if (!noting() || notes == NULL)
		return NULL;
	e = hash_search(notes, &req, HASH_ENTER, &found);
	if (!found)
	{
		nnotes++;
		e->note = h2o_mem_alloc_pool(&req->pool, sizeof(AccessNote));
		memset(e->note, 0, sizeof(AccessNote));
	}
	return e->note;
}

/* Whether fmt compiles as an access log format; else *error says why. */
static bool
format_ok(const char *fmt, char **error)
{
	char		errbuf[LOGCONF_ERROR_MAX];
	h2o_logconf_t *conf = h2o_logconf_compile(fmt, H2O_LOGCONF_ESCAPE_APACHE, errbuf);

	if (conf == NULL)
	{
		*error = pstrdup(errbuf);
		return false;
	}
	h2o_logconf_dispose(conf);
	return true;
}

/* Writes what is pending to the log file; a failure is reported once a batch. */
static void
write_pending(void)
{
	size_t		off = 0;

	while (log_fd >= 0 && off < (size_t) pending.len)
	{
		ssize_t		n = write(log_fd, pending.data + off, pending.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not write to webgres access log \"%s\": %m", settings.destination)));
			break;
		}
		off += n;
	}
	resetStringInfo(&pending);
}

/* Writes the lines buffered in this pass of the event loop. */
void
access_log_flush(void)
{
	if (pending.data != NULL && pending.len > 0)
		write_pending();
}

/* Opens the access log file named by the setting, relative to the data directory. */
static void
open_file(void)
{
	char	   *path = settings.destination[0] == '/' ? settings.destination :
		psprintf("%s/%s", DataDir, settings.destination);

	log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, pg_file_create_mode);
	if (log_fd < 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not open webgres access log \"%s\": %m", path),
				 errdetail("Requests are not logged until the file can be opened on a reload.")));
}

/*
 * Empties the notes of requests in flight.  With both logs off the logger
 * leaves the path's list, so it would never remove them; a later request
 * at the same address would find one, pointing into a freed pool.
 */
static void
forget_notes(void)
{
	HASH_SEQ_STATUS seq;
	NoteEntry  *e;

	if (nnotes == 0)
		return;
	hash_seq_init(&seq, notes);
	while ((e = hash_seq_search(&seq)) != NULL)
		hash_search(notes, &e->req, HASH_REMOVE, NULL);
	nnotes = 0;
}

/* Takes webgres.access_log and its format, and reopens the log file. */
static void
configure_log(void)
{
	bool		on = settings.destination != NULL && settings.destination[0] != '\0';

	access_log_flush();
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	if (pending.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&pending);
		MemoryContextSwitchTo(old);
	}
	if (notes == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(h2o_req_t *);
		ctl.entrysize = sizeof(NoteEntry);
		notes = hash_create("webgres access log notes", NOTES_INITIAL, &ctl, HASH_ELEM | HASH_BLOBS);
	}

	/* The format compiled when the setting was checked; again here, in h2o's memory. */
	if (logconf != NULL && (!on || strcmp(compiled_format, settings.format) != 0))
	{
		h2o_logconf_dispose(logconf);
		logconf = NULL;
		pfree(compiled_format);
		compiled_format = NULL;
	}
	ereport(DEBUG1,
			(errmsg_internal("webgres access log configured in process %d: %s",
							 MyProcPid, on ? settings.destination : "off")));
	if (!on)
		return;
	if (logconf == NULL)
	{
		char		errbuf[LOGCONF_ERROR_MAX];

		logconf = h2o_logconf_compile(settings.format, H2O_LOGCONF_ESCAPE_APACHE, errbuf);
		if (logconf == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid webgres.access_log_format: %s", errbuf)));
			return;
		}
		compiled_format = MemoryContextStrdup(TopMemoryContext, settings.format);
	}
	to_postgres = strcmp(settings.destination, DESTINATION_POSTGRES) == 0;
	if (!to_postgres)
		open_file();
}

/* Takes the settings and reopens the log file; at start and after SIGHUP. */
void
access_log_configure(void)
{
	configure_log();
	if (!noting())
		forget_notes();
}

/* A timeval of h2o's as a TimestampTz; 0 for a null one. */
static TimestampTz
from_timeval(const struct timeval *tv)
{
	if (tv->tv_sec == 0 && tv->tv_usec == 0)
		return 0;
	return (TimestampTz) (tv->tv_sec - ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY)) *
		USECS_PER_SEC + tv->tv_usec;
}

/* Milliseconds from a to b, or 0 if either is unknown. */
static double
ms_between(TimestampTz a, TimestampTz b)
{
	return (a == 0 || b == 0 || b < a) ? 0 : (double) (b - a) / 1000.0;
}

/* Sets a request environment variable to a string copied into its pool. */
static void
set_env(h2o_req_t *req, const char *name, const char *value)
{
	h2o_iovec_t *v = h2o_req_getenv(req, name, strlen(name), 1);

	*v = h2o_strdup(&req->pool, value, strlen(value));
}

/*
 * The request's duration in ms, from its complete head to its end: to the
 * last byte sent, or now for a stream whose client went away (h2o then has
 * no end, and its %{duration}x prints "-").
 */
static double
duration_ms(h2o_req_t *req)
{
	TimestampTz ready = from_timeval(&req->processed_at.at);
	TimestampTz end = from_timeval(&req->timestamps.response_end_at);

	return ms_between(ready, end != 0 ? end : GetCurrentTimestamp());
}

/* Sets webgres' fields as environment variables, for %{webgres.*}e. */
static void
set_fields(h2o_req_t *req, const AccessNote *n)
{
	const char *method;
	const char *path;
	char		num[64];

	snprintf(num, sizeof(num), "%.3f", duration_ms(req));
	set_env(req, "webgres.duration_ms", num);
	/* h2o's %u prints REMOTE_USER. */
	if (n->role != NULL)
		set_env(req, "REMOTE_USER", n->role);
	if (n->route_id == 0)
		return;
	snprintf(num, sizeof(num), INT64_FORMAT, n->route_id);
	set_env(req, "webgres.route_id", num);
	if (route_names_lookup(n->route_id, &method, &path))
	{
		set_env(req, "webgres.route", path);
		set_env(req, "webgres.route_method", method != NULL ? method : "ANY");
	}
	set_env(req, "webgres.place", n->place == ACCESS_PLACE_EXECUTOR ? "executor" : "loop");
	snprintf(num, sizeof(num), "%.3f",
			 ms_between(n->admitted != 0 ? n->admitted : n->started, n->answered));
	set_env(req, "webgres.handler_ms", num);
	snprintf(num, sizeof(num), "%.3f", ms_between(n->handed_off, n->admitted));
	set_env(req, "webgres.queue_ms", num);
	snprintf(num, sizeof(num), "%.3f", (double) n->plan_us / 1000.0);
	set_env(req, "webgres.plan_ms", num);
}

/* Writes the request's access log line. */
static void
write_line(h2o_req_t *req)
{
	char		buf[LINE_BUFFER];
	size_t		len = sizeof(buf);
	char	   *line = h2o_log_request(logconf, req, &len, buf);

	if (to_postgres)
		ereport(LOG,
				(errmsg_internal("%.*s", (int) (len > 0 && line[len - 1] == '\n' ? len - 1 : len), line),
				 errhidestmt(true), errhidecontext(true)));
	else if (log_fd >= 0)
	{
		appendBinaryStringInfo(&pending, line, len);
		if (pending.len >= FLUSH_BYTES)
			write_pending();
	}
	if (line != buf)
		free(line);
}

/* Logs the request if it took longer than webgres.log_slow_requests. */
static void
log_if_slow(h2o_req_t *req, const AccessNote *n)
{
	TimestampTz ready = from_timeval(&req->processed_at.at);
	TimestampTz end = from_timeval(&req->timestamps.response_end_at);
	const char *method = NULL;
	const char *path = NULL;
	double		total = duration_ms(req);
	double		ran_ms = 0;
	double		plan_ms = 0;

	if (n != NULL)
	{
		ran_ms = ms_between(n->admitted != 0 ? n->admitted : n->started, n->answered);
		/* Planning is timed apart, so it may exceed a rounded run time by a hair. */
		plan_ms = Min((double) n->plan_us / 1000.0, ran_ms);
	}
	if (end == 0)
		end = GetCurrentTimestamp();
	if (ready == 0 || total < settings.slow_ms)
		return;
	if (n == NULL || n->route_id == 0 || !route_names_lookup(n->route_id, &method, &path))
		path = NULL;
	ereport(LOG,
			(errmsg("webgres slow request: %.*s %.*s answered %d in %.3f ms",
					(int) req->method.len, req->method.base,
					(int) Min(req->path.len, SLOW_PATH_MAX), req->path.base,
					req->res.status, total),
			 n != NULL && n->route_id != 0 ?
			 errdetail("Route " INT64_FORMAT " (%s %s) on the %s: waited %.3f ms for the loop, "
					   "%.3f ms queued for an executor, planned %.3f ms, executed %.3f ms, "
					   "sent in %.3f ms.",
					   n->route_id, method != NULL ? method : "ANY",
					   path != NULL ? path : "(deleted)",
					   n->place == ACCESS_PLACE_EXECUTOR ? "executor" : "event loop",
					   ms_between(ready, n->started), ms_between(n->handed_off, n->admitted),
					   plan_ms, Max(ran_ms - plan_ms, 0.0), ms_between(n->answered, end)) :
			 errdetail("No route answered it."),
			 errhidestmt(true), errhidecontext(true)));
}

/* h2o's logger callback: the request is being disposed of. */
static void
log_access(h2o_logger_t *self, h2o_req_t *req)
{
	AccessNote *n = NULL;
	NoteEntry  *e;

	/* While both logs are off, the logger is not on the list (access_log_logger). */
	if (nnotes > 0 && (e = hash_search(notes, &req, HASH_FIND, NULL)) != NULL)
	{
		n = e->note;
		hash_search(notes, &req, HASH_REMOVE, NULL);
		nnotes--;
	}
	if (logconf != NULL)
	{
		if (n != NULL)
			set_fields(req, n);
		write_line(req);
	}
	if (settings.slow_ms >= 0)
		log_if_slow(req, n);
}

/* Whether the logger is on the path's list: either log is on. */
static bool
access_log_enabled(void)
{
	return noting();
}

/* The module: the logger on the path that serves routes (http/response_phase_list.h). */
const LogModule access_log_logger = {
	"access_log", access_log_enabled, log_access
};

/* webgres.access_log_format's check hook: a format libh2o's log compiler takes. */
static bool
check_format(char **newval, void **extra, GucSource source)
{
	char	   *error;

	if (*newval == NULL || format_ok(*newval, &error))
		return true;
	GUC_check_errdetail("%s", error);
	GUC_check_errhint("Use Apache's directives, for example '%%h %%l %%u %%t \"%%r\" %%s %%b'.");
	return false;
}

/* Defines webgres.access_log, its format and webgres.log_slow_requests; from _PG_init. */
void
access_log_define_settings(void)
{
	DefineCustomStringVariable("webgres.access_log",
							   "Where the HTTP workers log each request: a file, or the Postgres log.",
							   "Empty turns the access log off. 'postgres' sends each line to the "
							   "Postgres log; any other value names a file, relative to the data "
							   "directory unless absolute, which every worker appends to and opens "
							   "again on reload (SIGHUP), so that it can be rotated.",
							   &settings.destination,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.access_log_format",
							   "Format of the access log's lines.",
							   "Apache's and h2o's directives (%h %l %u %t %r %s %b, %{Header}i, "
							   "%{duration}x and the rest); webgres' own fields are %{webgres.route_id}e, "
							   "%{webgres.route}e, %{webgres.route_method}e, %{webgres.place}e, "
							   "%{webgres.handler_ms}e and %{webgres.queue_ms}e. The default is "
							   "Apache's combined format.",
							   &settings.format,
							   "%h %l %u %t \"%r\" %s %b \"%{referer}i\" \"%{user-agent}i\"",
							   PGC_SIGHUP,
							   0,
							   check_format, NULL, NULL);

	DefineCustomIntVariable("webgres.log_slow_requests",
							"Logs requests that take longer than this, with their time split.",
							"From the complete request to the last byte of its response, a "
							"request that takes at least this long is logged with its route, "
							"status, and the time it waited for the event loop, waited for an "
							"executor, was planned, executed and sent. -1 turns it off; 0 logs "
							"every request.",
							&settings.slow_ms,
							LOG_SLOW_REQUESTS_OFF,
							LOG_SLOW_REQUESTS_OFF, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}
