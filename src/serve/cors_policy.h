/*
 * cors_policy.h
 *		What CORS allows for a route: its own cors_* columns over the
 *		webgres.cors_* settings (cors_policy.c).  Used by cors.c only.
 */
#ifndef WEBGRES_CORS_POLICY_H
#define WEBGRES_CORS_POLICY_H

#include "routes/routes.h"

/*
 * A list of origins, methods or header names, checked and normalised
 * (methods upper case, header names lower case) in one allocation.
 */
typedef struct CorsList
{
	int			n;
	bool		any;			/* "*" is listed: any origin */
	char	   *items[FLEXIBLE_ARRAY_MEMBER];
} CorsList;

/* A route's own columns; a NULL column leaves the setting in force. */
typedef struct CorsPolicy
{
	const CorsList *origins;
	const CorsList *methods;
	const CorsList *headers;
	const CorsList *exposed;
	int			credentials;	/* -1: NULL, else 0 or 1 */
	int			max_age;		/* -1: NULL */
} CorsPolicy;

/* What applies to one route now: columns first, then settings. */
typedef struct CorsEffective
{
	const CorsList *origins;
	const CorsList *methods;	/* n == 0: the method asked for, if routed */
	const CorsList *headers;	/* n == 0: the headers asked for */
	const CorsList *exposed;
	bool		credentials;
	int			max_age;		/* -1: no Access-Control-Max-Age */
} CorsEffective;

/* Fills e for route; false (e unset) if it allows no origin. */
extern bool cors_effective(const Route *route, CorsEffective *e);

/*
 * Whether origins allow origin: by an entry (exact, or a pattern with *)
 * or, if allow_any, by "*".  *by_entry tells which.
 */
extern bool cors_list_allows_origin(const CorsList *origins, const char *origin,
									size_t len, bool allow_any, bool *by_entry);

/* Whether list holds name (len bytes), compared ignoring case or not. */
extern bool cors_list_has(const CorsList *list, const char *name, size_t len,
						  bool ignore_case);

#endif
