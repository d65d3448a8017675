/*
 * cors_policy.c
 *		What CORS allows for a route: the webgres.cors_* settings, each
 *		route's cors_* columns over them, and the checks both pass on the
 *		way in (the settings' check hooks, the routes trigger).
 *
 * Lists are checked and normalised once, when a setting is set or the
 * route table is loaded, so that a request only compares strings.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "core/pg_compat.h"
#include "serve/cors.h"
#include "serve/cors_policy.h"
#include "parse/cors_syntax.h"

/* The route columns, in the order the loading query reads them. */
static const char *const column_names[] = {
	"cors_allowed_origins", "cors_allowed_methods", "cors_allowed_headers",
	"cors_exposed_headers", "cors_allow_credentials", "cors_max_age"
};
static const CorsListKind column_kinds[] = {CORS_LIST_ORIGINS, CORS_LIST_METHODS, CORS_LIST_HEADERS, CORS_LIST_HEADERS};

#define NLISTCOLUMNS 4

static const CorsList empty_list = {0};

/* A preflight's answer is kept at most a day (webgres.cors_max_age, in seconds). */
#define CORS_MAX_AGE_MAX 86400

/* The webgres.cors_* settings (cors_define_settings). */
static char *webgres_cors_allowed_origins;
static char *webgres_cors_allowed_methods;
static char *webgres_cors_allowed_headers;
static char *webgres_cors_exposed_headers;
static bool webgres_cors_allow_credentials;
static int	webgres_cors_max_age = -1;

/* The settings' lists, as their assign hooks last set them. */
static const CorsList *setting_origins = &empty_list;
static const CorsList *setting_methods = &empty_list;
static const CorsList *setting_headers = &empty_list;
static const CorsList *setting_exposed = &empty_list;

/* The routes' own columns, kept until the route table is replaced. */
static MemoryContext policy_cxt = NULL;

/* The loaded table's routes by id (in policy_cxt), to hang the policies read on them. */
static Route **routes_by_id = NULL;
static int	nroutes_by_id = 0;

/* The message for a bad entry of list name (a column or a setting). */
static char *
item_error(CorsListKind kind, const char *name, const char *item, size_t len)
{
	return psprintf("%s entry \"%.*s\" is not %s", name, (int) Min(len, CORS_MAX_ITEM), item,
					kind == CORS_LIST_ORIGINS ? "an origin" :
					kind == CORS_LIST_METHODS ? "an HTTP method" : "a header name");
}

/* The hint that goes with item_error. */
static const char *
item_hint(CorsListKind kind)
{
	if (kind == CORS_LIST_ORIGINS)
		return "Write an origin as scheme://host[:port] without a path, such as https://app.example.com; "
			"* stands for part of a host name or port (https://*.example.com), and \"*\" alone for any origin.";
	if (kind == CORS_LIST_METHODS)
		return "Use method names such as GET, PUT or DELETE.";
	return "Use header names such as Content-Type or X-Request-Id; "
		"\"*\" is not accepted: leave the list unset to allow whatever headers a preflight asks for.";
}

/*
 * Builds a list of n items (lens bytes each), normalised: methods upper
 * case, header names and origins lower case.  Allocated with guc_malloc
 * when for a setting (guc.c frees a hook's extra with guc_free(); since 16
 * that is pfree() in guc.c's own context, so plain malloc() will not do),
 * else in cxt.  NULL if guc_malloc fails.
 */
static CorsList *
list_build(CorsListKind kind, char **items, size_t *lens, int n, bool for_setting, MemoryContext cxt)
{
	Size		size = offsetof(CorsList, items) + sizeof(char *) * n;
	CorsList   *list;
	char	   *p;

	for (int i = 0; i < n; i++)
		size += lens[i] + 1;
	list = for_setting ? guc_malloc(LOG, size) : MemoryContextAlloc(cxt, size);
	if (list == NULL)
		return NULL;
	list->n = n;
	list->any = false;
	p = (char *) &list->items[n];
	for (int i = 0; i < n; i++)
	{
		list->items[i] = p;
		for (size_t j = 0; j < lens[i]; j++)
			*p++ = kind == CORS_LIST_METHODS ? pg_ascii_toupper(items[i][j]) : pg_ascii_tolower(items[i][j]);
		*p++ = '\0';
		if (kind == CORS_LIST_ORIGINS && lens[i] == 1 && items[i][0] == '*')
			list->any = true;
	}
	return list;
}

