/*
 * route_names.h
 *		A route's method and path pattern by id, from the route table as
 *		this process last loaded it: for labels and log lines written
 *		outside a transaction.
 */
#ifndef WEBGRES_ROUTE_NAMES_H
#define WEBGRES_ROUTE_NAMES_H

/*
 * Finds route_id's method (NULL for any method) and path pattern; false if
 * no table this process loaded has it.  The strings stay valid until the
 * next call after the table is reloaded.
 */
extern bool route_names_lookup(int64 route_id, const char **method, const char **path);

#endif
