/*
 * static_files.c
 *		Serving a static mount's files with libh2o's file handler.
 *
 * libh2o 2.2.5's file handler (h2o_file_register) does the serving: ETag
 * and Last-Modified with 304, Range with 206 and 416, HEAD, index files,
 * MIME types from its default map and .gz siblings.  It reads with
 * pread() into the response's buffer (its generator is named after
 * sendfile, but 2.2.5 never calls it), which keeps HTTP/2 framing and the
 * compression filter in the path; a sendfile() of our own would have to
 * bypass both.
 * The handlers are not registered on the host's paths: a mount is a row
 * of webgres.static_mounts that can change at any time, and libh2o's
 * paths are fixed once its context exists.  So each mount gets handlers
 * on a path configuration of its own, outside the host, built when the
 * worker first serves the mount after a change, and called from the one
 * handler webgres registers (worker.c).  The request keeps the host's
 * path configuration, so its filters (compression) and the connection's
 * protections (timeouts, capacity, HTTP/2 screening) apply as to any
 * response, and no SQL runs.
 *
 * What the file handler does not do, and is done here first:
 *
 *	- refuse paths that leave the directory or hide in it ("..", encoded
 *	  and double-encoded forms, backslashes, NUL, dotfiles): its own
 *	  normalisation resolves "..", which would take it out of the mount's
 *	  prefix (parse/static_path.c);
 *	- refuse symbolic links that point out of the directory: it follows
 *	  any link.  openat2() with RESOLVE_BENEATH resolves the path inside
 *	  the directory in one system call (realpath() where the kernel lacks
 *	  it);
 *	- the single-page-application fallback: an unknown path answers the
 *	  index file, through a second handler for that one file;
 *	- weak comparison for If-None-Match (RFC 9110 13.1.2): a compressed
 *	  response's ETag comes back weak (W/"..."), and the handler compares
 *	  bytes;
 *	- q-values for precompressed siblings: a mount's .gz handler is used
 *	  only for a client that takes gzip by webgres' reading of
 *	  Accept-Encoding (parse/accept_encoding.c).
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utils/guc.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "http/static_files.h"
#include "message/response.h"
#include "parse/accept_encoding.h"
#include "parse/byte_ranges.h"
#include "parse/static_path.h"
#include "routes/mounts.h"

/* webgres.static_max_ranges: its default (static_files_define_settings). */
#define STATIC_MAX_RANGES_DEFAULT 16
static int	webgres_static_max_ranges = STATIC_MAX_RANGES_DEFAULT;

/* The longest "first-last," of a canonical Range: two 20-digit numbers. */
#define RANGE_SPEC_MAX 42

/* What a mount's directory holds at a path. */
typedef enum Lookup
{
	LOOKUP_FOUND,				/* inside the directory (file or directory) */
	LOOKUP_MISSING,				/* no such file */
	LOOKUP_OUTSIDE				/* a symbolic link leads out of the directory */
} Lookup;

/* The libh2o handlers of one mount, for one load of the mount table. */
typedef struct MountHandlers
{
	h2o_pathconf_t plain_conf;
	h2o_pathconf_t gz_conf;
	h2o_pathconf_t spa_conf;
	h2o_handler_t *plain;		/* the files as they are */
	h2o_handler_t *gz;			/* .gz siblings first; NULL unless precompressed */
	h2o_handler_t *spa;			/* the index file alone; NULL unless spa_fallback */
	int			rootfd;			/* the directory, O_PATH; -1 if it cannot be opened */
	char	   *root_real;		/* its realpath(), for kernels without openat2 */
} MountHandlers;

static h2o_globalconf_t *globalconf;
static h2o_context_t *context;
static h2o_mimemap_t *mimemap;

static MountHandlers *handlers = NULL;
static int	nhandlers = 0;
static uint64 handlers_generation = 0;
static bool have_openat2 = true;