/*
 * Splits a setting's comma-separated value into its entries and checks
 * them (parse/cors_syntax.c); NULL with *error set if one is bad.
 */
static CorsList *
parse_setting(const char *value, CorsListKind kind, const char *name, char **error)
{
	int			max = cors_split_max(value);
	CorsSpan   *spans = palloc(sizeof(CorsSpan) * max);
	char	  **items = palloc(sizeof(char *) * max);
	size_t	   *lens = palloc(sizeof(size_t) * max);
	CorsSpan	bad;
	int			n = cors_split(value, kind, spans, &bad);
	CorsList   *list = NULL;

	if (n < 0)
		*error = item_error(kind, name, bad.base, bad.len);
	else
	{
		for (int i = 0; i < n; i++)
		{
			items[i] = (char *) spans[i].base;
			lens[i] = spans[i].len;
		}
		list = list_build(kind, items, lens, n, true, NULL);
		if (list == NULL)
			*error = "out of memory";
	}
	pfree(spans);
	pfree(items);
	pfree(lens);
	return list;
}

/* A list setting's check hook: parses it into *extra. */
static bool
check_list_setting(char **newval, void **extra, CorsListKind kind, const char *name)
{
	char	   *error = NULL;
	CorsList   *list = parse_setting(*newval, kind, name, &error);

	if (list == NULL)
	{
		GUC_check_errdetail("%s", error);
		GUC_check_errhint("%s", item_hint(kind));
		return false;
	}
	*extra = list;
	return true;
}

/* webgres.cors_allowed_origins: well formed, and not * with credentials. */
static bool
cors_check_origins_setting(char **newval, void **extra, GucSource source)
{
	if (!check_list_setting(newval, extra, CORS_LIST_ORIGINS, "webgres.cors_allowed_origins"))
		return false;
	if (((CorsList *) *extra)->any && webgres_cors_allow_credentials)
	{
		GUC_check_errdetail("webgres.cors_allowed_origins cannot allow any origin (\"*\") while "
							"webgres.cors_allow_credentials is on: browsers refuse credentials from such a server.");
		GUC_check_errhint("List the origins that may send credentials, or turn webgres.cors_allow_credentials off first.");
		return false;
	}
	return true;
}

/* webgres.cors_allowed_origins takes effect. */
static void
cors_assign_origins_setting(const char *newval, void *extra)
{
	setting_origins = extra ? extra : &empty_list;
}

/* webgres.cors_allowed_methods: method names. */
static bool
cors_check_methods_setting(char **newval, void **extra, GucSource source)
{
	return check_list_setting(newval, extra, CORS_LIST_METHODS, "webgres.cors_allowed_methods");
}

/* webgres.cors_allowed_methods takes effect. */
static void
cors_assign_methods_setting(const char *newval, void *extra)
{
	setting_methods = extra ? extra : &empty_list;
}

/* webgres.cors_allowed_headers: header names. */
static bool
cors_check_headers_setting(char **newval, void **extra, GucSource source)
{
	return check_list_setting(newval, extra, CORS_LIST_HEADERS, "webgres.cors_allowed_headers");
}

/* webgres.cors_allowed_headers takes effect. */
static void
cors_assign_headers_setting(const char *newval, void *extra)
{
	setting_headers = extra ? extra : &empty_list;
}

/* webgres.cors_exposed_headers: header names. */
static bool
cors_check_exposed_setting(char **newval, void **extra, GucSource source)
{
	return check_list_setting(newval, extra, CORS_LIST_HEADERS, "webgres.cors_exposed_headers");
}

