/*
 * route_names.c
 *		A route's method and path pattern by id, outside a transaction.
 *
 * The route table itself may be known stale between requests (routes_peek()
 * then gives nothing), and it is reloaded in place of the old one; the
 * names are kept here, sorted by id, and taken again from the table
 * whenever it is found reloaded.  So a route deleted since keeps its name
 * until a table without it has been loaded.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "routes/route_names.h"
#include "routes/routes.h"

typedef struct RouteName
{
	int64		id;
	char	   *method;
	char	   *path;
} RouteName;

static MemoryContext names_cxt = NULL;
static RouteName *names = NULL;
static int	nnames = 0;
static uint64 names_generation = 0;

/* qsort and bsearch comparator of RouteName by id. */
static int
name_cmp(const void *a, const void *b)
{
	int64		x = ((const RouteName *) a)->id;
	int64		y = ((const RouteName *) b)->id;

	return (x > y) - (x < y);
}

/* Takes the names from the route table, if it was reloaded since. */
static void
refresh(void)
{
	RouteTable *table = routes_peek();

	if (table == NULL || (names != NULL && table->generation == names_generation))
		return;
	if (names_cxt == NULL)
		names_cxt = AllocSetContextCreate(TopMemoryContext, "webgres route names",
										  ALLOCSET_SMALL_SIZES);
	MemoryContextReset(names_cxt);
	names = MemoryContextAlloc(names_cxt, sizeof(RouteName) * Max(table->nroutes, 1));
	nnames = table->nroutes;
	for (int i = 0; i < table->nroutes; i++)
	{
		Route	   *r = &table->routes[i];

		names[i].id = r->id;
		names[i].method = r->method != NULL ? MemoryContextStrdup(names_cxt, r->method) : NULL;
		names[i].path = MemoryContextStrdup(names_cxt, r->path);
	}
	qsort(names, nnames, sizeof(RouteName), name_cmp);
	names_generation = table->generation;
}

/* Finds a route's method and path pattern by id, from the last table loaded. */
bool
route_names_lookup(int64 route_id, const char **method, const char **path)
{
	RouteName	key = {route_id, NULL, NULL};
	RouteName  *found;

	refresh();
	if (names == NULL)
		return false;
	found = bsearch(&key, names, nnames, sizeof(RouteName), name_cmp);
	if (found == NULL)
		return false;
	*method = found->method;
	*path = found->path;
	return true;
}
