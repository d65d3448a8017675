-- webgres 1.7 to 1.8
-- Every change here is made in webgres--1.8.sql too.

\echo Use "ALTER EXTENSION webgres UPDATE TO '1.8'" to load this file. \quit

-- ==== JSON objects (docs/routes.md) ====
-- json_build_object()'s values, written without spaces, with what the
-- catalog says about each type asked once per backend, not on every call.

CREATE FUNCTION webgres.json_build(VARIADIC "any") RETURNS json
	LANGUAGE c STABLE PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'webgres_json_build';
COMMENT ON FUNCTION webgres.json_build(VARIADIC "any") IS
  'A JSON object from alternating keys (text) and values, each value written as json_build_object writes it (NULL as null), without spaces; what the catalog says about a type is asked once per backend, not on every call.';

-- ==== random integers ====
-- One integer drawn uniformly from a range, as Postgres 17's random(min,
-- max) draws it, on every supported version.

CREATE FUNCTION webgres.random_int(min integer, max integer) RETURNS integer
	LANGUAGE c VOLATILE STRICT PARALLEL RESTRICTED
	AS 'MODULE_PATHNAME', 'webgres_random_int';
COMMENT ON FUNCTION webgres.random_int(integer, integer) IS
  'an integer drawn uniformly at random from [min, max]; an error when min > max.';
