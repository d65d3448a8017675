/*
 * listen_syntax.h
 *		The syntax of webgres.listen and the other address-list settings:
 *		"host:port, [v6]:port, *:port".
 *
 * Only the text is read here, so that a fuzzer builds it with the shim in
 * fuzz/shim; http/listen.c resolves the hosts (getaddrinfo) and opens the
 * sockets.
 */
#ifndef WEBGRES_LISTEN_SYNTAX_H
#define WEBGRES_LISTEN_SYNTAX_H

#include <stdbool.h>

/* The longest entry, as written (for messages), plus its NUL. */
#define LISTEN_TEXT_MAX 128
/* The longest host (NI_MAXHOST), plus its NUL. */
#define LISTEN_HOST_MAX 1025

/* One entry of the list. */
typedef struct ListenSpec
{
	char		text[LISTEN_TEXT_MAX];	/* the entry, trimmed */
	char		host[LISTEN_HOST_MAX];	/* "*" and "" read as "0.0.0.0" */
	char		port[8];		/* digits, 1 to 65535 */
} ListenSpec;

/*
 * Splits a comma-separated list into entries; empty entries are skipped,
 * an empty list is an error.  On failure returns false and points *error
 * at a palloc'd message.
 */
extern bool listen_syntax_parse(const char *value, ListenSpec **specs, int *nspecs,
								char **error);

#endif
