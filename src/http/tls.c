/*
 * tls.c
 *		TLS listeners: certificates, handshakes, HTTP/2 or HTTP/1.1 by ALPN.
 *
 * libh2o does the TLS itself: its sockets encrypt and decrypt with the
 * OpenSSL it links, h2o_ssl_register_alpn_protocols() answers ALPN, and
 * the accept context's ssl_ctx names the certificate.  What webgres does
 * by hand is the step between the end of the handshake and HTTP: h2o's
 * h2o_accept() would start its HTTP/2 connection itself, which parses
 * frames at once, before webgres' HTTP/2 screening (h2_guard.c) could
 * stand in front of it.  So the handshake is started here with
 * h2o_socket_ssl_handshake(), bounded by webgres.header_timeout, and its
 * end starts HTTP/1.1 with h2o_http1_accept() or HTTP/2 through
 * h2_guard_accepted_tls(), as h2o's own accept would, with the screening
 * in place.
 *
 * A reload reads the certificate and key again into a new SSL_CTX that
 * new connections use.  OpenSSL counts the references to a context: an
 * open connection keeps the one it started with, and a handshake that has
 * not yet created its SSL holds a reference of its own until it ends.
 */
#include "postgres.h"

#include <ctype.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/http1.h>

#include "http/capacity.h"
#include "http/h2_guard.h"
#include "http/listen.h"
#include "http/timeouts.h"
#include "http/tls.h"
#include "http/tls_tickets.h"
#include "message/response.h"
#include "message/response_abort.h"
#include "serve/phase.h"

/* Mozilla's "intermediate" profile: the key exchange groups. */
/* webgres.tls_min_version's values. */
#define TLS_V1_2 12
#define TLS_V1_3 13

/* Mozilla's "intermediate" profile (version 5.7) for TLS 1.2 and TLS 1.3. */
#define INTERMEDIATE_CIPHERS \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" \
	"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
#define INTERMEDIATE_CIPHERSUITES \
	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

/* The TLS settings (tls_define_settings); read elsewhere through tls_listen_setting(). */
static char *webgres_tls_listen;
static char *webgres_tls_cert_file;
static char *webgres_tls_key_file;
static char *webgres_tls_sni_cert_file;
static char *webgres_tls_sni_key_file;
static int	webgres_tls_min_version;
static char *webgres_tls_ciphers;
static char *webgres_tls_ciphersuites;
static bool webgres_tls_redirect;

#define TLS_GROUPS "X25519:prime256v1:secp384r1"

/* Names the server's sessions for resumption; any constant will do. */
#define TLS_SESSION_ID_CONTEXT "webgres"

/* The port a redirect leaves out of its URL. */
#define HTTPS_DEFAULT_PORT 443

/* Longest host name a redirect repeats (RFC 1035's limit, with brackets and room). */
#define REDIRECT_HOST_MAX 260

/* What ALPN offers, in the server's order of preference. */
static const h2o_iovec_t alpn_protocols[] = {
	{H2O_STRLIT("h2")},
	{H2O_STRLIT("http/1.1")},
	{NULL, 0}
};

/* A connection whose handshake is under way. */
typedef struct TlsHandshake
{
	h2o_socket_t *sock;
	SSL_CTX    *ssl_ctx;		/* a reference, held until the handshake ends */
	h2o_timeout_entry_t timeout;
	struct timeval connected_at;
} TlsHandshake;

static SSL_CTX *current_ctx;	/* what new connections get */
static h2o_accept_ctx_t tls_accept_ctx;
static h2o_timeout_t handshake_timeout;
static MemoryContext tls_cxt;
static int	redirect_port;		/* the first webgres.tls_listen port; 0: no TLS */
static int	sni_index = -1;		/* a context's ex_data slot for the second certificate's */

/* OpenSSL's first queued error as text, and the queue emptied. */
static const char *
openssl_error(void)
{
	static char buf[256];
	unsigned long code = ERR_get_error();

	ERR_clear_error();
	if (code == 0)
		return "no further detail from OpenSSL";
	ERR_error_string_n(code, buf, sizeof(buf));
	return buf;
}

