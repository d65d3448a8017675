/*
 * accept_media.c
 *		Reading an Accept header against the media types a server offers.
 *
 * Used by handler/stream.c to choose a streamed response's format.
 */
#include "parse/accept_media.h"

#include <string.h>

#include "parse/http_tokens.h"

/* Trims optional whitespace from both ends of [*s, *s + *len). */
static void
trim(const char **s, size_t *len)
{
	while (*len > 0 && http_is_ows(**s))
		(*s)++, (*len)--;
	while (*len > 0 && http_is_ows((*s)[*len - 1]))
		(*len)--;
}

/* Scores one media range [s, s + len), trimmed and not empty. */
static void
score_range(const char *s, size_t len, const AcceptOffer *offers, int noffers,
			AcceptScore *scores)
{
	const char *semi = memchr(s, ';', len);
	const char *m = s;
	size_t		mlen = semi ? (size_t) (semi - s) : len;
	const char *slash;
	size_t		typelen;
	size_t		sublen;
	int			q = ACCEPT_Q_ONE;

	trim(&m, &mlen);
	slash = memchr(m, '/', mlen);
	if (slash == NULL)
		return;
	typelen = slash - m;
	sublen = mlen - typelen - 1;

	/* Parameters: only q matters here. */
	while (semi != NULL)
	{
		const char *p = semi + 1;
		size_t		plen = len - (p - s);
		const char *next = memchr(p, ';', plen);

		if (next != NULL)
			plen = next - p;
		trim(&p, &plen);
		if (plen >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
			q = http_qvalue(p + 2, plen - 2);
		semi = next;
	}

	for (int f = 0; f < noffers; f++)
	{
		int			spec;

		if (http_word_is(m, typelen, "*") && http_word_is(slash + 1, sublen, "*"))
			spec = 0;
		else if (!http_word_is(m, typelen, offers[f].type))
			continue;
		else if (http_word_is(slash + 1, sublen, "*"))
			spec = 1;
		else if (http_word_is(slash + 1, sublen, offers[f].subtype))
			spec = 2;
		else
			continue;
		if (spec > scores[f].specificity)
		{
			scores[f].specificity = spec;
			scores[f].q = q;
		}
	}
}

/* Sets every score to "no range matched". */
void
accept_media_init(AcceptScore *scores, int noffers)
{
	for (int f = 0; f < noffers; f++)
	{
		scores[f].specificity = -1;
		scores[f].q = 0;
	}
}

/* Scores the offers against one Accept field value; whether it held a range. */
bool
accept_media_scan(const char *value, size_t len, const AcceptOffer *offers, int noffers,
				  AcceptScore *scores)
{
	bool		any = false;

	while (len > 0)
	{
		const char *comma = memchr(value, ',', len);
		size_t		n = comma ? (size_t) (comma - value) : len;
		const char *e = value;
		size_t		elen = n;

		trim(&e, &elen);
		if (elen > 0)
		{
			any = true;
			score_range(e, elen, offers, noffers, scores);
		}
		value += n;
		len -= n;
		if (comma != NULL)
			value++, len--;
	}
	return any;
}

/* The offer to send, or -1 if none is acceptable. */
int
accept_media_best(const AcceptScore *scores, int noffers)
{
	int			best = -1;

	for (int f = 0; f < noffers; f++)
		if (scores[f].specificity >= 0 && scores[f].q > 0 &&
			(best < 0 || scores[f].q > scores[best].q ||
			 (scores[f].q == scores[best].q && scores[f].specificity > scores[best].specificity)))
			best = f;
	return best;
}
