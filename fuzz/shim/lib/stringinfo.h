/*
 * A stand-in for Postgres' lib/stringinfo.h, for fuzzing code that appends
 * to a StringInfo outside a backend: the buffer lives in the shim's arena.
 */
#ifndef FUZZ_SHIM_STRINGINFO_H
#define FUZZ_SHIM_STRINGINFO_H

typedef struct StringInfoData
{
	char	   *data;
	int			len;
	int			maxlen;
	int			cursor;
} StringInfoData;

typedef StringInfoData *StringInfo;

extern void initStringInfo(StringInfo str);
extern void enlargeStringInfo(StringInfo str, int needed);
extern void appendBinaryStringInfo(StringInfo str, const void *data, int datalen);

#endif
