/*
 * json_write.c
 *		Writing Postgres values as JSON: each as json_build_object() writes
 *		it, with what the catalog says about its type asked once per backend.
 *
 * json_build_object() asks the catalog how to write every argument on every
 * call: its base type, whether it is an array or a row type, its output
 * function, four catalog-cache searches a value.  A call site that writes an
 * object per row, or per request, pays that each time.  Here what the
 * catalog said is kept per type for the backend's life (json_types), and a
 * call site keeps its JsonArg; every call still writes every value.  Types
 * with no shortcut here (arrays, rows, dates and times, types with a cast
 * to json, extensions' types) are written by Postgres' to_json(), so the
 * values are exactly json_build_object()'s.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "sql/json_write.h"

/* Room for the longest int8 in decimal, its sign and a NUL. */
#define INT8_DIGITS_MAX		(MAXINT8LEN + 1)

/*
 * The types seen by this backend, by OID.  fn_extra lives only as long as
 * the expression, and Postgres builds a kept plan's expressions again for
 * every execution, so a handler's call site is new on every request: the
 * catalog's answers are kept here instead.  Any change to pg_type empties
 * it (json_types_changed); it is rebuilt as types are met again.
 */
static HTAB *json_types = NULL;
static bool json_types_valid = false;
static bool json_types_watched = false;	/* json_types_changed registered */

/* Types json_types holds before it first grows. */
#define JSON_TYPES_INITIAL	32

/* Syscache callback: a type was created, changed or dropped. */
static void
json_types_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	json_types_valid = false;
}

/* Whether a (base) type is of the string category: text, char, name... */
static bool
type_is_string(Oid base)
{
	char		category;
	bool		preferred;

	get_type_category_preferred(base, &category, &preferred);
	return category == TYPCATEGORY_STRING;
}

/* Asks the catalog how to write values of type, as json_build_object would. */
static JsonType
json_type_from_catalog(Oid type)
{
	JsonType	info;
	Oid			base = getBaseType(type);
	bool		varlena;

	info.type = type;
	info.output = InvalidOid;
	info.is_string = (base == UNKNOWNOID || type_is_string(base));
	switch (base)
	{
		case TEXTOID:
		case VARCHAROID:
			info.write = JSON_WRITE_TEXT;
			break;
		case UNKNOWNOID:
			info.write = JSON_WRITE_CSTRING;
			break;
		case BOOLOID:
			info.write = JSON_WRITE_BOOL;
			break;
		case INT2OID:
			info.write = JSON_WRITE_INT2;
			break;
		case INT4OID:
			info.write = JSON_WRITE_INT4;
			break;
		case INT8OID:
			info.write = JSON_WRITE_INT8;
			break;
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			info.write = JSON_WRITE_NUMBER;
			break;
		case JSONOID:
		case JSONBOID:
			info.write = JSON_WRITE_JSON;
			break;
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			info.write = JSON_WRITE_TO_JSON;
			break;
		default:
			/* Built-in scalars are written as their text; the rest by to_json() */
			if (base >= FirstNormalObjectId ||
				OidIsValid(get_element_type(base)) || type_is_rowtype(base))
				info.write = JSON_WRITE_TO_JSON;
			else
				info.write = JSON_WRITE_STRING;
			break;
	}
	if (info.write == JSON_WRITE_NUMBER || info.write == JSON_WRITE_STRING ||
		info.write == JSON_WRITE_JSON)
		getTypeOutputInfo(base, &info.output, &varlena);
	return info;
}

