/*
 * Fuzzes the HTTP/2 frame screening (src/parse/h2_screen.c): any bytes, cut into
 * any chunks, no crash; the verdict and the counts do not depend on where
 * the chunks are cut; the budgets stay within their bounds.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/h2_screen.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Feeds buf in chunks whose sizes a small generator seeded by seed picks. */
static void
feed_chunked(H2Screen *s, const unsigned char *buf, size_t len, uint32_t seed,
			 bool interleave)
{
	size_t		off = 0;
	uint32_t	x = seed | 1;

	while (off < len && s->verdict == H2_OK)
	{
		size_t		n;
		unsigned char *copy;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		/* Mostly short chunks, now and then a long one. */
		n = (x & 0x100) ? (x % 4096) + 1 : (x % 17) + 1;
		if (n > len - off)
			n = len - off;
		/* A copy of exactly n bytes, so ASan sees any read past the chunk. */
		copy = malloc(n);
		memcpy(copy, buf + off, n);
		h2_screen_feed(s, copy, n);
		free(copy);
		off += n;
		if (interleave)
		{
			for (int i = 0; i < s->nresets; i++)
				assert(h2_screen_was_reset(s, s->resets[i]));
			if (x & 0x1000)
				h2_screen_answered(s, x & 0xffff);
			if (x & 0x2000)
				h2_screen_header_list(s, x & 0x1ffff);
			if ((x & 0xc000) == 0xc000)
				h2_screen_resync(s);
			h2_screen_processed(s);
			assert(s->nresets == 0);
		}
		assert(s->nresets >= 0 && s->nresets <= H2_MAX_REMEMBERED_RESETS);
		assert(s->reset_points <= s->reset_points_max);
		assert(s->control_points <= H2_CONTROL_BUDGET);
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	H2Screen   *whole;
	H2Screen   *cut;
	int			max_resets;
	uint32_t	seed;

	if (size < 3)
		return 0;
	max_resets = data[0] * 4 + 1;
	seed = ((uint32_t) data[1] << 8) | data[2];
	data += 3;
	size -= 3;

	whole = malloc(sizeof(H2Screen));
	cut = malloc(sizeof(H2Screen));

	/* The stream at once, then cut into chunks: the same verdict and counts. */
	h2_screen_init(whole, max_resets);
	h2_screen_feed(whole, data, size);
	h2_screen_init(cut, max_resets);
	feed_chunked(cut, data, size, seed, false);
	assert(whole->verdict == cut->verdict);
	assert(whole->frames == cut->frames);
	assert(whole->reset_frames == cut->reset_frames);
	assert(whole->control_frames == cut->control_frames);
	assert(whole->nresets == cut->nresets);
	assert(memcmp(whole->resets, cut->resets, sizeof(uint32_t) * whole->nresets) == 0);
	assert(whole->reset_frames <= whole->frames && whole->control_frames <= whole->frames);
	assert(whole->nresets <= (int) whole->reset_frames);
	assert(h2_screen_reason(whole->verdict) != NULL);

	/* With requests answered and chunks processed in between. */
	h2_screen_init(cut, max_resets);
	feed_chunked(cut, data, size, seed ^ 0x5a5a, true);

	free(whole);
	free(cut);
	return 0;
}