/* Keeps the worker's configuration and context for the handlers built later. */
void
static_files_init(h2o_globalconf_t *config, h2o_context_t *ctx)
{
	globalconf = config;
	context = ctx;
	mimemap = h2o_mimemap_create();
}

/* Lets a handler made after the context was initialised set itself up. */
static h2o_handler_t *
ready(h2o_handler_t *h)
{
	if (h->on_context_init != NULL)
		h->on_context_init(h, context);
	return h;
}

/* Undoes ready() and frees the handlers of one path configuration. */
static void
dispose_conf(h2o_pathconf_t *conf)
{
	for (size_t i = 0; i < conf->handlers.size; i++)
	{
		h2o_handler_t *h = conf->handlers.entries[i];

		if (h->on_context_dispose != NULL)
			h->on_context_dispose(h, context);
	}
	h2o_config_dispose_pathconf(conf);
}

/* Frees every mount's handlers. */
static void
drop_handlers(void)
{
	for (int i = 0; i < nhandlers; i++)
	{
		MountHandlers *mh = &handlers[i];

		if (mh->plain == NULL)
			continue;
		dispose_conf(&mh->plain_conf);
		dispose_conf(&mh->gz_conf);
		dispose_conf(&mh->spa_conf);
		if (mh->rootfd >= 0)
			close(mh->rootfd);
		free(mh->root_real);
	}
	free(handlers);
	handlers = NULL;
	nhandlers = 0;
}

/* Builds the handlers of mount m. */
static void
build(MountHandlers *mh, const Mount *m)
{
	const char *index_files[2] = {m->index_file, NULL};
	char	   *prefix = m->prefix_len == 0 ? "/" : m->prefix;

	h2o_config_init_pathconf(&mh->plain_conf, globalconf, prefix, mimemap);
	h2o_config_init_pathconf(&mh->gz_conf, globalconf, prefix, mimemap);
	h2o_config_init_pathconf(&mh->spa_conf, globalconf, prefix, mimemap);
	/* The file handler's struct is opaque; it begins with its h2o_handler_t. */
	mh->plain = ready((h2o_handler_t *) h2o_file_register(&mh->plain_conf, m->directory,
														  index_files, mimemap, 0));
	if (m->precompressed)
		mh->gz = ready((h2o_handler_t *) h2o_file_register(&mh->gz_conf, m->directory,
														   index_files, mimemap,
														   H2O_FILE_FLAG_SEND_COMPRESSED));
	if (m->spa_fallback && m->index_file != NULL)
	{
		h2o_iovec_t path = h2o_concat(NULL, h2o_iovec_init(m->directory, strlen(m->directory)),
									  h2o_iovec_init(H2O_STRLIT("/")),
									  h2o_iovec_init(m->index_file, strlen(m->index_file)));
		h2o_mimemap_type_t *type = h2o_mimemap_get_type_by_extension(mimemap,
																	 h2o_get_filext(path.base, path.len));

		mh->spa = ready(h2o_file_register_file(&mh->spa_conf, path.base, type, 0));
		free(path.base);
	}
	mh->rootfd = open(m->directory, O_PATH | O_DIRECTORY | O_CLOEXEC);
	mh->root_real = realpath(m->directory, NULL);
	if (mh->rootfd < 0 || mh->root_real == NULL)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("webgres static mount \"%s\" cannot open directory \"%s\": %m",
						m->prefix, m->directory),
				 errhint("Its requests are answered 404 until the directory can be read.")));
}