/* A key file is never asked for a passphrase: a worker has no terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	return -1;
}

/* A certificate and its key, as two settings name them. */
typedef struct CertFiles
{
	const char *cert_setting;
	const char *cert;
	const char *key_setting;
	const char *key;
	const char *needed_by;		/* the setting that calls for them */
} CertFiles;

/* Whether a setting names a file the server can read; reports at elevel if not. */
static bool
file_usable(const char *setting, const char *path, const char *needed_by, int elevel)
{
	if (path == NULL || path[0] == '\0')
	{
		ereport(elevel,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("%s is not set, but %s is", setting, needed_by),
				 errhint("Name a PEM file in %s, or empty %s.", setting, needed_by)));
		return false;
	}
	if (access(path, R_OK) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not read %s \"%s\": %m", setting, path)));
		return false;
	}
	return true;
}

/* Loads a certificate chain and its key into ctx; reports at elevel if they cannot be used. */
static bool
load_certificate(SSL_CTX *ctx, const CertFiles *f, int elevel)
{
	if (!file_usable(f->cert_setting, f->cert, f->needed_by, elevel) ||
		!file_usable(f->key_setting, f->key, f->needed_by, elevel))
		return false;
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1)
	{
		ereport(elevel,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("could not load %s \"%s\": %s", f->cert_setting, f->cert, openssl_error()),
				 errhint("The file must hold the server certificate in PEM, then any intermediate certificates.")));
		return false;
	}
	/* OpenSSL checks the key against the certificate as it loads it. */
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1 ||
		SSL_CTX_check_private_key(ctx) != 1)
	{
		if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
			ereport(elevel,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("%s \"%s\" does not match the certificate in %s \"%s\"",
							f->key_setting, f->key, f->cert_setting, f->cert),
					 errhint("Install the key and the certificate as one pair.")));
		else
			ereport(elevel,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("could not load %s \"%s\": %s", f->key_setting, f->key, openssl_error()),
					 errhint("The file must hold an unencrypted private key in PEM.")));
		ERR_clear_error();
		return false;
	}
	return true;
}

