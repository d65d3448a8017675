/*
 * form_data.h
 *		A form body's fields and files as SQL values: url-encoded forms and
 *		multipart/form-data (RFC 7578), by the request's Content-Type.
 *
 * Malformed bodies raise errors whose SQLSTATE maps to 400 (22023, with
 * what is wrong in the message); a body of another content type raises
 * WG415 (415).
 */
#ifndef WEBGRES_FORM_DATA_H
#define WEBGRES_FORM_DATA_H

#include "funcapi.h"
#include "utils/jsonb.h"

/*
 * The form's fields as a jsonb object (a repeated name's values as an
 * array): every url-encoded pair, or every multipart part without a
 * filename.  ct is the Content-Type value (NULL: url-encoded).
 */
extern Jsonb *form_data_fields(const char *body, size_t len, const char *ct);

/*
 * Appends a row (field, filename, content_type, size, content) to tupstore
 * for each multipart part with a filename, in the order they came.  A
 * url-encoded body has none.
 */
extern void form_data_files(const char *body, size_t len, const char *ct,
							Tuplestorestate *tupstore, TupleDesc desc);

#endif
