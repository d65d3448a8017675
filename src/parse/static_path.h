/*
 * static_path.h
 *		Screening the part of a request path below a static mount.
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it.
 */
#ifndef WEBGRES_STATIC_PATH_H
#define WEBGRES_STATIC_PATH_H

#include <stddef.h>
#include <stdbool.h>

typedef enum StaticPathVerdict
{
	STATIC_PATH_OK,				/* safe: decoded into out */
	STATIC_PATH_BAD,			/* a traversal form or a malformed path: 400 */
	STATIC_PATH_HIDDEN			/* names a dotfile, which the mount hides: 404 */
} StaticPathVerdict;

/*
 * Screens rest, the raw path (without its query) after a mount's prefix:
 * empty, or "/" and segments.  Each segment is percent-decoded and refused
 * (BAD) if it is "." or "..", or holds a slash, backslash, NUL, control
 * character or '%' once decoded (an encoded slash, a double encoding); a
 * raw backslash or control character, an empty segment ("//") and a
 * malformed escape are refused too.  A segment that starts with a dot is
 * HIDDEN unless dotfiles is true.  On OK, out (room for len + 1 bytes)
 * holds the decoded path, NUL-terminated, and *outlen its length; a
 * trailing slash is kept.
 */
extern StaticPathVerdict static_path_screen(const char *rest, size_t len, bool dotfiles,
											char *out, size_t *outlen);

#endif
