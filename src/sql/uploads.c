/*
 * uploads.c
 *		SQL-callable readers of form bodies: fields and files of url-encoded
 *		and multipart/form-data bodies (docs/uploads.md).
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "message/form_data.h"

PG_FUNCTION_INFO_V1(webgres_body_form_typed);
PG_FUNCTION_INFO_V1(webgres_body_files);

/* The Content-Type argument as a C string, or NULL. */
static const char *
content_type_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* body_form(body bytea, content_type text): the form's fields as jsonb. */
Datum
webgres_body_form_typed(PG_FUNCTION_ARGS)
{
	bytea	   *b;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	b = PG_GETARG_BYTEA_PP(0);
	PG_RETURN_JSONB_P(form_data_fields(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b),
									   content_type_arg(fcinfo, 1)));
}

/* body_files(body bytea, content_type text): the form's files, a row each. */
Datum
webgres_body_files(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bytea	   *b;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	b = PG_GETARG_BYTEA_PP(0);
	form_data_files(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), content_type_arg(fcinfo, 1),
					rsinfo->setResult, rsinfo->setDesc);
	return (Datum) 0;
}
