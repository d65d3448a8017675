/*
 * static_path.c
 *		Screening the part of a request path below a static mount.
 *
 * libh2o's file handler trusts the path it is given: its normalisation
 * resolves ".." segments (so "/app/../x" is "/x", outside the mount's
 * prefix, which the handler would then cut at the wrong place) and
 * percent-decodes everything, NUL included, which open() would take as
 * the end of the name.  This screen refuses every such form outright and
 * hands the handler a path it has decoded itself.  Symbolic links are the
 * business of the caller (http/static_files.c), which must look at the
 * file system.
 */
#include "parse/static_path.h"

#include "parse/percent.h"

/* Whether c must never appear in a file name served: controls and backslash. */
static bool
is_forbidden(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '\\';
}

/* Screens one decoded segment of n bytes. */
static StaticPathVerdict
screen_segment(const char *s, size_t n, bool dotfiles)
{
	if (n == 0)
		return STATIC_PATH_BAD;
	if (s[0] == '.' && (n == 1 || (n == 2 && s[1] == '.')))
		return STATIC_PATH_BAD;
	for (size_t i = 0; i < n; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (is_forbidden(c) || c == '/' || c == '%')
			return STATIC_PATH_BAD;
	}
	if (s[0] == '.' && !dotfiles)
		return STATIC_PATH_HIDDEN;
	return STATIC_PATH_OK;
}

/* Screens and decodes the path below a mount, segment by segment. */
StaticPathVerdict
static_path_screen(const char *rest, size_t len, bool dotfiles, char *out, size_t *outlen)
{
	StaticPathVerdict verdict = STATIC_PATH_OK;
	size_t		i = 0;
	size_t		o = 0;

	*outlen = 0;
	out[0] = '\0';
	if (len == 0)
		return STATIC_PATH_OK;
	if (rest[0] != '/')
		return STATIC_PATH_BAD;
	for (size_t k = 0; k < len; k++)
		if (is_forbidden((unsigned char) rest[k]))
			return STATIC_PATH_BAD;
	while (i < len)
	{
		size_t		start = ++i;	/* past the '/' */
		long		n;
		StaticPathVerdict v;

		while (i < len && rest[i] != '/')
			i++;
		out[o++] = '/';
		/* A trailing slash: the directory's index file. */
		if (i == start && i == len)
			break;
		n = percent_decode(rest + start, i - start, out + o, false);
		if (n < 0)
			return STATIC_PATH_BAD;
		v = screen_segment(out + o, (size_t) n, dotfiles);
		if (v == STATIC_PATH_BAD)
			return STATIC_PATH_BAD;
		/* Hidden, unless a later segment is plainly bad: that says more. */
		if (v == STATIC_PATH_HIDDEN)
			verdict = STATIC_PATH_HIDDEN;
		o += (size_t) n;
	}
	out[o] = '\0';
	*outlen = o;
	return verdict;
}
