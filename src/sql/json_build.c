/*
 * json_build.c
 *		webgres.json_build(VARIADIC "any"): a JSON object from alternating
 *		keys and values, written as json_build_object() writes each value but
 *		without spaces (json_write.c), with what the catalog says about a
 *		type asked once.
 *
 * json_build_object() asks the catalog how to write every argument on every
 * call; for {"id":..,"randomNumber":..} that was about a tenth of the
 * instructions of the request that read the row.  Here a call site resolves
 * its arguments on its first call (fn_extra) from json_write.c's per-backend
 * table of types.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "sql/json_write.h"

PG_FUNCTION_INFO_V1(webgres_json_build);

/* The arguments of one call site, resolved on its first call (fn_extra). */
typedef struct JsonBuildArgs
{
	bool		variadic_array; /* called as json_build(VARIADIC array) */
	int			nargs;			/* arguments, or 1 for the array */
	int16		elem_len;		/* the array's element type, if one */
	bool		elem_byval;
	char		elem_align;
	JsonArg		args[FLEXIBLE_ARRAY_MEMBER];
} JsonBuildArgs;

/* Sets arg up to write values of type; key: the argument is a key. */
static void
json_build_arg_init(JsonArg *arg, Oid type, bool key, int argno, MemoryContext mcxt)
{
	json_arg_init(arg, type, mcxt);
	if (key && !arg->info.is_string)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("webgres.json_build: key %d is of type %s, not text",
						argno, format_type_be(type)),
				 errhint("Cast the key to text.")));
}

/* The arguments of this call site, resolved on its first call. */
static JsonBuildArgs *
json_build_args(FunctionCallInfo fcinfo)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	JsonBuildArgs *args = (JsonBuildArgs *) flinfo->fn_extra;
	int			nargs = PG_NARGS();

	if (args != NULL)
		return args;

	args = MemoryContextAllocZero(flinfo->fn_mcxt,
								  offsetof(JsonBuildArgs, args) +
								  Max(nargs, 1) * sizeof(JsonArg));
	args->variadic_array = get_fn_expr_variadic(flinfo);
	args->nargs = nargs;
	if (args->variadic_array)
	{
		Oid			array_type = get_fn_expr_argtype(flinfo, 0);
		Oid			elem = get_element_type(array_type);

		if (!OidIsValid(elem))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("webgres.json_build: a VARIADIC argument must be an array")));
		get_typlenbyvalalign(elem, &args->elem_len, &args->elem_byval,
							 &args->elem_align);
		/* Keys and values share the element type, so it must do for a key */
		json_build_arg_init(&args->args[0], elem, true, 1, flinfo->fn_mcxt);
	}
	else
	{
		if (nargs % 2 != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("webgres.json_build: an odd number of arguments (%d)", nargs),
					 errhint("The arguments are keys and values, one after the other.")));
		for (int i = 0; i < nargs; i++)
		{
			Oid			type = get_fn_expr_argtype(flinfo, i);

			if (!OidIsValid(type))
				ereport(ERROR,
						(errcode(ERRCODE_INDETERMINATE_DATATYPE),
						 errmsg("webgres.json_build: cannot tell the type of argument %d", i + 1)));
			json_build_arg_init(&args->args[i], type, i % 2 == 0, i + 1, flinfo->fn_mcxt);
		}
	}
	flinfo->fn_extra = args;
	return args;
}

/* Appends one "key":value member; first: no comma before it. */
static void
append_member(StringInfo out, JsonArg *key_arg, Datum key, bool key_null,
			  JsonArg *value_arg, Datum value, bool value_null, int argno)
{
	if (key_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("webgres.json_build: key %d is null", argno),
				 errhint("Every key must be a text value.")));
	if (out->len > VARHDRSZ + 1)
		appendStringInfoCharMacro(out, ',');
	append_json_value(out, key_arg, key, false);
	appendStringInfoCharMacro(out, ':');
	append_json_value(out, value_arg, value, value_null);
}

/* json_build(VARIADIC "any"): the JSON object of the key/value pairs. */
Datum
webgres_json_build(PG_FUNCTION_ARGS)
{
	JsonBuildArgs *args = json_build_args(fcinfo);
	StringInfoData out;

	/* The object is written after room for the varlena header: no copy */
	initStringInfo(&out);
	out.len = VARHDRSZ;
	appendStringInfoCharMacro(&out, '{');

	if (args->variadic_array)
	{
		ArrayType  *array;
		Datum	   *values;
		bool	   *nulls;
		int			n;

		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		array = PG_GETARG_ARRAYTYPE_P(0);
		deconstruct_array(array, args->args[0].info.type, args->elem_len,
						  args->elem_byval, args->elem_align, &values, &nulls, &n);
		if (n % 2 != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("webgres.json_build: an odd number of array elements (%d)", n),
					 errhint("The elements are keys and values, one after the other.")));
		for (int i = 0; i < n; i += 2)
			append_member(&out, &args->args[0], values[i], nulls[i],
						  &args->args[0], values[i + 1], nulls[i + 1], i + 1);
	}
	else
	{
		for (int i = 0; i < args->nargs; i += 2)
			append_member(&out, &args->args[i], PG_GETARG_DATUM(i), PG_ARGISNULL(i),
						  &args->args[i + 1], PG_GETARG_DATUM(i + 1),
						  PG_ARGISNULL(i + 1), i + 1);
	}

	appendStringInfoCharMacro(&out, '}');
	SET_VARSIZE(out.data, out.len);
	PG_RETURN_POINTER(out.data);
}