/* webgres.cors_exposed_headers takes effect. */
static void
cors_assign_exposed_setting(const char *newval, void *extra)
{
	setting_exposed = extra ? extra : &empty_list;
}

/* webgres.cors_allow_credentials: never while any origin is allowed. */
static bool
cors_check_credentials_setting(bool *newval, void **extra, GucSource source)
{
	if (*newval && setting_origins->any)
	{
		GUC_check_errdetail("webgres.cors_allow_credentials cannot be on while webgres.cors_allowed_origins "
							"allows any origin (\"*\"): browsers refuse credentials from such a server.");
		GUC_check_errhint("List the origins that may send credentials in webgres.cors_allowed_origins first.");
		return false;
	}
	return true;
}

/*
 * The list in a text[] column value, checked; reports a bad entry at elevel
 * (column names the column), and returns NULL if that does not raise.  In
 * cxt.
 */
static CorsList *
list_from_array(Datum value, CorsListKind kind, const char *column, MemoryContext cxt, int elevel)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **items;
	size_t	   *lens;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	items = palloc(sizeof(char *) * Max(n, 1));
	lens = palloc(sizeof(size_t) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
		{
			ereport(elevel,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", column)));
			return NULL;
		}
		items[i] = TextDatumGetCString(elems[i]);
		lens[i] = strlen(items[i]);
		if (!cors_item_ok(kind, items[i], lens[i]))
		{
			ereport(elevel,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s", item_error(kind, column, items[i], lens[i])),
					 errhint("%s", item_hint(kind))));
			return NULL;
		}
	}
	return list_build(kind, items, lens, n, false, cxt);
}

/*
 * The policy in columns values/nulls (column_names order), or NULL if all
 * are NULL.  In cxt.  A bad list entry is reported at elevel; if that does
 * not raise, the policy allows no origin.
 */
static CorsPolicy *
policy_from_columns(Datum *values, bool *nulls, MemoryContext cxt, int elevel)
{
	CorsPolicy *p = MemoryContextAllocZero(cxt, sizeof(CorsPolicy));
	const CorsList **lists[NLISTCOLUMNS] = {&p->origins, &p->methods, &p->headers, &p->exposed};
	bool		any = false;

	for (int i = 0; i < NLISTCOLUMNS; i++)
		if (!nulls[i])
		{
			*lists[i] = list_from_array(values[i], column_kinds[i], column_names[i], cxt, elevel);
			if (*lists[i] == NULL)
			{
				/* Saved around the trigger: CORS off rather than half on. */
				p->origins = &empty_list;
				p->credentials = p->max_age = -1;
				return p;
			}
			any = true;
		}
	p->credentials = nulls[4] ? -1 : DatumGetBool(values[4]);
	p->max_age = nulls[5] ? -1 : DatumGetInt32(values[5]);
	if (!any && nulls[4] && nulls[5])
	{
		pfree(p);
		return NULL;
	}
	return p;
}

/*
 * The routes trigger's check (cors.h): entries well formed, and never
 * credentials with any origin.
 */
void
cors_check_route(HeapTuple tuple, TupleDesc desc)
{
	Datum		values[lengthof(column_names)];
	bool		nulls[lengthof(column_names)];
	CorsPolicy *p;
	const CorsList *origins;
	bool		credentials;

	for (int i = 0; i < (int) lengthof(column_names); i++)
	{
		int			att = SPI_fnumber(desc, column_names[i]);

		if (att <= 0)
			return;				/* not updated to 1.4: no CORS columns */
		values[i] = SPI_getbinval(tuple, desc, att, &nulls[i]);
	}
	p = policy_from_columns(values, nulls, CurrentMemoryContext, ERROR);
	origins = (p && p->origins) ? p->origins : setting_origins;
	credentials = (p && p->credentials >= 0) ? p->credentials : webgres_cors_allow_credentials;
	if (!origins->any || !credentials)
		return;
	if (p && p->origins && p->credentials > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a route cannot allow credentials from any origin"),
				 errdetail("cors_allowed_origins holds \"*\" and cors_allow_credentials is true; "
						   "the CORS specification forbids that, and browsers refuse such responses."),
				 errhint("List the origins that may send credentials, or set cors_allow_credentials to false.")));
	/* The rest comes from today's settings, which a restore must not depend on. */
	if (check_function_bodies)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a route cannot allow credentials from any origin"),
				 errdetail("%s", p && p->origins ?
						   "cors_allowed_origins holds \"*\", and cors_allow_credentials is NULL while webgres.cors_allow_credentials is on." :
						   "cors_allow_credentials is true, and cors_allowed_origins is NULL while webgres.cors_allowed_origins holds \"*\"."),
				 errhint("List the route's origins in cors_allowed_origins, or set cors_allow_credentials to false.")));
}

