-- TechEmpower Framework Benchmarks: the functions the routes call.
--
-- Why functions at all: TFB counts statements in pg_stat_statements
-- (pg_stat_statements.track = all) by the table name they mention. Each World
-- read of /queries and /updates must be a statement of its own, and the
-- Fortune read must be one statement that returns the 12 rows. A plpgsql
-- function runs each of its SQL statements separately (with a plan kept for
-- the session), and so does webgres.select_row with its query: exactly
-- that. The route handlers that call these
-- functions never spell the table names as whole words themselves, so they
-- are not counted on top ("update_worlds" is not the word "world").
--
-- Run as the database owner (benchmarkdbuser). Safe to run again.

-- n distinct random World ids in 1..10000, in random order: TFB draws each
-- id at random, and distinct ids mean /updates never writes a row twice.
-- The routes clamp n to 1..500; more than 10000 is an error. A plain SQL
-- function, strict like its body, so the planner inlines it into the
-- route's plan: no call of its own and no statement for pg_stat_statements.
CREATE OR REPLACE FUNCTION random_ids(n integer) RETURNS integer[]
LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
RETURN webgres.random_distinct_ints(n, 1, 10000);

-- get_world(integer) was a PL/pgSQL read of one row; get_world_json(integer)
-- read /db's row as its JSON object until /db wrote the object itself.
-- Dropped where an older version of this file made them.
DROP FUNCTION IF EXISTS get_world(integer);
DROP FUNCTION IF EXISTS get_world_json(integer);

-- The World rows of ids, in their order, each read by a statement of its
-- own: webgres.select_each runs the SELECT once for each id (its own
-- executor run, its own pg_stat_statements call) on a plan kept for the
-- backend, without a PL/pgSQL call or SPI around it; NULL for an id with no
-- row.  The caller writes the JSON: a SELECT that projects only the table's
-- columns compiles no expression on each run.  This SQL function is
-- inlined into /queries' handler, which is then one row of expressions: no
-- subquery, function scan or aggregate around the reads, and no statement
-- of its own.
CREATE OR REPLACE FUNCTION get_worlds(wanted integer[]) RETURNS world[]
LANGUAGE sql STABLE
RETURN webgres.select_each(NULL::world, 'SELECT * FROM world WHERE id = $1', wanted);

-- One World row, read by a statement of its own through webgres.select_row
-- and handed over as it is stored (a SELECT that projects only the table's
-- columns compiles no expression when it starts); NULL when there is no such
-- row.  Inlined into /db's handler, which writes the object with
-- webgres.json_row_of and is then one row of expressions that webgres
-- evaluates without starting the executor (docs/execution.md): the read is
-- the request's only executor run.
CREATE FUNCTION get_world(wanted integer) RETURNS world
LANGUAGE sql STABLE
RETURN webgres.select_row(NULL::world, 'SELECT * FROM world WHERE id = $1', wanted);

-- TFB "updates": read each row by its own statement (get_worlds: a
-- statement of its own per id, on a plan kept for the backend, as /queries
-- reads them), give it a new random number in 1..10000, save them all with
-- one UPDATE (bulk writes are allowed, bulk reads are not) and return the
-- updated rows as a JSON array.  Every other step but the sort (a
-- statement that names no table) is a PL/pgSQL expression evaluated
-- without a statement of its own, so pg_stat_statements counts for world
-- exactly the reads and the UPDATE.
-- Rows are handled in id order so that two requests running at once lock
-- them in the same order and cannot deadlock: the UPDATE's plan walks
-- unnest(fresh) in order and finds each row by its key.
-- plan_cache_mode: with the array's length known, a custom plan of the
-- UPDATE always looks cheaper than the generic one, so plpgsql would plan it
-- again on every call (a sixth of the time of /updates?queries=1).
CREATE OR REPLACE FUNCTION update_worlds(wanted integer[]) RETURNS json
LANGUAGE plpgsql VOLATILE STRICT
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  fresh world[];
  missing boolean := false;
BEGIN
  IF cardinality(wanted) > 1 THEN
    wanted := ARRAY(SELECT x FROM unnest(wanted) AS x ORDER BY x);
  END IF;
  fresh := get_worlds(wanted);
  FOR i IN 1 .. cardinality(fresh) LOOP
    IF fresh[i] IS NULL THEN
      missing := true;          -- no such row: neither saved nor returned
    ELSE
      fresh[i].randomnumber := 1 + floor(random() * 10000)::integer;
    END IF;
  END LOOP;
  IF missing THEN
    fresh := array_remove(fresh, NULL);
  END IF;

  UPDATE world SET randomnumber = f.randomnumber
  FROM unnest(fresh) AS f
  WHERE world.id = f.id;

  RETURN webgres.json_rows_of(fresh, 'id', 'id', 'randomNumber', 'randomnumber');
END
$$;

-- TFB "fortunes": every row of Fortune, read by one statement with no
-- ORDER BY (its own line in pg_stat_statements, 12 rows), followed by the
-- fortune TFB adds at request time (never saved), as an array.  Sorting and
-- rendering are left to the caller.  webgres.select_rows runs the SELECT on
-- a plan kept for the backend, as select_row does, and keeps every row; this
-- SQL function is inlined into /fortunes' handler, which is then one row of
-- expressions that webgres evaluates without starting the executor
-- (docs/execution.md): the read is the request's only executor run.  It
-- returned SETOF fortune before, which CREATE OR REPLACE cannot change.
DROP FUNCTION IF EXISTS fortunes();
CREATE FUNCTION fortunes() RETURNS fortune[]
LANGUAGE sql STABLE
RETURN webgres.select_rows(NULL::fortune, 'SELECT * FROM fortune')
       || ROW(0, 'Additional fortune added at request time.')::fortune;