/* Applies the protocol settings to ctx; reports at elevel if OpenSSL refuses one. */
static bool
set_protocols(SSL_CTX *ctx, int elevel)
{
	int			min_version = (webgres_tls_min_version == TLS_V1_3) ?
		TLS1_3_VERSION : TLS1_2_VERSION;

	/* No renegotiation (a client could make the server redo the costly part at will), no compression (CRIME). */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* An idle connection gives back its 34 kB of record buffers. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_dh_auto(ctx, 1);
	if (SSL_CTX_set_min_proto_version(ctx, min_version) != 1 ||
		SSL_CTX_set1_groups_list(ctx, TLS_GROUPS) != 1 ||
		SSL_CTX_set_session_id_context(ctx, (const unsigned char *) TLS_SESSION_ID_CONTEXT,
									   sizeof(TLS_SESSION_ID_CONTEXT) - 1) != 1)
	{
		ereport(elevel,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not set up TLS: %s", openssl_error())));
		return false;
	}
	if (SSL_CTX_set_cipher_list(ctx, webgres_tls_ciphers) != 1)
	{
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for webgres.tls_ciphers: %s", openssl_error())));
		return false;
	}
	if (SSL_CTX_set_ciphersuites(ctx, webgres_tls_ciphersuites) != 1)
	{
		ereport(elevel,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for webgres.tls_ciphersuites: %s", openssl_error())));
		return false;
	}
	h2o_ssl_register_alpn_protocols(ctx, alpn_protocols);
	/* Session tickets any worker can decrypt, under keys that rotate. */
	tls_tickets_install(ctx);
	return true;
}

/*
 * A new server context for a certificate, or NULL after reporting at
 * elevel what is wrong (at FATAL, it does not return).
 */
static SSL_CTX *
new_context(const CertFiles *f, int elevel)
{
	SSL_CTX    *ctx;

	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL)
	{
		ereport(elevel,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create a TLS context: %s", openssl_error())));
		return NULL;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	if (!load_certificate(ctx, f, elevel) || !set_protocols(ctx, elevel))
	{
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* Frees the second certificate's context with the context that holds it. */
static void
free_second(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	if (ptr != NULL)
		SSL_CTX_free((SSL_CTX *) ptr);
}

/*
 * OpenSSL's server name callback: a client whose SNI host name the second
 * certificate covers (its subjectAltName, wildcards included) gets it.
 * The second context hangs off the one the handshake started with, which
 * the handshake holds a reference to, so a reload cannot free it meanwhile.
 */
static int
on_servername(SSL *ssl, int *alert, void *arg)
{
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	SSL_CTX    *second = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), sni_index);
	X509	   *cert = second ? SSL_CTX_get0_certificate(second) : NULL;

	if (name != NULL && cert != NULL && X509_check_host(cert, name, 0, 0, NULL) == 1)
		SSL_set_SSL_CTX(ssl, second);
	return SSL_TLSEXT_ERR_OK;
}

/*
 * The server's context from the settings, with the second certificate if
 * one is set; NULL after reporting at elevel what is wrong.
 */
static SSL_CTX *
build_context(int elevel)
{
	CertFiles	primary = {"webgres.tls_cert_file", webgres_tls_cert_file,
	"webgres.tls_key_file", webgres_tls_key_file, "webgres.tls_listen"};
	CertFiles	sni = {"webgres.tls_sni_cert_file", webgres_tls_sni_cert_file,
	"webgres.tls_sni_key_file", webgres_tls_sni_key_file, NULL};
	SSL_CTX    *ctx = new_context(&primary, elevel);
	SSL_CTX    *second;

	if (ctx == NULL)
		return NULL;
	if (sni.cert[0] == '\0' && sni.key[0] == '\0')
		return ctx;
	sni.needed_by = sni.cert[0] ? sni.cert_setting : sni.key_setting;
	if ((second = new_context(&sni, elevel)) == NULL)
	{
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_ex_data(ctx, sni_index, second);
	SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
	return ctx;
}

/* For a GUC check hook: whether OpenSSL accepts a cipher list (or TLS 1.3 suites). */
static bool
tls_check_ciphers(const char *list, bool tls13)
{
	SSL_CTX    *ctx = SSL_CTX_new(TLS_server_method());
	int			ok;

	if (ctx == NULL)
		return true;			/* checked again when the context is built */
	ok = tls13 ? SSL_CTX_set_ciphersuites(ctx, list ? list : "") :
		SSL_CTX_set_cipher_list(ctx, list ? list : "");
	SSL_CTX_free(ctx);
	if (ok != 1)
	{
		GUC_check_errdetail("OpenSSL does not accept it: %s", openssl_error());
		GUC_check_errhint("Write a colon-separated list of %s, as \"openssl ciphers -v\" shows them.",
						  tls13 ? "TLS 1.3 cipher suites" : "TLS 1.2 ciphers");
		return false;
	}
	ERR_clear_error();
	return true;
}

/* Ends the wait for a handshake: the timer, the context reference, the state. */
static struct timeval
handshake_done(TlsHandshake *hs)
{
	struct timeval connected_at = hs->connected_at;

	hs->sock->data = NULL;
	h2o_timeout_unlink(&hs->timeout);
	SSL_CTX_free(hs->ssl_ctx);
	pfree(hs);
	return connected_at;
}

/* The client did not finish its handshake within webgres.header_timeout. */
static void
on_handshake_timeout(h2o_timeout_entry_t *entry)
{
	TlsHandshake *hs = H2O_STRUCT_FROM_MEMBER(TlsHandshake, timeout, entry);
	h2o_socket_t *sock = hs->sock;

	(void) handshake_done(hs);
	response_abort_reset_on_close(h2o_socket_get_fd(sock));
	h2o_socket_close(sock);
}

/* The handshake ended: HTTP/2 or HTTP/1.1 as ALPN chose, or the connection closed. */
static void
on_handshake(h2o_socket_t *sock, const char *err)
{
	struct timeval connected_at = handshake_done((TlsHandshake *) sock->data);
	h2o_iovec_t proto;

	if (err != NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("webgres closed a connection whose TLS handshake failed: %s", err)));
		h2o_socket_close(sock);
		return;
	}
	proto = h2o_socket_ssl_get_selected_protocol(sock);
	if (h2o_memis(proto.base, proto.len, H2O_STRLIT("h2")))
		h2_guard_accepted_tls(&tls_accept_ctx, sock, connected_at);
	else
		h2o_http1_accept(&tls_accept_ctx, sock, connected_at);
}

/* Starts the handshake of a connection accepted from a TLS listener. */
static void
tls_accept(h2o_socket_t *sock)
{
	TlsHandshake *hs = MemoryContextAllocZero(tls_cxt, sizeof(TlsHandshake));

	hs->sock = sock;
	hs->ssl_ctx = current_ctx;
	SSL_CTX_up_ref(current_ctx);
	hs->connected_at = *h2o_get_timestamp(tls_accept_ctx.ctx, NULL, NULL);
	hs->timeout.cb = on_handshake_timeout;
	h2o_timeout_link(tls_accept_ctx.ctx->loop, &handshake_timeout, &hs->timeout);
	sock->data = hs;
	h2o_socket_ssl_handshake(sock, current_ctx, NULL, on_handshake);
}

/* Ends the worker if a TLS address could share a port with a cleartext one. */
static void
check_ports_apart(ListenAddress *tls, int ntls)
{
	ListenAddress *plain;
	int			nplain;
	char	   *error;

	if (!listen_parse(listen_setting(), &plain, &nplain, &error))
		return;					/* the cleartext listeners have reported it */
	for (int i = 0; i < ntls; i++)
		for (int j = 0; j < nplain; j++)
			if (listen_overlaps(&tls[i], &plain[j]))
				ereport(FATAL,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("webgres.tls_listen entry \"%s\" shares its port with webgres.listen entry \"%s\"",
								tls[i].text, plain[j].text),
						 errhint("TLS needs a port of its own, such as 8443.")));
}

/* Opens the webgres.tls_listen sockets and loads the certificate; once per worker. */
void
tls_start(h2o_accept_ctx_t *plain, TlsListenerCallback on_accept)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;
	const char *p = webgres_tls_listen ? webgres_tls_listen : "";

	p += strspn(p, " \t");
	if (*p == '\0')
		return;
	if (!listen_parse(webgres_tls_listen, &addrs, &naddrs, &error))
		ereport(FATAL,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for webgres.tls_listen: %s", error)));
	check_ports_apart(addrs, naddrs);

	sni_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, free_second);
	current_ctx = build_context(FATAL);
	tls_accept_ctx = *plain;
	tls_accept_ctx.ssl_ctx = current_ctx;
	tls_cxt = AllocSetContextCreate(TopMemoryContext, "webgres tls", ALLOCSET_SMALL_SIZES);
	h2o_timeout_init(plain->ctx->loop, &handshake_timeout, timeouts_header_ms());

	for (int i = 0; i < naddrs; i++)
	{
		int			fd = listen_open(&addrs[i], "webgres.tls_listen");
		h2o_socket_t *sock = h2o_evloop_socket_create(plain->ctx->loop, fd, H2O_SOCKET_FLAG_DONT_READ);

		capacity_add_listener(sock, on_accept, tls_accept);
	}
	redirect_port = listen_port(&addrs[0]);
}

