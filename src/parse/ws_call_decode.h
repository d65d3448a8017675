/*
 * ws_call_decode.h
 *		Reads the payload of a WebSocket call, the frame a worker sends an
 *		executor to run a socket's message or close handler
 *		(exec/ws_dispatch.c has the layout), every length checked, nothing
 *		allocated: the strings point into the payload.
 */
#ifndef WEBGRES_WS_CALL_DECODE_H
#define WEBGRES_WS_CALL_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most settings a call carries. */
#define WS_CALL_MAX_SETTINGS 16

/* A string's length that stands for NULL. */
#define WS_CALL_NULL_STRING UINT32_C(0xFFFFFFFF)

/* A string inside the payload (not NUL-terminated); base NULL: SQL NULL. */
typedef struct WsCallString
{
	const char *base;
	uint32_t	len;
} WsCallString;

/* A decoded call. */
typedef struct WsCallFields
{
	char		kind;			/* 'T' text, 'B' binary, 'C' close */
	int64_t		conn_id;
	int32_t		close_code;
	uint32_t	role;
	int32_t		timeout_ms;
	WsCallString search_path;	/* may be NULL */
	WsCallString sql;
	uint32_t	nsettings;		/* at most WS_CALL_MAX_SETTINGS */
	WsCallString names[WS_CALL_MAX_SETTINGS];
	WsCallString values[WS_CALL_MAX_SETTINGS];
	WsCallString data;
} WsCallFields;

/*
 * Reads a call's payload (len bytes) into f; false if it is malformed: too
 * short or too long, an unknown kind, too many settings, or NULL where a
 * value must be (the statement, a setting, the message).
 */
extern bool ws_call_decode(const char *payload, size_t len, WsCallFields *f);

#endif
