/*
 * html.c
 *		HTML escaping, for handlers that render HTML from untrusted text.
 */
#include "postgres.h"

#include "sql/html.h"

/* The entity that stands for c, or NULL if c needs none. */
static inline const char *
entity_for(char c)
{
	switch (c)
	{
		case '&':
			return "&amp;";
		case '<':
			return "&lt;";
		case '>':
			return "&gt;";
		case '"':
			return "&quot;";
		case '\'':
			return "&#39;";
		default:
			return NULL;
	}
}

/* True if s holds any character html_escape_append would change. */
bool
html_needs_escape(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (entity_for(s[i]) != NULL)
			return true;
	return false;
}

/* Appends s with & < > " ' escaped as entities. */
void
html_escape_append(StringInfo out, const char *s, size_t len)
{
	size_t		run = 0;

	for (size_t i = 0; i < len; i++)
	{
		const char *entity = entity_for(s[i]);

		if (entity == NULL)
			continue;
		appendBinaryStringInfo(out, s + run, i - run);
		appendStringInfoString(out, entity);
		run = i + 1;
	}
	appendBinaryStringInfo(out, s + run, len - run);
}