/* The handlers of mount m, built anew after the mount table changed. */
static MountHandlers *
handlers_of(const Mount *m)
{
	MountTable *table = mounts_peek();

	if (table == NULL || table->generation != handlers_generation || nhandlers != table->nmounts)
	{
		drop_handlers();
		if (table == NULL)
			return NULL;
		handlers = calloc(Max(table->nmounts, 1), sizeof(MountHandlers));
		if (handlers == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		nhandlers = table->nmounts;
		handlers_generation = table->generation;
		for (int i = 0; i < nhandlers; i++)
			handlers[i].rootfd = -1;
	}
	if (m->index >= nhandlers)
		return NULL;
	if (handlers[m->index].plain == NULL)
		build(&handlers[m->index], m);
	return &handlers[m->index];
}

/*
 * Looks rel (relative, decoded) up under the directory with realpath();
 * *st, unless NULL, gets what it found.
 */
static Lookup
look_up_realpath(h2o_req_t *req, const MountHandlers *mh, const char *directory, const char *rel,
				 struct stat *st)
{
	char	   *full = h2o_concat(&req->pool, h2o_iovec_init(directory, strlen(directory)),
								  h2o_iovec_init(H2O_STRLIT("/")),
								  h2o_iovec_init(rel, strlen(rel))).base;
	char	   *real = realpath(full, NULL);
	size_t		rootlen = strlen(mh->root_real);
	Lookup		result;

	if (real == NULL)
		result = LOOKUP_MISSING;
	else if (strncmp(real, mh->root_real, rootlen) == 0 &&
			 (real[rootlen] == '\0' || real[rootlen] == '/' || rootlen == 1))
		result = (st == NULL || stat(real, st) == 0) ? LOOKUP_FOUND : LOOKUP_MISSING;
	else
		result = LOOKUP_OUTSIDE;
	free(real);
	return result;
}

/*
 * Looks rel up under the directory: one openat2() that refuses to leave it,
 * through ".." or through a symbolic link, absolute or relative.  *st,
 * unless NULL, gets what it found (its size, for a Range).
 */
static Lookup
look_up(h2o_req_t *req, const MountHandlers *mh, const char *directory, const char *rel,
		struct stat *st)
{
	struct open_how how;
	int			fd;

	if (rel[0] == '\0')
		return (st == NULL || fstat(mh->rootfd, st) == 0) ? LOOKUP_FOUND : LOOKUP_MISSING;
	if (have_openat2)
	{
		memset(&how, 0, sizeof(how));
		how.flags = O_PATH | O_CLOEXEC;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		fd = (int) syscall(SYS_openat2, mh->rootfd, rel, &how, sizeof(how));
		if (fd >= 0)
		{
			bool		ok = (st == NULL || fstat(fd, st) == 0);

			close(fd);
			return ok ? LOOKUP_FOUND : LOOKUP_MISSING;
		}
		if (errno == EXDEV || errno == ELOOP)
			return LOOKUP_OUTSIDE;
		if (errno != ENOSYS && errno != EPERM)
			return LOOKUP_MISSING;
		/* No openat2 (an older kernel, or a seccomp filter): realpath(). */
		have_openat2 = false;
	}
	return look_up_realpath(req, mh, directory, rel, st);
}

/* Whether the client takes gzip, by webgres' reading of Accept-Encoding. */
static bool
takes_gzip(h2o_req_t *req)
{
	bool		yes = false;
	ssize_t		i = -1;

	while ((i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT_ENCODING, i)) != -1)
	{
		AcceptGzip	v = accept_encoding_gzip(req->headers.entries[i].value.base,
											 req->headers.entries[i].value.len);

		if (v == ACCEPT_GZIP_NO)
			return false;
		yes |= (v == ACCEPT_GZIP_YES);
	}
	return yes;
}

/*
 * If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" matches "x".  The
 * handler compares the field with its ETag byte for byte, so a weak tag
 * alone loses its W/ here.
 */
static void
weak_if_none_match(h2o_req_t *req)
{
	ssize_t		i = h2o_find_header(&req->headers, H2O_TOKEN_IF_NONE_MATCH, -1);
	h2o_iovec_t *v;

	if (i == -1)
		return;
	v = &req->headers.entries[i].value;
	if (v->len > 2 && v->base[0] == 'W' && v->base[1] == '/')
		*v = h2o_iovec_init(v->base + 2, v->len - 2);
}