/* How to write values of type: from json_types, or the catalog the first time. */
static JsonType
json_type_lookup(Oid type)
{
	JsonType   *entry;
	JsonType	info;
	bool		found;

	if (!json_types_valid)
	{
		HASHCTL		ctl;

		if (!json_types_watched)
		{
			CacheRegisterSyscacheCallback(TYPEOID, json_types_changed, (Datum) 0);
			json_types_watched = true;
		}
		if (json_types != NULL)
			hash_destroy(json_types);
		json_types = NULL;
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(JsonType);
		ctl.hcxt = CacheMemoryContext;
		json_types = hash_create("webgres.json_build types", JSON_TYPES_INITIAL,
								 &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		json_types_valid = true;
	}

	entry = hash_search(json_types, &type, HASH_FIND, NULL);
	if (entry != NULL)
		return *entry;

	/* Catalog first: a change it reads in empties the table only on the next lookup */
	info = json_type_from_catalog(type);
	entry = hash_search(json_types, &type, HASH_ENTER, &found);
	*entry = info;
	return info;
}

/* Sets arg up to write values of type; its function lives in mcxt. */
void
json_arg_init(JsonArg *arg, Oid type, MemoryContext mcxt)
{
	arg->info = json_type_lookup(type);

	if (arg->info.write == JSON_WRITE_TO_JSON)
	{
		/* to_json() learns its argument's type from its call expression */
		MemoryContext old = MemoryContextSwitchTo(mcxt);

		fmgr_info_cxt(F_TO_JSON, &arg->fn, mcxt);
		arg->fn.fn_expr = (Node *)
			makeFuncExpr(F_TO_JSON, JSONOID,
						 list_make1(makeNullConst(type, -1, InvalidOid)),
						 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		MemoryContextSwitchTo(old);
	}
	else if (OidIsValid(arg->info.output))
		fmgr_info_cxt(arg->info.output, &arg->fn, mcxt);
}

/* Copies arg into dst, its function (and to_json()'s call) into mcxt. */
void
json_arg_copy(JsonArg *dst, const JsonArg *src, MemoryContext mcxt)
{
	*dst = *src;
	if (!OidIsValid(src->fn.fn_oid))
		return;
	fmgr_info_copy(&dst->fn, unconstify(FmgrInfo *, &src->fn), mcxt);
	if (src->fn.fn_expr != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(mcxt);

		dst->fn.fn_expr = copyObject(src->fn.fn_expr);
		MemoryContextSwitchTo(old);
	}
}

/*
 * Appends bytes as a JSON string: quoted, with what JSON requires escaped,
 * as Postgres' escape_json() does.  That one takes a NUL-terminated string
 * on 15 and 16 (escape_json_with_len() came in 17), which would cost a text
 * value a copy on every call.
 */
void
append_json_string(StringInfo out, const char *s, size_t len)
{
	const char *end = s + len;
	const char *run = s;

	appendStringInfoCharMacro(out, '"');
	for (; s < end; s++)
	{
		unsigned char c = (unsigned char) *s;
		const char *esc;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		appendBinaryStringInfo(out, run, s - run);
		run = s + 1;
		switch (c)
		{
			case '"':
				esc = "\\\"";
				break;
			case '\\':
				esc = "\\\\";
				break;
			case '\b':
				esc = "\\b";
				break;
			case '\f':
				esc = "\\f";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\t':
				esc = "\\t";
				break;
			default:
				appendStringInfo(out, "\\u%04x", c);
				continue;
		}
		appendBinaryStringInfo(out, esc, strlen(esc));
	}
	appendBinaryStringInfo(out, run, end - run);
	appendStringInfoCharMacro(out, '"');
}

/* Appends one value as JSON: NULL is null. */
void
append_json_value(StringInfo out, JsonArg *arg, Datum value, bool isnull)
{
	char		digits[INT8_DIGITS_MAX];
	char	   *s;
	int			len;

	if (isnull)
	{
		APPEND_LITERAL(out, "null");
		return;
	}
	switch (arg->info.write)
	{
		case JSON_WRITE_BOOL:
			if (DatumGetBool(value))
				APPEND_LITERAL(out, "true");
			else
				APPEND_LITERAL(out, "false");
			break;
		case JSON_WRITE_INT2:
			len = pg_itoa(DatumGetInt16(value), digits);
			appendBinaryStringInfo(out, digits, len);
			break;
		case JSON_WRITE_INT4:
			len = pg_ltoa(DatumGetInt32(value), digits);
			appendBinaryStringInfo(out, digits, len);
			break;
		case JSON_WRITE_INT8:
			len = pg_lltoa(DatumGetInt64(value), digits);
			appendBinaryStringInfo(out, digits, len);
			break;
		case JSON_WRITE_NUMBER:
			/* NaN and the infinities are no JSON numbers: strings, as in Postgres */
			s = OutputFunctionCall(&arg->fn, value);
			len = strlen(s);
			if (IsValidJsonNumber(s, len))
				appendBinaryStringInfo(out, s, len);
			else
				append_json_string(out, s, len);
			break;
		case JSON_WRITE_TEXT:
			{
				text	   *t = DatumGetTextPP(value);

				append_json_string(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			}
			break;
		case JSON_WRITE_CSTRING:
			s = DatumGetCString(value);
			append_json_string(out, s, strlen(s));
			break;
		case JSON_WRITE_STRING:
			s = OutputFunctionCall(&arg->fn, value);
			append_json_string(out, s, strlen(s));
			break;
		case JSON_WRITE_JSON:
			appendStringInfoString(out, OutputFunctionCall(&arg->fn, value));
			break;
		case JSON_WRITE_TO_JSON:
			{
				text	   *t = DatumGetTextPP(FunctionCall1(&arg->fn, value));

				appendBinaryStringInfo(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			}
			break;
	}
}
