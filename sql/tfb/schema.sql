-- TechEmpower Framework Benchmarks: tables and data, as TFB's own
-- toolset/databases/postgres/create-postgres.sql makes them.
--
-- Unquoted names fold to lower case, so the tables are world(id, randomnumber)
-- and fortune(id, message); "World" and "Fortune" are the quoted twins TFB
-- also creates. Run as the database owner (benchmarkdbuser). Safe to run
-- again: tables are created when missing and filled when empty, so a server
-- that is already answering keeps its data.

CREATE TABLE IF NOT EXISTS World (
  id integer NOT NULL,
  randomNumber integer NOT NULL default 0,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS "World" (
  id integer NOT NULL,
  randomNumber integer NOT NULL default 0,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS Fortune (
  id integer NOT NULL,
  message varchar(2048) NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS "Fortune" (
  id integer NOT NULL,
  message varchar(2048) NOT NULL,
  PRIMARY KEY (id)
);

GRANT ALL PRIVILEGES ON World, "World", Fortune, "Fortune" TO benchmarkdbuser;

-- 10,000 rows, ids 1..10000, each with a random number in 1..10000.
INSERT INTO World (id, randomnumber)
SELECT x.id, least(floor(random() * 10000 + 1), 10000)
FROM generate_series(1, 10000) AS x(id)
WHERE NOT EXISTS (SELECT FROM World);

INSERT INTO "World" (id, randomnumber)
SELECT x.id, least(floor(random() * 10000 + 1), 10000)
FROM generate_series(1, 10000) AS x(id)
WHERE NOT EXISTS (SELECT FROM "World");

-- The twelve fortunes, verbatim (rows 6 and 8 hold U+2014 EM DASH).
INSERT INTO Fortune (id, message) VALUES
  (1, 'fortune: No such file or directory'),
  (2, 'A computer scientist is someone who fixes things that aren''t broken.'),
  (3, 'After enough decimal places, nobody gives a damn.'),
  (4, 'A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1'),
  (5, 'A computer program does what you tell it to do, not what you want it to do.'),
  (6, 'Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen'),
  (7, 'Any program that runs right is obsolete.'),
  (8, 'A list is only as strong as its weakest link. — Donald Knuth'),
  (9, 'Feature: A bug with seniority.'),
  (10, 'Computers make very fast, very accurate mistakes.'),
  (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
  (12, 'フレームワークのベンチマーク')
ON CONFLICT (id) DO NOTHING;

INSERT INTO "Fortune" (id, message)
SELECT id, message FROM Fortune
ON CONFLICT (id) DO NOTHING;

ANALYZE World, "World", Fortune, "Fortune";
