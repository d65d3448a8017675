/*
 * splice.c
 *		Splices the `request` CTE into a handler and prepares it.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "nodes/parsenodes.h"
#include "parser/parse_node.h"
#include "parser/parser.h"
#include "utils/lsyscache.h"

#include "handler/splice.h"

#define REQUEST_CTE \
	"request(method, path, params, query_string, query, headers, body, tls, claims) AS " \
	"(SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9)"

/* The WITH clause of a statement, and whether it is a SELECT. */
static WithClause *
top_level_with(Node *stmt, bool *is_select)
{
	*is_select = false;
	switch (nodeTag(stmt))
	{
		case T_SelectStmt:
			*is_select = true;
			return ((SelectStmt *) stmt)->withClause;
		case T_InsertStmt:
			return ((InsertStmt *) stmt)->withClause;
		case T_UpdateStmt:
			return ((UpdateStmt *) stmt)->withClause;
		case T_DeleteStmt:
			return ((DeleteStmt *) stmt)->withClause;
		case T_MergeStmt:
			return ((MergeStmt *) stmt)->withClause;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a handler must be a SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE statement"),
					 errhint("Call other commands from a function the handler selects from.")));
	}
	return NULL;				/* keep compiler quiet */
}

/* Splices the request CTE into the handler's own WITH clause. */
static void
splice_request_cte(const char *handler, SplicedHandler *sh)
{
	List	   *stmts = raw_parser(handler, RAW_PARSE_DEFAULT);
	RawStmt    *raw;
	WithClause *with;
	StringInfoData buf;

	if (list_length(stmts) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(stmts == NIL ? "a handler must be one SQL statement, but it is empty"
						: "a handler must be one SQL statement, but it has %d", list_length(stmts))));
	raw = linitial_node(RawStmt, stmts);
	with = top_level_with(raw->stmt, &sh->is_select);

	initStringInfo(&buf);
	if (with != NULL)
	{
		/* Before the first CTE: "WITH [RECURSIVE] request(...) AS (...), a AS ..." */
		CommonTableExpr *first = linitial_node(CommonTableExpr, with->ctes);

		sh->insert_at = first->location;
		appendBinaryStringInfo(&buf, handler, sh->insert_at);
		appendStringInfoString(&buf, REQUEST_CTE ", ");
	}
	else
	{
		sh->insert_at = raw->stmt_location > 0 ? raw->stmt_location : 0;
		appendBinaryStringInfo(&buf, handler, sh->insert_at);
		appendStringInfoString(&buf, "WITH " REQUEST_CTE " ");
	}
	sh->insert_len = buf.len - sh->insert_at;
	appendStringInfoString(&buf, handler + sh->insert_at);
	sh->sql = buf.data;
}

/* Parser hook: $n inside the spliced request CTE is request parameter n. */
static Node *
request_paramref(ParseState *pstate, ParamRef *pref)
{
	SplicedHandler *sh = (SplicedHandler *) pstate->p_ref_hook_state;
	Param	   *param;

	if (pref->location < sh->insert_at ||
		pref->location >= sh->insert_at + sh->insert_len ||
		pref->number < 1 || pref->number > REQ_NPARAMS)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_PARAMETER),
				 errmsg("handlers cannot use parameter symbols such as $%d", pref->number),
				 errhint("Read request data from the request relation, as in request.params->>'id'."),
				 parser_errposition(pstate, pref->location)));

	param = makeNode(Param);
	param->paramkind = PARAM_EXTERN;
	param->paramid = pref->number;
	param->paramtype = request_param_types[pref->number - 1];
	param->paramtypmod = -1;
	param->paramcollid = get_typcollation(param->paramtype);
	param->location = pref->location;
	return (Node *) param;
}

/* Parser setup: installs request_paramref. */
static void
request_parser_setup(ParseState *pstate, void *arg)
{
	pstate->p_paramref_hook = request_paramref;
	pstate->p_ref_hook_state = arg;
}

/*
 * Moves an error's position from the spliced text back to the handler as
 * written, and reports it as an internal query so clients show the handler.
 */
static void
map_error_position(ErrorData *edata, SplicedHandler *sh)
{
	int			pos = 0;

	if (edata->internalquery != NULL && sh->sql != NULL &&
		strcmp(edata->internalquery, sh->sql) == 0)
	{
		int			at_chars = pg_mbstrlen_with_len(sh->handler, sh->insert_at);

		pos = edata->internalpos;
		if (pos > at_chars + sh->insert_len)
			pos -= sh->insert_len;
		else if (pos > at_chars)
			pos = at_chars + 1;
	}
	else if (edata->cursorpos > 0 && edata->internalquery == NULL)
		pos = edata->cursorpos;		/* from the raw parser, already in handler terms */
	else
		return;

	edata->cursorpos = 0;
	edata->internalpos = pos;
	edata->internalquery = pstrdup(sh->handler);
}

/* Splices and prepares handler as the current user, with a generic plan. */
SPIPlanPtr
handler_prepare(const char *handler, SplicedHandler *sh)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	SPIPlanPtr	plan = NULL;

	memset(sh, 0, sizeof(*sh));
	sh->handler = handler;

	PG_TRY();
	{
		SPIPrepareOptions options;

		splice_request_cte(handler, sh);

		memset(&options, 0, sizeof(options));
		options.parserSetup = request_parser_setup;
		options.parserSetupArg = sh;
		options.parseMode = RAW_PARSE_DEFAULT;
		/*
		 * Request values are fetched lazily as the executor needs them, so
		 * a custom plan could not see them anyway; a generic plan also
		 * saves replanning on every request.
		 */
		options.cursorOptions = CURSOR_OPT_GENERIC_PLAN;
		plan = SPI_prepare_extended(sh->sql, &options);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare_extended failed: %s", SPI_result_code_string(SPI_result));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		map_error_position(edata, sh);
		ReThrowError(edata);
	}
	PG_END_TRY();

	/* The plan has its own copy; this one goes with the caller's context. */
	sh->sql = NULL;
	return plan;
}
