-- webgres.cache_get / cache_stats / cache_reset: per-process read-through caches
CREATE EXTENSION webgres;

CREATE TABLE cache_items (id int PRIMARY KEY, name text);
INSERT INTO cache_items SELECT g, 'item ' || g FROM generate_series(1, 5) g;

CREATE FUNCTION item(key text, max_entries int DEFAULT 100, ttl interval DEFAULT '1 hour')
RETURNS jsonb LANGUAGE sql AS $$
  SELECT webgres.cache_get('items', key,
    'SELECT jsonb_build_object(''id'', id, ''name'', name) FROM cache_items WHERE id = $1::int',
    max_entries, ttl)
$$;

CREATE VIEW stats AS
  SELECT cache, role = current_user::regrole AS mine, entries, max_entries, ttl,
         hits, misses, preloaded, evicted, expired, memory_bytes > 0 AS has_memory
  FROM webgres.cache_stats() ORDER BY cache;

-- a miss loads, a hit does not
SELECT item('1'), item('1'), item('2');
SELECT * FROM stats;

-- read-through, not write-through: a cached value stays until it leaves
UPDATE cache_items SET name = 'renamed' WHERE id = 1;
SELECT item('1');
-- unknown keys give NULL and are not cached
SELECT item('42') IS NULL AS missing, item('42') IS NULL AS still_missing;
SELECT entries, hits, misses FROM stats;

-- size: least recently used entries leave first
SELECT item('3'), item('1');          -- 2 is now the least recently used
SELECT item('4', max_entries => 3);   -- 4 in, 2 out
SELECT entries, max_entries, evicted FROM stats;
SELECT item('1', 3) ->> 'name' AS "1 still cached", item('2', 3) ->> 'name' AS "2 reloaded";

-- age: entries older than ttl are loaded again
SELECT item('5', 3) ->> 'name' AS loaded;
UPDATE cache_items SET name = 'renamed 5' WHERE id = 5;
SELECT item('5', 3) ->> 'name' AS cached;
SELECT pg_sleep(0.05);
SELECT item('5', 3, '10 milliseconds') ->> 'name' AS reloaded;
SELECT expired FROM stats;

-- a new loader empties the cache
SELECT webgres.cache_get('items', '5', 'SELECT to_jsonb(c) FROM cache_items c WHERE id = $1::int');
SELECT entries, max_entries, ttl FROM stats;

-- preload fills the cache in bulk on first use; the key may be any type
SELECT webgres.cache_reset('items');
SELECT webgres.cache_get('items', '3', 'SELECT to_jsonb(c) FROM cache_items c WHERE id = $1::int',
                         preload => 'SELECT id, to_jsonb(c) FROM cache_items c');
SELECT entries, hits, misses, preloaded FROM stats;
-- json (not jsonb) values are accepted too
SELECT webgres.cache_get('json', 'k', 'SELECT json_build_object(''key'', $1)');

-- reset drops entries and definitions; NULL resets every cache
SELECT webgres.cache_reset('json');
SELECT webgres.cache_reset();
SELECT count(*) FROM webgres.cache_stats();

-- a NULL key gives NULL
SELECT webgres.cache_get('items', NULL, 'SELECT to_jsonb(1)') IS NULL AS null_key;

-- caches belong to the role that uses them
CREATE ROLE cache_other;
GRANT SELECT ON cache_items TO cache_other;
GRANT USAGE ON SCHEMA webgres TO cache_other;
SELECT item('1') ->> 'name';
SET ROLE cache_other;
SELECT count(*) AS others_caches FROM webgres.cache_stats() WHERE role = current_user::regrole;
SELECT item('1') ->> 'name';
SELECT webgres.cache_reset();         -- only its own
RESET ROLE;
SELECT cache, role::text FROM webgres.cache_stats();
SELECT webgres.cache_reset();
DROP OWNED BY cache_other;
DROP ROLE cache_other;

-- errors
SELECT webgres.cache_get('bad', '1', 'SELEC 1');
SELECT webgres.cache_get('bad', '1', 'SELECT $2::jsonb');
SELECT webgres.cache_get('bad', '1', 'SELECT 1');
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb(1), 2');
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb(1)', max_entries => 0);
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb(1)', ttl => '-1 second');
SELECT webgres.cache_get('bad', '1', NULL);
SELECT webgres.cache_get('', '1', 'SELECT to_jsonb(1)');
SELECT webgres.cache_get(repeat('x', 64), '1', 'SELECT to_jsonb(1)');
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb(1)', preload => 'SELECT 1, 2');
SELECT webgres.cache_get('bad', '1', 'DELETE FROM cache_items WHERE id = $1::int RETURNING to_jsonb(id)');
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb(1); SELECT to_jsonb(2)');
SELECT webgres.cache_get('self', '1', 'SELECT webgres.cache_get(''self'', ''2'', ''SELECT to_jsonb(2)'')');
-- after errors the cache still works
SELECT webgres.cache_get('bad', '1', 'SELECT to_jsonb($1)');
SELECT cache, entries, misses FROM stats;
SELECT webgres.cache_reset();

DROP VIEW stats;
DROP FUNCTION item;
DROP TABLE cache_items;
DROP EXTENSION webgres;