/* After a reload: loads the certificate again, keeping the old one on failure. */
void
tls_reload(void)
{
	SSL_CTX    *ctx;
	X509	   *before;
	X509	   *after;

	if (current_ctx == NULL)
		return;
	/* The handshakes under way keep the length they started with. */
	handshake_timeout.timeout = timeouts_header_ms();
	ctx = build_context(LOG);
	if (ctx == NULL)
	{
		ereport(LOG,
				(errmsg("webgres worker keeps serving the TLS certificate it had")));
		return;
	}
	before = SSL_CTX_get0_certificate(current_ctx);
	after = SSL_CTX_get0_certificate(ctx);
	if (before == NULL || after == NULL || X509_cmp(before, after) != 0)
		ereport(LOG,
				(errmsg("webgres worker serves the certificate in webgres.tls_cert_file \"%s\" to new connections",
						webgres_tls_cert_file)));
	/* Open connections hold references of their own. */
	SSL_CTX_free(current_ctx);
	current_ctx = ctx;
	tls_accept_ctx.ssl_ctx = ctx;
}

/* The host of an authority ("host", "host:port", "[v6]:port"), or false if it is not one. */
static bool
authority_host(h2o_iovec_t authority, h2o_iovec_t *host)
{
	size_t		len = authority.len;
	const char *s = authority.base;

	if (len > 0 && s[0] == '[')
	{
		const char *close = memchr(s, ']', len);

		if (close == NULL)
			return false;
		len = close - s + 1;
		for (size_t i = 1; i + 1 < len; i++)
			if (!isxdigit((unsigned char) s[i]) && s[i] != ':' && s[i] != '.')
				return false;
	}
	else
	{
		const char *colon = memchr(s, ':', len);

		if (colon != NULL)
			len = colon - s;
		for (size_t i = 0; i < len; i++)
			if (!isalnum((unsigned char) s[i]) && s[i] != '-' && s[i] != '.')
				return false;
	}
	if (len == 0 || len > REDIRECT_HOST_MAX)
		return false;
	*host = h2o_iovec_init(s, len);
	return true;
}