/* bsearch comparator: a route id against a route's. */
static int
id_cmp(const void *key, const void *elem)
{
	int64		id = *(const int64 *) key;
	int64		other = (*(Route *const *) elem)->id;

	return (id > other) - (id < other);
}

/* qsort comparator: routes by id. */
static int
route_id_cmp(const void *a, const void *b)
{
	return id_cmp(&(*(Route *const *) a)->id, b);
}

/*
 * The route table was loaded: indexes its routes by id, reads the cors_*
 * columns of the routes that set any and hangs them on the routes, so that
 * requests answered without a transaction have them too.  A row whose
 * columns are bad (saved around the trigger) is warned about and gets no
 * CORS; the rest of the table loads.
 */
static void
load_policies(RouteTable *table)
{
	Oid			nsp = get_namespace_oid("webgres", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("routes", nsp) : InvalidOid;
	int			rc;

	if (table->nroutes == 0)
		return;
	routes_by_id = MemoryContextAlloc(policy_cxt, sizeof(Route *) * table->nroutes);
	for (int i = 0; i < table->nroutes; i++)
		routes_by_id[i] = &table->routes[i];
	qsort(routes_by_id, table->nroutes, sizeof(Route *), route_id_cmp);
	nroutes_by_id = table->nroutes;

	if (!OidIsValid(relid) || get_attnum(relid, column_names[0]) == InvalidAttrNumber)
		return;
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute("SELECT id, cors_allowed_origins, cors_allowed_methods, cors_allowed_headers, "
					 "cors_exposed_headers, cors_allow_credentials, cors_max_age FROM webgres.routes "
					 "WHERE num_nonnulls(cors_allowed_origins, cors_allowed_methods, cors_allowed_headers, "
					 "cors_exposed_headers, cors_allow_credentials, cors_max_age) > 0",
					 true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the CORS columns of webgres.routes: %s", SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[lengthof(column_names) + 1];
		bool		nulls[lengthof(column_names) + 1];
		Route	  **found;

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, values, nulls);
		found = bsearch(&values[0], routes_by_id, nroutes_by_id, sizeof(Route *), id_cmp);
		/* A route the table left out (a bad row) has nothing to hang it on. */
		if (found != NULL)
			(*found)->cors = policy_from_columns(values + 1, nulls + 1, policy_cxt, WARNING);
	}
	SPI_finish();
}

/* The route table is being replaced: its routes' policies go with it. */
static void
forget_policies(void)
{
	routes_by_id = NULL;
	nroutes_by_id = 0;
	MemoryContextReset(policy_cxt);
}

/* Keeps the routes' CORS columns with the route table (cors.h). */
void
cors_init(void)
{
	policy_cxt = AllocSetContextCreate(TopMemoryContext, "webgres CORS",
									   ALLOCSET_SMALL_SIZES);
	routes_on_replace(forget_policies);
	routes_on_load(load_policies);
}

