/*
 * errors.c
 *		Maps SQLSTATEs to HTTP statuses.
 */
#include "postgres.h"

#include "utils/elog.h"

#include "message/errors.h"

/* The value of a decimal digit, or -1. */
static int
digit(char c)
{
	return (c >= '0' && c <= '9') ? c - '0' : -1;
}

/* The status for an error raised while serving a request. */
int
http_status_for_sqlstate(int code, bool *chosen_by_handler)
{
	const char *s = unpack_sql_state(code);
	char		cls[3] = {s[0], s[1], '\0'};

	*chosen_by_handler = false;

	if (s[0] == 'W' && s[1] == 'G')
	{
		int			a = digit(s[2]),
					b = digit(s[3]),
					c = digit(s[4]);

		if (a >= 1 && a <= 5 && b >= 0 && c >= 0)
		{
			*chosen_by_handler = true;
			return a * 100 + b * 10 + c;
		}
		return 500;
	}

	switch (code)
	{
		case ERRCODE_UNIQUE_VIOLATION:
		case ERRCODE_FOREIGN_KEY_VIOLATION:
		case ERRCODE_EXCLUSION_VIOLATION:
			return 409;
		case ERRCODE_INSUFFICIENT_PRIVILEGE:
			return 403;
		case ERRCODE_QUERY_CANCELED:
			return 504;
		case ERRCODE_T_R_SERIALIZATION_FAILURE:
		case ERRCODE_T_R_DEADLOCK_DETECTED:
		case ERRCODE_LOCK_NOT_AVAILABLE:
		case ERRCODE_READ_ONLY_SQL_TRANSACTION:
		case ERRCODE_ADMIN_SHUTDOWN:
		case ERRCODE_CANNOT_CONNECT_NOW:
			return 503;
		default:
			break;
	}

	if (strcmp(cls, "22") == 0)		/* data exception: invalid input */
		return 400;
	if (strcmp(cls, "23") == 0)		/* other integrity constraint violations */
		return 400;
	if (strcmp(cls, "28") == 0 || strcmp(cls, "0L") == 0 || strcmp(cls, "0P") == 0)
		return 403;
	if (strcmp(cls, "53") == 0 || strcmp(cls, "08") == 0 || strcmp(cls, "57") == 0)
		return 503;
	return 500;
}

/* The standard reason phrase for a status, or "Unknown". */
const char *
http_reason(int status)
{
	switch (status)
	{
		case 200: return "OK";
		case 201: return "Created";
		case 202: return "Accepted";
		case 204: return "No Content";
		case 301: return "Moved Permanently";
		case 302: return "Found";
		case 303: return "See Other";
		case 304: return "Not Modified";
		case 307: return "Temporary Redirect";
		case 308: return "Permanent Redirect";
		case 400: return "Bad Request";
		case 401: return "Unauthorized";
		case 403: return "Forbidden";
		case 404: return "Not Found";
		case 405: return "Method Not Allowed";
		case 406: return "Not Acceptable";
		case 408: return "Request Timeout";
		case 409: return "Conflict";
		case 410: return "Gone";
		case 411: return "Length Required";
		case 412: return "Precondition Failed";
		case 413: return "Payload Too Large";
		case 414: return "URI Too Long";
		case 415: return "Unsupported Media Type";
		case 422: return "Unprocessable Content";
		case 429: return "Too Many Requests";
		case 431: return "Request Header Fields Too Large";
		case 500: return "Internal Server Error";
		case 501: return "Not Implemented";
		case 502: return "Bad Gateway";
		case 503: return "Service Unavailable";
		case 504: return "Gateway Timeout";
		default: return "Unknown";
	}
}