/* With webgres.tls_redirect, answers a cleartext request with 308; false then. */
static bool
tls_redirect_check(h2o_req_t *req, char **body, size_t *bodylen)
{
	h2o_iovec_t host;
	char		port[16] = "";
	char	   *location;
	size_t		len;

	if (!webgres_tls_redirect || redirect_port == 0 || req->scheme == &H2O_URL_SCHEME_HTTPS)
		return true;
	if (!authority_host(req->authority, &host))
	{
		response_simple(req, 400, "the request names no host to redirect to", body, bodylen);
		return false;
	}
	if (redirect_port != HTTPS_DEFAULT_PORT)
		snprintf(port, sizeof(port), ":%d", redirect_port);
	len = strlen("https://") + host.len + strlen(port) + req->path.len;
	location = h2o_mem_alloc_pool(&req->pool, len + 1);
	snprintf(location, len + 1, "https://%.*s%s%.*s", (int) host.len, host.base, port,
			 (int) req->path.len, req->path.base);
	response_simple(req, 308, "Permanent Redirect", body, bodylen);
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, location, len);
	return false;
}

/* PHASE_REDIRECT: a cleartext request answered 308; false then. */
static bool
redirect_phase(PhaseRequest *pr, const Route *unused)
{
	return tls_redirect_check(pr->req, pr->body, pr->bodylen);
}

/* Whether webgres.tls_redirect is on. */
static bool
redirect_enabled(const RouteTable *unused)
{
	return webgres_tls_redirect;
}

/* The module: webgres.tls_redirect. */
const PhaseModule tls_redirect_module = {
	.name = "tls_redirect",
	.enabled = redirect_enabled,
	.hooks = {[PHASE_REDIRECT] = redirect_phase}
};

/*
 * webgres.tls_listen: empty or blank (no TLS), or a list as webgres.listen
 * takes.
 */
static bool
check_listen(char **newval, void **extra, GucSource source)
{
	ListenAddress *addrs;
	int			naddrs;
	char	   *error;
	const char *p = *newval ? *newval : "";

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || listen_parse(*newval, &addrs, &naddrs, &error))
		return true;
	GUC_check_errdetail("%s", error);
	GUC_check_errhint("Use a comma-separated list of host:port entries, for example '127.0.0.1:8080' or '0.0.0.0:8080,[::]:8080'.");
	return false;
}

