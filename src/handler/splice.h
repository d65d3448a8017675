/*
 * splice.h
 *		Gives a handler its `request` relation.
 *
 * A handler is one SQL statement that may name the relation `request`.  It is
 * parsed with Postgres' raw parser and a CTE over bind parameters $1..$7 is
 * spliced into its top-level WITH clause (or a WITH clause is added), at the
 * positions the parser reports, so a handler's own CTEs, set operations,
 * ORDER BY and data-modifying statements keep working.  Request data only
 * ever reaches SQL as parameter values.
 */
#ifndef WEBGRES_SPLICE_H
#define WEBGRES_SPLICE_H

#include "executor/spi.h"

#include "message/request.h"

typedef struct SplicedHandler
{
	const char *handler;		/* as written by the user */
	char	   *sql;			/* with the request CTE spliced in (while preparing) */
	int			insert_at;		/* byte offset of the inserted text */
	int			insert_len;		/* its length in bytes (ASCII) */
	bool		is_select;		/* top-level statement is a SELECT or VALUES */
} SplicedHandler;

/*
 * Splices and prepares handler as the current user, with a generic plan.
 * Errors name positions in the handler as written (internal query and
 * position, as PL/pgSQL reports embedded SQL).  The plan is not kept.  The
 * spliced text lives in the current memory context and is needed only
 * while preparing (the plan keeps its own copy); sh itself must outlive the
 * plan, since revalidating it parses that copy again with sh as the parser
 * hook's state.
 */
extern SPIPlanPtr handler_prepare(const char *handler, SplicedHandler *sh);

#endif
