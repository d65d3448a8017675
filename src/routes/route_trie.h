/*
 * route_trie.h
 *		Finds the path patterns that can match a request path without
 *		trying each one.
 *
 * A trie over the patterns' segments: each node has children keyed by
 * literal segment text, one child for a parameter segment, the patterns
 * that end at the node and the patterns whose trailing "*" stands there.
 * A lookup walks the request's segments down the literal and the parameter
 * branches at once, so its cost depends on the path and on the patterns
 * that share its prefixes, not on how many patterns there are.
 */
#ifndef WEBGRES_ROUTE_TRIE_H
#define WEBGRES_ROUTE_TRIE_H

#include "parse/pattern.h"

typedef struct RouteTrie RouteTrie;

/* Candidates a lookup holds without allocating. */
#define TRIE_INLINE_CANDIDATES 16

/* The indexes of the patterns a lookup found, in no particular order. */
typedef struct TrieCandidates
{
	int		   *idx;			/* inline_idx, or palloc'd when it overflows */
	int			n;
	int			cap;
	int			inline_idx[TRIE_INLINE_CANDIDATES];
} TrieCandidates;

/*
 * Builds the trie of patterns[0..n), pattern i standing for index i, in
 * CurrentMemoryContext.  The patterns must outlive the trie.
 */
extern RouteTrie *route_trie_build(const PathPattern *const *patterns, int n);

/*
 * Sets out to the indexes of every pattern that pattern_match() would
 * accept for path, each once.  It may add a few it would not (a literal
 * compared after percent-decoding a very long segment, which
 * pattern_match() refuses), so callers confirm with pattern_match().
 * Call route_trie_candidates_free() afterwards.
 */
extern void route_trie_lookup(const RouteTrie *trie, const PathSegments *path,
							  TrieCandidates *out);

/* Frees what a lookup allocated beyond the inline candidates. */
extern void route_trie_candidates_free(TrieCandidates *c);

#endif
