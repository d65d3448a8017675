/*
 * json_write.h
 *		Writing Postgres values as JSON, as json_build_object() and to_json()
 *		write them, with what the catalog says about a type asked once per
 *		backend.
 */
#ifndef WEBGRES_JSON_WRITE_H
#define WEBGRES_JSON_WRITE_H

#include "fmgr.h"
#include "lib/stringinfo.h"

/* Appends a string literal without measuring it. */
#define APPEND_LITERAL(out, lit) appendBinaryStringInfo((out), (lit), sizeof(lit) - 1)

/* How one type's values are written. */
typedef enum JsonWrite
{
	JSON_WRITE_BOOL,			/* true or false */
	JSON_WRITE_INT2,			/* decimal digits */
	JSON_WRITE_INT4,
	JSON_WRITE_INT8,
	JSON_WRITE_NUMBER,			/* its text bare if a JSON number, else a string */
	JSON_WRITE_TEXT,			/* text or varchar: its bytes as a string */
	JSON_WRITE_CSTRING,			/* an untyped literal: its C string as a string */
	JSON_WRITE_STRING,			/* its output function's text as a string */
	JSON_WRITE_JSON,			/* json or jsonb: its text as it is */
	JSON_WRITE_TO_JSON			/* anything else: Postgres' to_json() */
} JsonWrite;

/* What the catalog says about writing one type. */
typedef struct JsonType
{
	Oid			type;			/* the hash key */
	JsonWrite	write;
	bool		is_string;		/* of the string category: may be a key */
	Oid			output;			/* its output function, if write uses one */
} JsonType;

/* How a call site writes the values of one type. */
typedef struct JsonArg
{
	JsonType	info;
	FmgrInfo	fn;				/* the output function, or to_json() */
} JsonArg;

extern void json_arg_init(JsonArg *arg, Oid type, MemoryContext mcxt);
extern void json_arg_copy(JsonArg *dst, const JsonArg *src, MemoryContext mcxt);
extern void append_json_string(StringInfo out, const char *s, size_t len);
extern void append_json_value(StringInfo out, JsonArg *arg, Datum value, bool isnull);

#endif							/* WEBGRES_JSON_WRITE_H */
