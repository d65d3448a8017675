/*
 * Fuzzes the HTTP/2 screening (src/parse/h2_screen.c).
 *
 * Frames: any bytes, cut into any chunks, no crash; the verdict and the
 * counts do not depend on where the chunks are cut; the budgets stay
 * within their bounds.
 *
 * Requests: the same bytes, split at NULs into :method, :path, :authority
 * and name/value pairs, screened as a decoded request.  What it accepts
 * holds what fuzz_screen's accepted heads hold (a token method, printable
 * ASCII target without fragment or dot segment, token names, values
 * without control bytes), and the HTTP/1.1 head made of the same pieces is
 * accepted by screen_request; the other way round, an HTTP/1.1 head
 * screen_request accepts is accepted as HTTP/2 unless it has what HTTP/2
 * refuses on its own (RFC 9113 8.2).  So the two protocols follow one set
 * of rules.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parse/h2_screen.h"

int			LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Pieces a request is split into, at most. */
#define MAX_PIECES (3 + 2 * (H2_MAX_HEADER_FIELDS + 8))

typedef struct Piece
{
	const char *s;
	size_t		len;
} Piece;

/* True if p holds one of the bytes of set. */
static bool
has_any(Piece p, const char *set)
{
	for (size_t i = 0; i < p.len; i++)
		if (p.s[i] == '\0' || strchr(set, p.s[i]) != NULL)
			return true;
	return false;
}

/* True if p is lit. */
static bool
is(Piece p, const char *lit)
{
	return p.len == strlen(lit) && memcmp(p.s, lit, p.len) == 0;
}

/* Whether a field is one HTTP/2 treats apart: framing, or connection-specific. */
static bool
is_special_name(Piece p)
{
	static const char *const names[] = {"host", "content-length", "transfer-encoding", "connection",
	"keep-alive", "proxy-connection", "upgrade", "te"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (p.len == strlen(names[i]) && strncasecmp(p.s, names[i], p.len) == 0)
			return true;
	return false;
}

/* Appends p to buf at *at. */
static void
put(char *buf, size_t *at, const char *s, size_t len)
{
	memcpy(buf + *at, s, len);
	*at += len;
}

/* Checks what an accepted request holds, as fuzz_screen checks a head. */
static void
check_accepted(const Piece *pc, size_t nfields, const ScreenResult *res)
{
	assert(res->status == 0);
	assert(pc[0].len > 0 && pc[0].len <= SCREEN_MAX_METHOD && !is(pc[0], "CONNECT"));
	assert(res->method == pc[0].s && res->target == pc[1].s);
	assert(pc[1].len > 0 && pc[1].len <= SCREEN_MAX_TARGET && pc[1].s[0] == '/');
	for (size_t i = 0; i < pc[1].len; i++)
	{
		unsigned char c = (unsigned char) pc[1].s[i];

		assert(c > 0x20 && c < 0x7f && c != '#');
	}
	assert(pc[2].len > 0 && !has_any(pc[2], "@/ \t\r\n"));
	assert(nfields <= H2_MAX_HEADER_FIELDS);
	for (size_t f = 0; f < nfields; f++)
	{
		Piece		n = pc[3 + 2 * f],
					v = pc[4 + 2 * f];

		assert(n.len > 0 && !has_any(n, ":()<>@,;\\\"/[]?={} \t\r\n"));
		for (size_t i = 0; i < n.len; i++)
			assert(!(n.s[i] >= 'A' && n.s[i] <= 'Z'));
		for (size_t i = 0; i < v.len; i++)
		{
			unsigned char c = (unsigned char) v.s[i];

			assert((c >= 0x20 || c == '\t') && c != 0x7f);
		}
		assert(v.len == 0 || (v.s[0] != ' ' && v.s[0] != '\t' &&
							  v.s[v.len - 1] != ' ' && v.s[v.len - 1] != '\t'));
	}
}

/*
 * Screens data, split at NULs, as a decoded HTTP/2 request, and the
 * HTTP/1.1 head made of the same pieces; checks that they agree.
 */
static void
screen_as_request(const unsigned char *data, size_t size)
{
	Piece		pc[MAX_PIECES];
	size_t		npc = 0,
				start = 0,
				nfields;
	ScreenResult h2,
				h1;
	bool		h2_ok,
				h1_ok,
				clean;
	char	   *copy = malloc(size ? size : 1);
	char	   *head;
	size_t		at = 0;

	memcpy(copy, data, size);
	for (size_t i = 0; i <= size && npc < MAX_PIECES; i++)
		if (i == size || copy[i] == '\0')
		{
			pc[npc].s = copy + start;
			pc[npc++].len = i - start;
			start = i + 1;
		}
	if (npc < 3 || npc % 2 == 0)
	{
		free(copy);
		return;
	}
	nfields = (npc - 3) / 2;

	h2_ok = h2_screen_request(pc[0].s, pc[0].len, pc[1].s, pc[1].len,
							  pc[2].len ? pc[2].s : NULL, pc[2].len, nfields, &h2);
	for (size_t f = 0; h2_ok && f < nfields; f++)
		h2_ok = h2_screen_field(pc[3 + 2 * f].s, pc[3 + 2 * f].len, pc[4 + 2 * f].s, pc[4 + 2 * f].len, &h2);
	if (h2_ok)
		check_accepted(pc, nfields, &h2);
	else
		assert(h2.status >= 400 && h2.status <= 505 && h2.reason != NULL);

	/*
	 * The HTTP/1.1 head of the same pieces; Host from :authority, and the
	 * fields HTTP/2 reads apart (Host, Content-Length) left out.
	 */
	head = malloc(size + 64 + 4 * nfields);
	put(head, &at, pc[0].s, pc[0].len);
	put(head, &at, " ", 1);
	put(head, &at, pc[1].s, pc[1].len);
	put(head, &at, " HTTP/1.1\r\nHost: ", 17);
	put(head, &at, pc[2].s, pc[2].len);
	put(head, &at, "\r\n", 2);
	clean = pc[1].len > 0 && pc[1].s[0] == '/' && pc[2].len > 0 &&
		!has_any(pc[0], " \r\n") && !has_any(pc[1], " \r\n") && !has_any(pc[2], " \t\r\n") &&
		nfields <= H2_MAX_HEADER_FIELDS;
	for (size_t f = 0; f < nfields; f++)
	{
		Piece		n = pc[3 + 2 * f],
					v = pc[4 + 2 * f];

		if (is_special_name(n))
		{
			clean = false;
			continue;
		}
		put(head, &at, n.s, n.len);
		put(head, &at, ": ", 2);
		put(head, &at, v.s, v.len);
		put(head, &at, "\r\n", 2);
		for (size_t i = 0; i < n.len; i++)
			clean &= !(n.s[i] >= 'A' && n.s[i] <= 'Z');
		clean &= !has_any(n, ": \t\r\n") && !has_any(v, "\r\n") &&
			(v.len == 0 || (v.s[0] != ' ' && v.s[0] != '\t' &&
							v.s[v.len - 1] != ' ' && v.s[v.len - 1] != '\t'));
	}
	put(head, &at, "\r\n", 2);
	h1_ok = screen_request(head, at, &h1) && h1.head_len == at;

	/* One set of rules: what HTTP/2 takes, HTTP/1.1 takes, and back. */
	if (h2_ok)
	{
		assert(h1_ok);
		assert(h1.method_len == pc[0].len && h1.target_len == pc[1].len);
	}
	if (h1_ok && clean)
		assert(h2_ok);
	free(head);
	free(copy);
}

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

	screen_as_request(data, size);
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
