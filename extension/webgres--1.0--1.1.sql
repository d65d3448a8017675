-- webgres 1.0 to 1.1: a sampler for handlers that read random rows.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.1'" to load this file. \quit

CREATE FUNCTION webgres.random_distinct_ints(count integer, min integer, max integer)
	RETURNS integer[]
	LANGUAGE c VOLATILE STRICT PARALLEL RESTRICTED
	AS 'MODULE_PATHNAME', 'webgres_random_distinct_ints';
COMMENT ON FUNCTION webgres.random_distinct_ints(integer, integer, integer) IS
  'count distinct integers drawn uniformly at random from [min, max], in random order; O(count).';
