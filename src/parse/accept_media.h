/*
 * accept_media.h
 *		Reading an Accept header against the media types a server offers
 *		(RFC 9110 12.5.1).
 *
 * Pure C, no Postgres or h2o: a fuzzer builds it.  q-values are read by
 * their grammar ("0" to "1" with at most three decimals) into thousandths;
 * a malformed one ("nan", "1e0", "0.5x") counts as q=0, so a header that
 * cannot be read never selects a format.
 */
#ifndef WEBGRES_ACCEPT_MEDIA_H
#define WEBGRES_ACCEPT_MEDIA_H

#include <stdbool.h>
#include <stddef.h>

#include "parse/http_tokens.h"

/* q=1 in thousandths. */
#define ACCEPT_Q_ONE HTTP_Q_ONE

/* A media type on offer, lower case: "application", "json". */
typedef struct AcceptOffer
{
	const char *type;
	const char *subtype;
} AcceptOffer;

/*
 * What the header says of one offer: how specific the most specific range
 * that matched it was (-1: none matched, 0: a range of every type, 1: a
 * range of every subtype of its type, 2: its own type and subtype) and
 * that range's q in thousandths.
 */
typedef struct AcceptScore
{
	int			specificity;
	int			q;
} AcceptScore;

/* Sets every score to "no range matched". */
extern void accept_media_init(AcceptScore *scores, int noffers);

/*
 * Scores the offers against one Accept field value [value, value + len);
 * several fields are one list: call it on each.  Returns whether the value
 * held any media range at all.
 */
extern bool accept_media_scan(const char *value, size_t len, const AcceptOffer *offers,
							  int noffers, AcceptScore *scores);

/*
 * The offer to send: the highest q above zero, the more specific range on
 * a tie, then the earlier offer.  -1 if no offer is acceptable.
 */
extern int	accept_media_best(const AcceptScore *scores, int noffers);

#endif
