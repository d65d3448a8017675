#!/usr/bin/env bash
# Sets up the TechEmpower database in a running cluster: role benchmarkdbuser
# (password benchmarkdbpass), database hello_world owned by it, extensions
# pg_stat_statements and webgres, TFB's tables and data (sql/tfb/schema.sql),
# the functions the routes call (sql/tfb/functions.sql) and the seven routes
# (sql/tfb/routes.sql).
#
#   PGHOST=/path/to/socket/dir PGPORT=5432 scripts/tfb-db.sh
#
# Connects as the superuser 'postgres' (PGUSER to choose another). The cluster
# must preload webgres and pg_stat_statements. Safe to run again: existing
# data is kept and the routes are replaced. Tables, functions and routes are
# created as benchmarkdbuser, so the handlers never run as a superuser.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sqldir=$here/sql/tfb
: "${PGHOST:?PGHOST must name the cluster's socket directory}"
: "${PGPORT:?PGPORT must name the cluster's port}"
export PGHOST PGPORT PGUSER=${PGUSER:-postgres}
# "already exists, skipping" notices are expected on a second run.
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
bindir=${WEBGRES_BINDIR:-$(${PG_CONFIG:-pg_config} --bindir)}

psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -d postgres <<'SQL'
SELECT 'CREATE ROLE benchmarkdbuser LOGIN PASSWORD ''benchmarkdbpass'''
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'benchmarkdbuser')
\gexec
SELECT 'CREATE DATABASE hello_world OWNER benchmarkdbuser ENCODING ''UTF8'' TEMPLATE template0'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'hello_world')
\gexec
SELECT CASE WHEN current_setting('shared_preload_libraries') !~ 'pg_stat_statements'
            THEN 'pg_stat_statements is not in shared_preload_libraries: TFB''s query counts will not be readable' END AS warning
\gset
\if :{?warning}
\echo tfb-db.sh: warning: :warning
\endif
SQL

# TFB reads its query counts from pg_stat_statements with track = all, so
# statements run inside the routes' functions are counted too.  Created
# only where it is preloaded (it reads nothing otherwise): an installation
# without it, such as the Postgres 16 of docs/versions.md, gets no extension
# that pg_dump or pg_upgrade would then look for.
psql -d hello_world <<'SQL'
SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements' AS preloaded
\gset
\if :preloaded
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
\endif
CREATE EXTENSION IF NOT EXISTS webgres;
-- A database made by an earlier webgres gets what this one added.
ALTER EXTENSION webgres UPDATE;
ALTER DATABASE hello_world SET pg_stat_statements.track = 'all';
-- benchmarkdbuser adds its own routes (row-level security keeps them apart).
GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO benchmarkdbuser;
-- TFB's verifier reads pg_stat_statements as benchmarkdbuser (a superuser in
-- TFB's own database image); this lets it read every statement's text.
GRANT pg_read_all_stats TO benchmarkdbuser;
SQL

psql -d hello_world \
	-c 'SET ROLE benchmarkdbuser' \
	-f "$sqldir/schema.sql" \
	-f "$sqldir/functions.sql" \
	-f "$sqldir/routes.sql"
