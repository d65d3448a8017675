/*
 * route_trie.c
 *		A trie over route path patterns, for finding the patterns that can
 *		match a request path.
 *
 * Built once per route table, in the table's memory context.  Literal
 * children are kept in an array sorted by segment text and found by binary
 * search.  Each pattern is stored at exactly one node (where it ends, or
 * where its rest segment is), and a lookup reaches each node at most once,
 * so no pattern is found twice.
 */
#include "postgres.h"

#include "parse/percent.h"
#include "routes/route_trie.h"

typedef struct TrieNode TrieNode;

typedef struct TrieEdge
{
	const char *text;			/* the literal segment, as in the pattern */
	size_t		len;
	TrieNode   *child;
} TrieEdge;

struct TrieNode
{
	TrieEdge   *literals;		/* sorted by (len, text) */
	int			nliterals;
	TrieNode   *param;			/* the child for a ":name" segment */
	int		   *ends;			/* patterns that end at this node */
	int			nends;
	int		   *rests;			/* patterns whose "*" segment is here */
	int			nrests;
};

struct RouteTrie
{
	TrieNode   *root;
};

/* The segment decoded for comparison with literals; len < 0 if malformed. */
typedef struct DecodedSegment
{
	const char *text;
	long		len;
} DecodedSegment;

/* Orders two literals by length, then bytes: any total order will do. */
static int
literal_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return memcmp(a, b, alen);
}

/* qsort_arg comparator: pattern indexes by their literal segment at depth. */
static int
index_by_segment_cmp(const void *a, const void *b, void *arg)
{
	const PathPattern *const *patterns = ((void **) arg)[0];
	int			depth = *(int *) ((void **) arg)[1];
	const PatternSegment *sa = &patterns[*(const int *) a]->segs[depth];
	const PatternSegment *sb = &patterns[*(const int *) b]->segs[depth];

	return literal_cmp(sa->text, sa->len, sb->text, sb->len);
}

/* Builds the node for the patterns idx[0..n), which share their first depth segments. */
static TrieNode *
build_node(const PathPattern *const *patterns, int *idx, int n, int depth)
{
	TrieNode   *node = palloc0(sizeof(TrieNode));
	int		   *params = palloc(sizeof(int) * Max(n, 1));
	int		   *literals = palloc(sizeof(int) * Max(n, 1));
	int			nparams = 0,
				nlits = 0;

	node->ends = palloc(sizeof(int) * Max(n, 1));
	node->rests = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		const PathPattern *p = patterns[idx[i]];

		if (p->nsegs == depth)
			node->ends[node->nends++] = idx[i];
		else if (p->segs[depth].kind == SEG_REST)
			node->rests[node->nrests++] = idx[i];
		else if (p->segs[depth].kind == SEG_PARAM)
			params[nparams++] = idx[i];
		else
			literals[nlits++] = idx[i];
	}

	if (nparams > 0)
		node->param = build_node(patterns, params, nparams, depth + 1);

	if (nlits > 0)
	{
		void	   *arg[2] = {(void *) patterns, &depth};
		int			start = 0;

		qsort_arg(literals, nlits, sizeof(int), index_by_segment_cmp, arg);
		node->literals = palloc(sizeof(TrieEdge) * nlits);
		for (int i = 1; i <= nlits; i++)
		{
			const PatternSegment *first = &patterns[literals[start]]->segs[depth];

			if (i < nlits &&
				index_by_segment_cmp(&literals[start], &literals[i], arg) == 0)
				continue;
			/* literals[start..i) share the segment text: one child for them. */
			node->literals[node->nliterals].text = first->text;
			node->literals[node->nliterals].len = first->len;
			node->literals[node->nliterals].child =
				build_node(patterns, literals + start, i - start, depth + 1);
			node->nliterals++;
			start = i;
		}
	}
	pfree(params);
	pfree(literals);
	return node;
}

/* Builds the trie of patterns[0..n) in CurrentMemoryContext. */
RouteTrie *
route_trie_build(const PathPattern *const *patterns, int n)
{
	RouteTrie  *trie = palloc(sizeof(RouteTrie));
	int		   *idx = palloc(sizeof(int) * Max(n, 1));

	for (int i = 0; i < n; i++)
		idx[i] = i;
	trie->root = build_node(patterns, idx, n, 0);
	pfree(idx);
	return trie;
}

/* Appends the indexes idx[0..n) to out, growing it as needed. */
static void
add_candidates(TrieCandidates *out, const int *idx, int n)
{
	if (n == 0)
		return;
	if (out->n + n > out->cap)
	{
		int			cap = Max(out->cap * 2, out->n + n);

		if (out->idx == out->inline_idx)
		{
			out->idx = palloc(sizeof(int) * cap);
			memcpy(out->idx, out->inline_idx, sizeof(int) * out->n);
		}
		else
			out->idx = repalloc(out->idx, sizeof(int) * cap);
		out->cap = cap;
	}
	memcpy(out->idx + out->n, idx, sizeof(int) * n);
	out->n += n;
}

/* The child of node for literal segment text, or NULL. */
static const TrieNode *
find_literal(const TrieNode *node, const char *text, size_t len)
{
	int			lo = 0,
				hi = node->nliterals - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const TrieEdge *e = &node->literals[mid];
		int			c = literal_cmp(text, len, e->text, e->len);

		if (c == 0)
			return e->child;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Collects the patterns under node that match path from segment depth on. */
static void
walk(const TrieNode *node, const PathSegments *path, const DecodedSegment *decoded,
	 int depth, TrieCandidates *out)
{
	const TrieNode *child;

	/* A rest segment matches the remaining segments, however many. */
	add_candidates(out, node->rests, node->nrests);
	if (depth == path->n)
	{
		add_candidates(out, node->ends, node->nends);
		return;
	}
	if (node->nliterals > 0 && decoded[depth].len >= 0 &&
		(child = find_literal(node, decoded[depth].text, decoded[depth].len)) != NULL)
		walk(child, path, decoded, depth + 1, out);
	/* A parameter matches one non-empty segment. */
	if (node->param != NULL && path->seglen[depth] > 0)
		walk(node->param, path, decoded, depth + 1, out);
}

/* The indexes of every pattern that can match path, each once. */
void
route_trie_lookup(const RouteTrie *trie, const PathSegments *path, TrieCandidates *out)
{
	DecodedSegment decoded[MAX_PATH_SEGMENTS];
	char	   *buf = NULL;
	size_t		used = 0;

	out->idx = out->inline_idx;
	out->n = 0;
	out->cap = TRIE_INLINE_CANDIDATES;
	if (trie == NULL)
		return;

	decoded[0].len = -1;		/* "/" has no segments to decode */
	/* Literals compare with the percent-decoded segment, as in pattern_match(). */
	for (int i = 0; i < path->n; i++)
	{
		decoded[i].text = path->seg[i];
		decoded[i].len = (long) path->seglen[i];
		if (path->encoded[i])
		{
			/* Decoding never grows a segment: the path's length is room enough. */
			if (buf == NULL)
				buf = palloc(path->len + 1);
			decoded[i].text = buf + used;
			decoded[i].len = percent_decode(path->seg[i], path->seglen[i], buf + used, false);
			used += path->seglen[i];
		}
	}
	walk(trie->root, path, decoded, 0, out);
	if (buf != NULL)
		pfree(buf);
}

/* Frees what a lookup allocated beyond the inline candidates. */
void
route_trie_candidates_free(TrieCandidates *c)
{
	if (c->idx != c->inline_idx)
		pfree(c->idx);
	c->idx = c->inline_idx;
	c->n = 0;
}
