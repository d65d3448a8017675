/*
 * html.h
 *		HTML escaping.
 */
#ifndef WEBGRES_HTML_H
#define WEBGRES_HTML_H

#include "lib/stringinfo.h"

/* Appends s with & < > " ' escaped as entities. */
extern void html_escape_append(StringInfo out, const char *s, size_t len);

/* True if s holds any character html_escape_append would change. */
extern bool html_needs_escape(const char *s, size_t len);

#endif
