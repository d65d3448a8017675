/*
 * security_headers.c
 *		Server and X-Content-Type-Options: nosniff on every response, and
 *		Strict-Transport-Security on every response sent over TLS.
 *
 * A response filter, so that every answer gets them whatever made it: a
 * handler, a constant route from memory, an executor, a stream, an event
 * stream, a static file, webgres' own refusals, libh2o's own errors (its
 * host's fallback path) and the metrics listeners.  Only the two answers
 * libh2o and webgres write to the socket as fixed bytes go without: the
 * 400 to a request head libh2o cannot parse and the 408 of a head that
 * never ends (http/timeouts.c, cleartext only); neither has a body a
 * browser would render.
 *
 * Server and nosniff cost one entry each in the response's header vector,
 * name and value built once: no allocation and no formatting per response.
 * Server is added here rather than by libh2o (its server_name is left
 * empty, http/worker.c), because libh2o 2.2.5 formats that line with
 * sprintf() for every HTTP/1 response: a tenth of the user-space
 * instructions of a /json request went to its two sprintf() calls
 * (docs/performance.md).  The WebSocket upgrade's 101, which libh2o
 * writes without passing the filters, gets it from events/ws_socket.c.  HSTS
 * is added only on TLS connections, never in cleartext (RFC 6797 7.2: a
 * host must not send it over plain HTTP), with the value copied into the
 * request's pool, as a reload may free the setting's string before the
 * response's headers are written.  A handler that sets either header
 * itself keeps its own.
 */
#include "postgres.h"

#include "utils/guc.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "core/settings.h"
#include "http/security_headers.h"
#include "serve/phase.h"

/* webgres.nosniff and webgres.hsts (security_headers_define_settings). */
static bool webgres_nosniff = true;
static char *webgres_hsts;

static const h2o_iovec_t server_value = {(char *) WEBGRES_SERVER_NAME, sizeof(WEBGRES_SERVER_NAME) - 1};
static h2o_iovec_t nosniff_name = {(char *) "x-content-type-options", sizeof("x-content-type-options") - 1};
static const h2o_iovec_t nosniff_value = {(char *) "nosniff", sizeof("nosniff") - 1};

/* Whether req came on a TLS connection (not what its client claims). */
static bool
over_tls(h2o_req_t *req)
{
	h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ?
		req->conn->callbacks->get_socket(req->conn) : NULL;

	return sock != NULL && sock->ssl != NULL;
}

/* The filter: adds the headers, then hands on down the chain. */
static void
on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
	h2o_headers_t *headers = &req->res.headers;

	if (h2o_find_header(headers, H2O_TOKEN_SERVER, -1) == -1)
	{
		h2o_vector_reserve(&req->pool, headers, headers->size + 1);
		headers->entries[headers->size++] = (h2o_header_t) {&H2O_TOKEN_SERVER->buf, NULL, server_value};
	}
	if (webgres_nosniff &&
		h2o_find_header_by_str(headers, nosniff_name.base, nosniff_name.len, -1) == -1)
	{
		h2o_vector_reserve(&req->pool, headers, headers->size + 1);
		headers->entries[headers->size++] = (h2o_header_t) {&nosniff_name, NULL, nosniff_value};
	}
	if (webgres_hsts[0] != '\0' && over_tls(req) &&
		h2o_find_header(headers, H2O_TOKEN_STRICT_TRANSPORT_SECURITY, -1) == -1)
	{
		h2o_iovec_t v = h2o_strdup(&req->pool, webgres_hsts, strlen(webgres_hsts));

		h2o_add_header(&req->pool, headers, H2O_TOKEN_STRICT_TRANSPORT_SECURITY, NULL, v.base, v.len);
	}
	h2o_setup_next_ostream(req, slot);
}

/*
 * Whether the filter is on the paths' lists: always, since it writes the
 * Server header libh2o no longer does, whatever nosniff and HSTS are.
 */
static bool
security_headers_enabled(void)
{
	return true;
}

/*
 * The module: a filter on every path, libh2o's own answers and the metrics
 * listeners' included (http/response_phase_list.h).
 */
const FilterModule security_headers_filter = {
	"security_headers", security_headers_enabled, true, on_setup_ostream
};

/* Skips spaces and tabs at *p. */
static void
skip_ows(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/*
 * Checks a Strict-Transport-Security value (RFC 6797 6.1): directives
 * separated by ';', each a name with an optional "=" value, max-age among
 * them once, with a number of seconds; printable ASCII only.
 * Empty is allowed (no header).  On false, *detail says what is wrong.
 */
bool
security_headers_check_hsts(const char *value, const char **detail)
{
	const char *p = value;
	bool		max_age = false;

	for (const char *c = value; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
		{
			*detail = "The value may hold printable ASCII characters only.";
			return false;
		}
	if (*value == '\0')
		return true;
	for (;;)
	{
		const char *name;
		size_t		namelen;

		skip_ows(&p);
		name = p;
		while (*p && *p != ';' && *p != '=' && *p != ' ' && *p != '\t')
			p++;
		namelen = p - name;
		skip_ows(&p);
		if (namelen == 0)
		{
			*detail = "A directive has no name.";
			return false;
		}
		if (namelen == 7 && pg_strncasecmp(name, "max-age", 7) == 0)
		{
			const char *digits;
			bool		quoted;

			if (max_age || *p != '=')
			{
				*detail = "max-age must be given once, with a number of seconds.";
				return false;
			}
			p++;
			skip_ows(&p);
			quoted = (*p == '"');
			p += quoted;
			for (digits = p; *p >= '0' && *p <= '9'; p++)
				;
			if (p == digits || (quoted && *p++ != '"'))
			{
				*detail = "max-age must be a number of seconds.";
				return false;
			}
			max_age = true;
		}
		else if (*p == '=')
		{
			/* Another directive's value: a token or a quoted string. */
			for (p++; *p && *p != ';'; p++)
				;
		}
		skip_ows(&p);
		if (*p == '\0')
			break;
		if (*p++ != ';')
		{
			*detail = "Directives are separated by semicolons.";
			return false;
		}
	}
	if (!max_age)
	{
		*detail = "The max-age directive is required.";
		return false;
	}
	return true;
}

/* webgres.hsts: empty, or a Strict-Transport-Security value with max-age. */
static bool
check_hsts(char **newval, void **extra, GucSource source)
{
	const char *detail;

	if (security_headers_check_hsts(*newval, &detail))
		return true;
	GUC_check_errdetail("%s", detail);
	GUC_check_errhint("Write a Strict-Transport-Security value, as \"max-age=31536000; includeSubDomains\".");
	return false;
}

/* Defines webgres.nosniff and webgres.hsts; from _PG_init. */
void
security_headers_define_settings(void)
{
	DefineCustomBoolVariable("webgres.nosniff",
							 "Sends X-Content-Type-Options: nosniff with every response.",
							 "Browsers then take each response for the Content-Type it "
							 "declares rather than guess, so that text a client uploaded is "
							 "never run as a script. A handler's own header is kept.",
							 &webgres_nosniff,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.hsts",
							   "Strict-Transport-Security value sent with every response over TLS.",
							   "Such as \"max-age=31536000; includeSubDomains\": browsers then use "
							   "only https:// for the host for that long. Never sent in "
							   "cleartext; empty sends none.",
							   &webgres_hsts,
							   "",
							   PGC_SIGHUP,
							   0,
							   check_hsts, NULL, NULL);
}