/* webgres.tls_ciphers: a list OpenSSL accepts for TLS 1.2. */
static bool
check_ciphers(char **newval, void **extra, GucSource source)
{
	return tls_check_ciphers(*newval, false);
}

/* webgres.tls_ciphersuites: a list OpenSSL accepts for TLS 1.3. */
static bool
check_ciphersuites(char **newval, void **extra, GucSource source)
{
	return tls_check_ciphers(*newval, true);
}

/* webgres.tls_min_version's names. */
static const struct config_enum_entry tls_version_options[] = {
	{"TLSv1.2", TLS_V1_2, false},
	{"TLSv1.3", TLS_V1_3, false},
	{NULL, 0, false}
};

/* webgres.tls_listen as written, "" when unset (tls.h). */
const char *
tls_listen_setting(void)
{
	return webgres_tls_listen != NULL ? webgres_tls_listen : "";
}

/* Defines the TLS settings (docs/tls.md); from define_settings(). */
void
tls_define_settings(void)
{
	DefineCustomStringVariable("webgres.tls_listen",
							   "Addresses the HTTP workers serve TLS on.",
							   "A comma-separated list of host:port entries, as for "
							   "webgres.listen, on ports of their own. Each connection "
							   "negotiates HTTP/2 or HTTP/1.1 by ALPN. Empty serves no TLS.",
							   &webgres_tls_listen,
							   "",
							   PGC_POSTMASTER,
							   0,
							   check_listen, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_cert_file",
							   "PEM file with the server certificate, then any intermediate certificates.",
							   "Relative paths are relative to the data directory. Read again "
							   "on reload; connections already open keep the certificate "
							   "they started with.",
							   &webgres_tls_cert_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_key_file",
							   "PEM file with the private key of webgres.tls_cert_file.",
							   "Relative paths are relative to the data directory. The key "
							   "must not be encrypted. Read again on reload.",
							   &webgres_tls_key_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_sni_cert_file",
							   "PEM file with a second certificate, for the host names it covers.",
							   "A client whose TLS server name (SNI) this certificate's "
							   "subjectAltName covers gets it; every other client gets "
							   "webgres.tls_cert_file. Empty: one certificate for all.",
							   &webgres_tls_sni_cert_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_sni_key_file",
							   "PEM file with the private key of webgres.tls_sni_cert_file.",
							   "Relative paths are relative to the data directory. The key "
							   "must not be encrypted.",
							   &webgres_tls_sni_key_file,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);

	DefineCustomEnumVariable("webgres.tls_min_version",
							 "Oldest TLS version a client may use.",
							 "TLS 1.0 and 1.1 are never offered.",
							 &webgres_tls_min_version,
							 TLS_V1_2,
							 tls_version_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_ciphers",
							   "Cipher list for TLS 1.2, in OpenSSL's syntax.",
							   "The default is Mozilla's \"intermediate\" profile: forward "
							   "secret AEAD ciphers only.",
							   &webgres_tls_ciphers,
							   INTERMEDIATE_CIPHERS,
							   PGC_SIGHUP,
							   0,
							   check_ciphers, NULL, NULL);

	DefineCustomStringVariable("webgres.tls_ciphersuites",
							   "Cipher suites for TLS 1.3, in OpenSSL's syntax.",
							   "The default is Mozilla's \"intermediate\" profile, which is "
							   "OpenSSL's own default.",
							   &webgres_tls_ciphersuites,
							   INTERMEDIATE_CIPHERSUITES,
							   PGC_SIGHUP,
							   0,
							   check_ciphersuites, NULL, NULL);

	DefineCustomBoolVariable("webgres.tls_redirect",
							 "Answers requests that arrive without TLS with a redirect to HTTPS.",
							 "A request on a webgres.listen address is answered 308 with a "
							 "Location on the host it named and the first webgres.tls_listen "
							 "port. Has no effect when webgres.tls_listen is empty.",
							 &webgres_tls_redirect,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}