/*
 * The relative path of the file a decoded path asks for (the index file for
 * a directory), in req's pool; NULL for a directory when there is no index.
 */
static char *
target_of(h2o_req_t *req, const Mount *m, const char *decoded, size_t len)
{
	h2o_iovec_t rel = h2o_iovec_init(decoded + 1, len - 1);	/* past the '/' */

	if (rel.len == 0 || rel.base[rel.len - 1] == '/')
	{
		if (m->index_file == NULL)
			return NULL;
		return h2o_concat(&req->pool, rel,
						  h2o_iovec_init(m->index_file, strlen(m->index_file))).base;
	}
	return h2o_strdup(&req->pool, rel.base, rel.len).base;
}

/* Removes every Range field of req: the whole file is sent. */
static void
drop_ranges(h2o_req_t *req)
{
	ssize_t		i;

	while ((i = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1)) != -1)
		h2o_delete_header(&req->headers, i);
}

/*
 * Gives the file handler a Range it can read only one way: at most
 * webgres.static_max_ranges ranges of the file as it is now (st), merged
 * where they overlap or nearly touch, in absolute positions; or none, so
 * that the whole file goes out with 200, when the field is malformed, asks
 * for too many, or comes twice.  A Range no byte of the file satisfies
 * becomes one the handler answers 416.
 */
static void
screen_ranges(h2o_req_t *req, const struct stat *st)
{
	ssize_t		i = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1);
	h2o_iovec_t *value;
	ByteRange  *ranges;
	int			n;
	char	   *out;
	size_t		outlen;

	if (i == -1)
		return;
	if (!S_ISREG(st->st_mode) || h2o_find_header(&req->headers, H2O_TOKEN_RANGE, i) != -1)
	{
		drop_ranges(req);
		return;
	}
	value = &req->headers.entries[i].value;
	ranges = h2o_mem_alloc_pool(&req->pool, sizeof(ByteRange) * webgres_static_max_ranges);
	switch (byte_ranges_plan(value->base, value->len, (uint64) st->st_size,
							 webgres_static_max_ranges, ranges, &n))
	{
		case BYTE_RANGES_WHOLE:
			drop_ranges(req);
			return;
		case BYTE_RANGES_UNSATISFIABLE:
			/* The file handler answers 416 to a range that starts past the end. */
			ranges[0].first = (uint64) st->st_size;
			n = 0;
			break;
		case BYTE_RANGES_PARTIAL:
			break;
	}
	out = h2o_mem_alloc_pool(&req->pool, RANGE_SPEC_MAX * Max(n, 1) + sizeof("bytes="));
	outlen = sprintf(out, "bytes=");
	if (n == 0)
		outlen += sprintf(out + outlen, UINT64_FORMAT "-", ranges[0].first);
	for (int k = 0; k < n; k++)
		outlen += sprintf(out + outlen, "%s" UINT64_FORMAT "-" UINT64_FORMAT,
						  k > 0 ? "," : "", ranges[k].first, ranges[k].last);
	*value = h2o_iovec_init(out, outlen);
}

/*
 * Hands req to handler h with the screened path; true if it answered.  st
 * is the file the handler will send, when req asks for a Range of it.
 */
static bool
run_handler(h2o_handler_t *h, h2o_req_t *req, const Mount *m, const char *decoded, size_t len,
			const struct stat *st)
{
	const char *prefix = m->prefix_len == 0 ? "" : m->prefix;

	if (st != NULL)
		screen_ranges(req, st);

	/* The handler maps path_normalized below its prefix to a file. */
	req->path_normalized = h2o_concat(&req->pool, h2o_iovec_init(prefix, strlen(prefix)),
									  h2o_iovec_init(decoded, len));
	weak_if_none_match(req);
	/* The file handler keeps headers set before it runs, on 200 and 304 alike. */
	if (m->cache_control != NULL)
		h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL,
							 m->cache_control, strlen(m->cache_control));
	/* Counted by the exit (http/respond.h), as the caller reports the start. */
	return h->on_req(h, req) == 0;
}

