-- The SQL of /db: one whole World row by a random id (TechEmpower "db").
-- Run by bench/run.sh as: pgbench -n -M prepared -f db.sql -c C -j 2 -T S
-- over the cluster's Unix socket, as benchmarkdbuser on hello_world.
\set id random(1, 10000)
SELECT id, randomnumber FROM world WHERE id = :id;