/* What applies to route now: its columns over the settings. */
bool
cors_effective(const Route *route, CorsEffective *e)
{
	const CorsPolicy *p = route->cors;

	e->origins = (p && p->origins) ? p->origins : setting_origins;
	if (e->origins->n == 0)
		return false;
	e->methods = (p && p->methods) ? p->methods : setting_methods;
	e->headers = (p && p->headers) ? p->headers : setting_headers;
	e->exposed = (p && p->exposed) ? p->exposed : setting_exposed;
	e->credentials = (p && p->credentials >= 0) ? p->credentials : webgres_cors_allow_credentials;
	e->max_age = (p && p->max_age >= 0) ? p->max_age : webgres_cors_max_age;
	return true;
}

/* Whether origins let origin in, by an entry or by "*" (cors_policy.h). */
bool
cors_list_allows_origin(const CorsList *origins, const char *origin, size_t len,
						bool allow_any, bool *by_entry)
{
	*by_entry = false;
	for (int i = 0; i < origins->n; i++)
		if (!(origins->items[i][0] == '*' && origins->items[i][1] == '\0') &&
			cors_origin_matches(origins->items[i], origin, len))
		{
			*by_entry = true;
			return true;
		}
	return allow_any && origins->any;
}

/* Whether list holds name (cors_policy.h). */
bool
cors_list_has(const CorsList *list, const char *name, size_t len, bool ignore_case)
{
	for (int i = 0; i < list->n; i++)
		if (strlen(list->items[i]) == len &&
			(ignore_case ? pg_strncasecmp(list->items[i], name, len) == 0 :
			 memcmp(list->items[i], name, len) == 0))
			return true;
	return false;
}

/* Defines the webgres.cors_* settings; a route's cors_* columns override each. */
void
cors_define_settings(void)
{
	DefineCustomStringVariable("webgres.cors_allowed_origins",
							   "Origins whose pages may call the routes from a browser (CORS).",
							   "A comma-separated list of origins such as https://app.example.com; "
							   "* stands for part of a host name or port (https://*.example.com), "
							   "and * alone for any origin. Empty, the default, turns CORS off for "
							   "every route that does not set cors_allowed_origins.",
							   &webgres_cors_allowed_origins,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_origins_setting, cors_assign_origins_setting, NULL);

	DefineCustomStringVariable("webgres.cors_allowed_methods",
							   "Methods a CORS preflight may ask for.",
							   "A comma-separated list of methods. Empty, the default, allows "
							   "whatever method the route the request would go to takes.",
							   &webgres_cors_allowed_methods,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_methods_setting, cors_assign_methods_setting, NULL);

	DefineCustomStringVariable("webgres.cors_allowed_headers",
							   "Request headers a CORS preflight may ask for.",
							   "A comma-separated list of header names. Empty, the default, "
							   "allows whatever headers the preflight asks for.",
							   &webgres_cors_allowed_headers,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_headers_setting, cors_assign_headers_setting, NULL);

	DefineCustomStringVariable("webgres.cors_exposed_headers",
							   "Response headers a cross-origin page's script may read.",
							   "A comma-separated list of header names, sent as "
							   "Access-Control-Expose-Headers. Empty, the default, exposes only "
							   "the headers browsers always expose.",
							   &webgres_cors_exposed_headers,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   cors_check_exposed_setting, cors_assign_exposed_setting, NULL);

	DefineCustomBoolVariable("webgres.cors_allow_credentials",
							 "Lets allowed origins send cookies and HTTP authentication (CORS).",
							 "Sends Access-Control-Allow-Credentials: true to origins named in "
							 "the allowed origins. Refused while webgres.cors_allowed_origins "
							 "allows any origin (*), as the CORS specification requires.",
							 &webgres_cors_allow_credentials,
							 false,
							 PGC_SIGHUP,
							 0,
							 cors_check_credentials_setting, NULL, NULL);

	DefineCustomIntVariable("webgres.cors_max_age",
							"How long a browser may keep a CORS preflight's answer.",
							"Sent as Access-Control-Max-Age. -1, the default, sends none, "
							"and browsers keep the answer a few seconds.",
							&webgres_cors_max_age,
							-1,
							-1, CORS_MAX_AGE_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}
