-- The SQL of /updates?queries=1: the World row read by its own statement,
-- then one bulk UPDATE giving it a new random number, in one transaction
-- (a webgres request is one transaction). bench/run.sh writes the
-- queries=N variant of this script with bench/pgbench/updates.sh N
-- (N reads, then one UPDATE ... CASE id WHEN ... END WHERE id IN (...)).
-- Ids are not sorted, so two clients can deadlock: run with --max-tries.
\set id1 random(1, 10000)
\set r1 random(1, 10000)
BEGIN;
SELECT id, randomnumber FROM world WHERE id = :id1;
UPDATE world SET randomnumber = CASE id WHEN :id1 THEN :r1 ELSE randomnumber END WHERE id IN (:id1);
END;