/* Answers req from mount m: screened, looked up, handed to a file handler. */
bool
static_files_serve(h2o_req_t *req, const Mount *m, char **body, size_t *bodylen)
{
	size_t		pathlen = req->query_at == SIZE_MAX ? req->path.len : req->query_at;
	const char *rest = req->path.base + m->prefix_len;
	size_t		restlen = pathlen - m->prefix_len;
	char	   *decoded = h2o_mem_alloc_pool(&req->pool, restlen + 1);
	size_t		len;
	MountHandlers *mh;
	char	   *target;
	h2o_handler_t *h;
	struct stat st_buf;
	struct stat *st;

	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
		!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
	{
		response_simple(req, 405, "Method Not Allowed", body, bodylen);
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
					   H2O_STRLIT("GET, HEAD"));
		return false;
	}
	switch (static_path_screen(rest, restlen, m->dotfiles, decoded, &len))
	{
		case STATIC_PATH_BAD:
			response_simple(req, 400, "Bad Request", body, bodylen);
			return false;
		case STATIC_PATH_HIDDEN:
			response_simple(req, 404, "Not Found", body, bodylen);
			return false;
		case STATIC_PATH_OK:
			break;
	}
	mh = handlers_of(m);
	if (mh == NULL || mh->rootfd < 0 || mh->root_real == NULL)
	{
		response_simple(req, 404, "Not Found", body, bodylen);
		return false;
	}
	/* The prefix itself ("/app"): the handler redirects to "/app/". */
	if (restlen == 0)
	{
		drop_ranges(req);
		if (run_handler(mh->plain, req, m, decoded, len, NULL))
			return true;
		response_simple(req, 404, "Not Found", body, bodylen);
		return false;
	}

	/* Whether a .gz sibling is sent depends on Accept-Encoding, for every file. */
	if (mh->gz != NULL)
		h2o_set_header_token(&req->pool, &req->res.headers, H2O_TOKEN_VARY,
							 H2O_STRLIT("accept-encoding"));
	/* The size of the file sent is needed only to read a Range. */
	st = h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1) != -1 ? &st_buf : NULL;
	target = target_of(req, m, decoded, len);
	switch (target == NULL ? LOOKUP_MISSING : look_up(req, mh, m->directory, target, st))
	{
		case LOOKUP_FOUND:
			h = mh->plain;
			/* A .gz sibling must stay inside the directory too. */
			if (mh->gz != NULL && takes_gzip(req) &&
				look_up(req, mh, m->directory,
						h2o_concat(&req->pool, h2o_iovec_init(target, strlen(target)),
								   h2o_iovec_init(H2O_STRLIT(".gz"))).base, st) == LOOKUP_FOUND)
				h = mh->gz;
			if (run_handler(h, req, m, decoded, len, st))
				return true;
			break;
		case LOOKUP_MISSING:
			if (mh->spa != NULL &&
				look_up(req, mh, m->directory, m->index_file, st) == LOOKUP_FOUND &&
				run_handler(mh->spa, req, m, decoded, len, st))
				return true;
			break;
		case LOOKUP_OUTSIDE:
			break;
	}
	response_simple(req, 404, "Not Found", body, bodylen);
	return false;
}

/* Defines webgres.static_max_ranges; from _PG_init. */
void
static_files_define_settings(void)
{
	DefineCustomIntVariable("webgres.static_max_ranges",
							"Most byte ranges a request for a static file may ask for.",
							"A Range header listing more is ignored and the whole file is "
							"sent (200). Overlapping and nearly adjacent ranges are merged "
							"first, so a body is never larger than the file and a part "
							"header per range.",
							&webgres_static_max_ranges,
							STATIC_MAX_RANGES_DEFAULT,
							1, BYTE_RANGES_LIMIT,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}
