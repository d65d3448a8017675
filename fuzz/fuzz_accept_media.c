/*
 * Fuzzes the Accept reader (src/parse/accept_media.c) with the offers of
 * streamed responses: any input scores them without reading past its end,
 * every score is in range, the choice is an acceptable offer or none, and
 * a value that names no offer and no wildcard selects none.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse/accept_media.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const AcceptOffer offers[] = {
	{"application", "json"}, {"application", "x-ndjson"}, {"text", "csv"}
};

#define NOFFERS 3

/* Whether [s, s + len) holds word, ignoring case. */
static bool
holds(const char *s, size_t len, const char *word)
{
	size_t		wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++)
		if (strncasecmp(s + i, word, wl) == 0)
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* An exact-size copy, so that ASan sees any read past the end. */
	char	   *s = malloc(size ? size : 1);
	AcceptScore scores[NOFFERS];
	int			best;
	bool		named = false;

	memcpy(s, data, size);
	accept_media_init(scores, NOFFERS);
	(void) accept_media_scan(s, size, offers, NOFFERS, scores);
	best = accept_media_best(scores, NOFFERS);
	for (int f = 0; f < NOFFERS; f++)
	{
		assert(scores[f].specificity >= -1 && scores[f].specificity <= 2);
		assert(scores[f].q >= 0 && scores[f].q <= ACCEPT_Q_ONE);
		named = named || holds(s, size, offers[f].subtype);
	}
	assert(best >= -1 && best < NOFFERS);
	if (best >= 0)
		assert(scores[best].q > 0 && scores[best].specificity >= 0);
	if (!named && memchr(s, '*', size) == NULL)
		assert(best == -1);
	free(s);
	return 0;
}
