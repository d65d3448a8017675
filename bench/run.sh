#!/usr/bin/env bash
# webgres bench harness: one command, one throwaway cluster, every reference
# in the same run. See bench/README.md.
#
#   bench/run.sh                 full run (3 repetitions, 16/64/256/512 connections, soak)
#   QUICK=1 bench/run.sh         quick run (1 repetition, ~3 s a case, 64 connections)
#   make bench [QUICK=1]         the same after `make all install`
#
# Settings (environment): QUICK, WORKERS (default 2 x nproc), REPS, DURATION (s a
# case), CONNS (levels for plaintext/json/db/fortunes), QCONNS (connections
# for queries/updates/cached-queries), SOAK (1: soak and fault tier; default
# on, off with QUICK), SOAK_REQUESTS, PROFILE (1: where a request's time goes,
# from perf on one worker; PROFILE_FREQ, PROFILE_CALLGRAPH), RSS_STEPS (request
# counts for the RSS tier), BENCH_TFB_DB (script
# that sets up the TechEmpower database; default scripts/tfb-db.sh), WEBGRES
# (0: references only, to check the harness where webgres is not installed),
# ONLY (an extended regex: run only the endpoints it matches, e.g. 'db|json'),
# ROUTE_COUNTS (numbers of other routes for the route-table tier).
# CAPACITY (1: connection capacity tier; default on, off with QUICK), CAP_CONNS
# (its connection levels),
# AUTH (1: the auth tier, /db with no token, an HS256 and an ES256 token;
# default on; ONLY=auth runs it alone among the endpoint tiers).
# AXUM (1: the axum reference, built by cargo from crates.io; default on;
# 0 leaves it out), AXUM_THREADS (its runtimes and connections, default
# nproc: one per core, as TechEmpower's entry runs).
# SSE (1: the sse tier, bench/sse/run.sh, event-stream subscribers; default on;
# ONLY=sse runs it alone among the endpoint tiers).
# BENCH_REFERENCES (0: the TechEmpower cases measure only webgres and the
# older build, no reference; bench/guard.sh sets it).
# BASE_BINDIR (the bindir of a second Postgres installation holding an older
# webgres build; bench/before_after.sh makes one): that build is served by a
# cluster of its own and measured as one more server, webgres-base, in the
# TechEmpower tiers and the mixed tier, interleaved with this build rep by
# rep; BASE_BUILD names it, BASE_TFB_DB is its own scripts/tfb-db.sh.
#
# Writes bench/results/<UTC timestamp>/{report.md,results.json,chart.svg,raw/}
# and copies report.md and chart.svg to bench/results/latest/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
CLUSTER=$ROOT/scripts/cluster.sh

case "${QUICK:-}" in ''|0|no|false) QUICK=0 ;; *) QUICK=1 ;; esac
export QUICK
# Two per core: on a machine the load generator shares, one per core leaves
# the cores idle while both workers wait on their connections (see README).
WORKERS=${WORKERS:-$(( 2 * $(nproc) ))}
if [ "$QUICK" = 1 ]; then
	REPS=${REPS:-1}; DURATION=${DURATION:-3}; CONNS=${CONNS:-64}; QCONNS=${QCONNS:-64}
	SOAK=${SOAK:-0}; SOAK_REQUESTS=${SOAK_REQUESTS:-100000}; RSS_STEPS=${RSS_STEPS:-10000 100000}
else
	# 512: TechEmpower's top concurrency for the database tests
	REPS=${REPS:-3}; DURATION=${DURATION:-10}; CONNS=${CONNS:-16 64 256 512}; QCONNS=${QCONNS:-512}
	SOAK=${SOAK:-1}; SOAK_REQUESTS=${SOAK_REQUESTS:-1000000}; RSS_STEPS=${RSS_STEPS:-100000 1000000}
fi
PROFILE=${PROFILE:-0}
ROUTE_COUNTS=${ROUTE_COUNTS:-1 1000 10000}
CAPACITY=${CAPACITY:-$(( 1 - QUICK ))}
CAP_CONNS=${CAP_CONNS:-256 1000 5000 10000}
# TechEmpower runs each level for 15 s: opening thousands of connections and
# their first segments (the kernel acknowledges each at once while a
# connection is new) weigh on a shorter run, and wrk's --timeout 8 can only
# show a request that waited too long in a run longer than 8 s.
CAP_DURATION=${CAP_DURATION:-$([ "$QUICK" = 1 ] && echo "$DURATION" || echo 15)}
BASE_BINDIR=${BASE_BINDIR:-}
WEBGRES=${WEBGRES:-1}
TFB_DB=${BENCH_TFB_DB:-$ROOT/scripts/tfb-db.sh}
THREADS=2                      # wrk threads (and pgbench -j)
# webgres.handler_timeout for the soak tier. A sleeping handler holds its
# (single-threaded) worker for the whole timeout: with 1% of requests at
# 200 ms, 2 workers top out near 1k req/s and 1M requests take 17 minutes;
# at 50 ms the soak takes about 4.
HANDLER_TIMEOUT_MS=${HANDLER_TIMEOUT_MS:-50}

NODE_POOL=${NODE_POOL:-32}
AXUM=${AXUM:-1}
# one runtime and one Postgres connection per core, as TechEmpower's axum entry
AXUM_THREADS=${AXUM_THREADS:-$(nproc)}
# what the report states as the command that made it
BENCH_COMMAND=""
for v in QUICK WORKERS AXUM AXUM_THREADS REPS DURATION MIXED_DURATION CONNS QCONNS SOAK SOAK_REQUESTS RSS_STEPS PROFILE PROFILE_FREQ PROFILE_CALLGRAPH WEBGRES ONLY NODE_POOL HANDLER_TIMEOUT_MS CAPACITY CAP_CONNS CAP_DURATION SSE AUTH ROUTE_COUNTS BENCH_TFB_DB BASE_BUILD; do
	[ -n "${!v:-}" ] && BENCH_COMMAND+="$v='${!v}' "
done
# BENCH_VIA: the command that ran this script (bench/before_after.sh sets it)
BENCH_COMMAND+=${BENCH_VIA:-bench/run.sh}
RUN_T0=$(date +%s)

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
# BENCH_OUT: where the results go (bench/before_after.sh sets it)
OUT=${BENCH_OUT:-$BENCH/results/$STAMP}
RAW=$OUT/raw
mkdir -p "$RAW"
CASES=$RAW/cases.jsonl
OPS=$RAW/ops.jsonl
: > "$CASES"; : > "$OPS"

die() { log "error: $*"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# note KEY JSON: one operational figure for the report
note() { printf '{"key":"%s","value":%s}\n' "$1" "$2" >> "$OPS"; }
jstr() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# WRK_AUTH: an Authorization header value that http_status and wrk_cmd send
# (the auth tier's tokens); unset: none.
http_status() {
	curl -s -o /dev/null -w '%{http_code}' --max-time "${2:-2}" ${WRK_AUTH:+-H "Authorization: $WRK_AUTH"} \
		"$1" 2>/dev/null || true
}
# wait_200 URL SECONDS: wait until URL answers 200; prints the wait in ms
wait_200() {
	local url=$1 limit_ms=$(( $2 * 1000 )) t0 t
	t0=$(now_ms)
	while :; do
		[ "$(http_status "$url" 1)" = 200 ] && { echo $(( $(now_ms) - t0 )); return 0; }
		t=$(now_ms)
		[ $(( t - t0 )) -ge "$limit_ms" ] && { echo -1; return 1; }
		sleep 0.01
	done
}

# --- what the harness and its references need ------------------------------
# scripts/deps.sh installs webgres' own packages (wrk, curl, Postgres with
# pgbench, libh2o-evloop-dev for h2o_hello, gcc); the references add Node.js
# and npm (node-pg), Python 3 (the report, the durability probe) and, for
# PROFILE=1, perf.  A command already on PATH is not asked for again: a
# nodejs package from elsewhere may carry its own npm.
bench_packages=()
command -v python3 >/dev/null || bench_packages+=(python3)
command -v node >/dev/null || bench_packages+=(nodejs)
command -v npm >/dev/null || bench_packages+=(npm)
command -v pgrep >/dev/null || bench_packages+=(procps)   # worker and CPU accounting
command -v nginx >/dev/null || bench_packages+=(nginx-light)   # the static and TLS tiers' reference
[ "$PROFILE" = 1 ] && ! command -v perf >/dev/null && bench_packages+=(linux-perf)
WEBGRES_DEPS_EXTRA="${bench_packages[*]}" "$ROOT/scripts/deps.sh" ||
	die "could not install what the bench needs (run as root, or install: ${bench_packages[*]:-see scripts/deps.sh})"
# wrk holds one descriptor per connection, and the shell's soft limit is
# usually 1024: take the hard limit (the capacity tier needs 10,000+).
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true

for tool in wrk pgbench curl python3 node npm cc pg_config pgrep; do
	command -v "$tool" >/dev/null || die "$tool is not installed (scripts/deps.sh installs it, with nodejs and npm for the bench)"
done
[ -x "$TFB_DB" ] || die "$TFB_DB is missing: it sets up the TechEmpower database"
# an hour of measuring is worth nothing if the report would quote a figure it
# must refuse: check that first (under a second)
PYTHONDONTWRITEBYTECODE=1 python3 "$BENCH/test_report.py" >/dev/null 2>&1 ||
	{ PYTHONDONTWRITEBYTECODE=1 python3 "$BENCH/test_report.py"; die "bench/test_report.py failed"; }

# The Postgres benchmarked: pg_config's, or PG_CONFIG's (make bench PG=18).
PG_CONFIG=${PG_CONFIG:-pg_config}
PKGLIB=$("$PG_CONFIG" --pkglibdir)
WEBGRES_SO=$PKGLIB/webgres.so
# pg_stat_statements where the installation has it (docs/versions.md).
PGSS=
[ -f "$PKGLIB/pg_stat_statements.so" ] && PGSS=pg_stat_statements
if [ "$WEBGRES" = 1 ]; then
	[ -f "$WEBGRES_SO" ] || die "$WEBGRES_SO is not installed: run 'make bench' (it installs first)"
	PRELOAD=webgres${PGSS:+,$PGSS}
else
	log "WEBGRES=0: references only"
	# scripts/tfb-db.sh creates the extension, which needs the library
	# preloaded: where it is installed, preload it with no workers
	PRELOAD=$PGSS
	[ -f "$WEBGRES_SO" ] && PRELOAD=webgres${PGSS:+,$PGSS}
	SOAK=0; PROFILE=0; RSS_STEPS=""
fi

# --- everything this run starts is stopped on exit --------------------------
TMP=$(mktemp -d /tmp/webgres-bench.XXXXXX)
chmod 755 "$TMP"               # the cluster's OS user must reach its directory
PGDIR=$TMP/pg
PIDS=()
cleanup() {
	local rc=$?
	set +e
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if [ -f "$PGDIR/postmaster.pid" ]; then
		"$CLUSTER" stop "$PGDIR" fast 2>/dev/null || "$CLUSTER" stop "$PGDIR" immediate
	fi
	if [ -f "$BASE_PGDIR/postmaster.pid" ]; then
		WEBGRES_BINDIR=$BASE_BINDIR "$CLUSTER" stop "$BASE_PGDIR" immediate 2>/dev/null
		cp "$BASE_PGDIR/postgres.log" "$RAW/postgres-base.log" 2>/dev/null
	fi
	if [ "$REF_PGDIR" != "$PGDIR" ] && [ -f "$REF_PGDIR/postmaster.pid" ]; then
		"$CLUSTER" stop "$REF_PGDIR" immediate 2>/dev/null
		cp "$REF_PGDIR/postgres.log" "$RAW/postgres-references.log" 2>/dev/null
	fi
	[ -f "$PGDIR/postgres.log" ] && cp "$PGDIR/postgres.log" "$RAW/postgres.log"
	rm -rf "$TMP"
	[ $rc -ne 0 ] && log "failed (exit $rc); partial results in $OUT"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- references: build and install ----------------------------------------
log "building bench/reference/h2o_hello"
cc -O2 -Wall -DH2O_USE_LIBUV=0 -o "$BENCH/reference/h2o_hello" \
	"$BENCH/reference/h2o_hello.c" -lh2o-evloop
NODEDIR=$BENCH/reference/node-pg
if [ ! -d "$NODEDIR/node_modules/pg" ] || [ "$NODEDIR/package-lock.json" -nt "$NODEDIR/node_modules/.package-lock.json" ]; then
	log "installing node-pg's dependencies (npm ci)"
	(cd "$NODEDIR" && npm ci --no-audit --no-fund --silent)
fi
AXUM_SERVER=""
if [ "$AXUM" = 1 ]; then
	log "building bench/reference/axum (cargo build --release, crates.io only; quick once cached)"
	AXUM_BIN=$("$BENCH/reference/axum/build.sh" 2> "$RAW/axum-build.log" | tail -n 1) && [ -x "$AXUM_BIN" ] ||
		{ cat "$RAW/axum-build.log" >&2; die "could not build the axum reference (AXUM=0 leaves it out)"; }
	AXUM_SERVER=axum
fi

# --- the cluster ------------------------------------------------------------
PGPORT=$(free_port); WG_PORT=$(free_port); H2O_PORT=$(free_port); NODE_PORT=$(free_port); AXUM_PORT=$(free_port)
PGHOST=$PGDIR/socket
export PGHOST PGPORT
MAX_CLIENTS=$(printf '%s\n' $CONNS $QCONNS 256 | sort -n | tail -n 1)
log "cluster in $PGDIR (port $PGPORT), webgres on 127.0.0.1:$WG_PORT, $WORKERS workers"
# cluster_settings PRELOAD WG_PORT WORKERS: the postgresql.conf lines of a
# bench cluster (this build's, and the older build's with BASE_BINDIR)
cluster_settings() {
	cat "$ROOT/scripts/tfb-postgres.conf"
	cat <<EOF
shared_preload_libraries = '$1'
webgres.listen = '127.0.0.1:$2'
webgres.workers = $3
max_worker_processes = $(( WORKERS + 8 ))
webgres.database = 'hello_world'
# TechEmpower's rules forbid sharing a transaction among requests: off, as
# the default is, set here so that the TFB tiers never depend on the default
webgres.share_read_transactions = off
# TechEmpower's database settings come from scripts/tfb-postgres.conf; room
# for pgbench's clients at the top level plus node-pg's idle pools
max_connections = $(( MAX_CLIENTS + WORKERS * NODE_POOL + AXUM_THREADS + 64 ))
EOF
}
cluster_settings "$PRELOAD" "$WG_PORT" "$([ "$WEBGRES" = 1 ] && echo "$WORKERS" || echo 0)" |
	"$CLUSTER" init "$PGDIR" "$PGPORT"
"$CLUSTER" start "$PGDIR"
log "setting up the TechEmpower database ($TFB_DB)"
"$TFB_DB" > "$RAW/tfb-db.log" 2>&1 || { cat "$RAW/tfb-db.log" >&2; die "$TFB_DB failed"; }

# The older build (BASE_BINDIR), in a cluster of its own with the same
# settings and its own TechEmpower set-up; it idles while the others run.
BASE_PGDIR=$TMP/pg-base
BASE_SERVER=""
if [ -n "$BASE_BINDIR" ] && [ "$WEBGRES" = 1 ]; then
	[ -x "$BASE_BINDIR/postgres" ] || die "BASE_BINDIR=$BASE_BINDIR has no postgres"
	BASE_PGPORT=$(free_port); WG_BASE_PORT=$(free_port)
	log "older build ${BASE_BUILD:-?}: cluster in $BASE_PGDIR (port $BASE_PGPORT), webgres on 127.0.0.1:$WG_BASE_PORT"
	cluster_settings "$PRELOAD" "$WG_BASE_PORT" "$WORKERS" |
		WEBGRES_BINDIR=$BASE_BINDIR "$CLUSTER" init "$BASE_PGDIR" "$BASE_PGPORT"
	WEBGRES_BINDIR=$BASE_BINDIR "$CLUSTER" start "$BASE_PGDIR"
	PGHOST=$BASE_PGDIR/socket PGPORT=$BASE_PGPORT WEBGRES_BINDIR=$BASE_BINDIR \
		"${BASE_TFB_DB:?BASE_TFB_DB must name the scripts/tfb-db.sh of the older build}" > "$RAW/tfb-db-base.log" 2>&1 ||
		{ cat "$RAW/tfb-db-base.log" >&2; die "$BASE_TFB_DB failed"; }
	wait_200 "http://127.0.0.1:$WG_BASE_PORT/plaintext" 60 >/dev/null || die "the older build did not answer 200 on /plaintext"
	BASE_SERVER=webgres-base
fi

# The database the references (pgbench, node-pg) use.  Beside an older
# build it is a third cluster, so that their writes (/updates) land in
# neither build's tables: each build's cluster then holds only what that
# build wrote, and neither starts a case with the other's dead tuples.
REF_PGDIR=$PGDIR REF_PGHOST=$PGHOST REF_PGPORT=$PGPORT
if [ -n "$BASE_SERVER" ]; then
	REF_PGDIR=$TMP/pg-references REF_PGPORT=$(free_port)
	REF_PGHOST=$REF_PGDIR/socket
	log "the references' database: cluster in $REF_PGDIR (port $REF_PGPORT), no webgres workers"
	cluster_settings "$PRELOAD" "$(free_port)" 0 | "$CLUSTER" init "$REF_PGDIR" "$REF_PGPORT"
	"$CLUSTER" start "$REF_PGDIR"
	PGHOST=$REF_PGHOST PGPORT=$REF_PGPORT "$TFB_DB" > "$RAW/tfb-db-references.log" 2>&1 ||
		{ cat "$RAW/tfb-db-references.log" >&2; die "$TFB_DB failed for the references' cluster"; }
fi
ref_postmaster_pid() { head -n 1 "$REF_PGDIR/postmaster.pid"; }

# Routes only the harness uses: the overhead probe, and the soak tier's
# failing, slow and acknowledging handlers.
bench_routes() {
	"$CLUSTER" psql "$PGDIR" -d hello_world > "$RAW/bench-routes.log" 2>&1 <<'SQL' || { cat "$RAW/bench-routes.log" >&2; die "could not add the bench routes"; }
CREATE TABLE bench_ack (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
GRANT ALL ON bench_ack TO PUBLIC;
CREATE FUNCTION bench_raise() RETURNS text LANGUAGE plpgsql AS
  $$BEGIN RAISE EXCEPTION 'bench: a handler that fails on purpose'; END$$;
INSERT INTO webgres.routes (method, path, handler) VALUES
  -- volatile on purpose: webgres answers a handler that folds to constants
  -- from memory; this one runs a transaction every time
  ('GET', '/select1', $$SELECT 200 AS status, 'text/plain' AS content_type,
      CASE WHEN random() >= 0 THEN 'x' END AS body$$),
  ('GET', '/bench/raise', $$SELECT 200 AS status, bench_raise() AS body$$),
  ('GET', '/bench/sleep', $$SELECT 200 AS status, 'slept' AS body FROM pg_sleep(2)$$),
  ('GET', '/bench/ack/:id', $$INSERT INTO bench_ack (id)
      SELECT (params->>'id')::bigint FROM request
      RETURNING 200 AS status, 'text/plain' AS content_type, id::text AS body$$),
  -- folds to one constant row: answered from memory, so its throughput is
  -- the cost of finding the route (the route-table tier)
  ('GET', '/bench/constant', $$SELECT 200 AS status, 'text/plain' AS content_type,
      'constant' AS body$$);
SQL
}
[ "$WEBGRES" = 1 ] && bench_routes

# handler_sql PATH: a pgbench script running the SQL of the TFB route at
# PATH exactly as its handler has it: what a client that asks Postgres for
# the finished response over a socket gets.  Empty without webgres.
handler_sql() {
	local f=$TMP/handler$(echo "$1" | tr -c 'A-Za-z0-9' '_').sql
	: > "$f"
	if [ "$WEBGRES" = 1 ]; then
		"$CLUSTER" psql "$PGDIR" -d hello_world -At \
			-c "SELECT handler || ';' FROM webgres.routes WHERE method = 'GET' AND path = '$1'" > "$f"
	fi
	echo "$f"
}
JSON_SQL=$(handler_sql /json); DB_SQL=$(handler_sql /db); FORTUNES_SQL=$(handler_sql /fortunes)
# updates_sql N: /updates' handler with its request (only ?queries=N is
# read) given as a row of its own, so that pgbench-sql runs the same
# statements, reads and UPDATE, with the client protocol in place of HTTP
# (and a backend for each client).  Empty when there is no handler to take.
updates_sql() {
	local f=$TMP/handler_updates_$1.sql
	sed "s/FROM request/FROM (SELECT '{\"queries\": \"$1\"}'::jsonb AS query) AS request/" \
		"$(handler_sql /updates)" > "$f"
	grep -q "AS request" "$f" || : > "$f"
	echo "$f"
}

if [ "$WEBGRES" = 1 ]; then
	log "restarting to time a cold start (pg_ctl start to the first 200 on /plaintext)"
	"$CLUSTER" stop "$PGDIR" fast
	t0=$(now_ms)
	"$CLUSTER" start "$PGDIR"
	t_ready=$(now_ms)
	first=$(wait_200 "http://127.0.0.1:$WG_PORT/plaintext" 60) || die "webgres did not answer 200 on /plaintext within 60 s (see $PGDIR/postgres.log)"
	note startup_ms "$(( t_ready - t0 + first ))"
	note startup_pg_ready_ms "$(( t_ready - t0 ))"
	note so_bytes "$(stat -c %s "$WEBGRES_SO")"
	log "first 200 after $(( t_ready - t0 + first )) ms"
fi

postmaster_pid() { head -n 1 "$PGDIR/postmaster.pid"; }
worker_pids() {
	local pids
	pids=$("$CLUSTER" psql "$PGDIR" -d postgres -At -c \
		"SELECT pid FROM pg_stat_activity WHERE backend_type ILIKE 'webgres%worker%' OR (backend_type ILIKE 'webgres%' AND backend_type NOT ILIKE '%supervisor%') ORDER BY pid" 2>/dev/null || true)
	[ -n "$pids" ] || pids=$(pgrep -P "$(postmaster_pid)" -f 'webgres.*worker' | sort -n || true)
	echo $pids
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# rss_json: {"PID": KiB, ...} for the webgres workers
rss_json() {
	local p sep="" out="{"
	for p in $(worker_pids); do out+="$sep\"$p\":$(rss_kib "$p")"; sep=","; done
	echo "$out}"
}
# machine_ticks: CPU ticks every core of the machine spent busy so far (user,
# nice, system, irq, softirq, steal from /proc/stat): the servers, Postgres,
# the load generator and whatever else runs on the machine.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# --- start the references -------------------------------------------------
"$BENCH/reference/h2o_hello" "$H2O_PORT" "$WORKERS" > "$RAW/h2o_hello.log" 2>&1 &
H2O_PID=$!; PIDS+=("$H2O_PID")
PORT=$NODE_PORT WORKERS=$WORKERS POOL=$NODE_POOL PGHOST=$REF_PGHOST PGPORT=$REF_PGPORT \
	node "$NODEDIR/server.js" > "$RAW/node-pg.log" 2>&1 &
NODE_PID=$!; PIDS+=("$NODE_PID")
if [ -n "$AXUM_SERVER" ]; then
	PORT=$AXUM_PORT THREADS=$AXUM_THREADS PGHOST=$REF_PGHOST PGPORT=$REF_PGPORT \
		"$AXUM_BIN" > "$RAW/axum.log" 2>&1 &
	AXUM_PID=$!; PIDS+=("$AXUM_PID")
fi
wait_200 "http://127.0.0.1:$H2O_PORT/plaintext" 10 >/dev/null || die "h2o_hello did not start"
[ -z "$AXUM_SERVER" ] || wait_200 "http://127.0.0.1:$AXUM_PORT/plaintext" 20 >/dev/null ||
	{ cat "$RAW/axum.log" >&2; die "the axum reference did not start"; }
# measured only once it answers what TechEmpower's verifier checks
[ -z "$AXUM_SERVER" ] || python3 "$BENCH/tfb_verify.py" "http://127.0.0.1:$AXUM_PORT" > "$RAW/axum-verify.txt" 2>&1 ||
	{ cat "$RAW/axum-verify.txt" >&2; die "the axum reference fails TechEmpower's checks (see $RAW/axum-verify.txt)"; }
wait_200 "http://127.0.0.1:$NODE_PORT/plaintext" 20 >/dev/null || die "node-pg did not start"

server_url() {
	case $1 in
	webgres) echo "http://127.0.0.1:$WG_PORT" ;;
	webgres-base) echo "http://127.0.0.1:$WG_BASE_PORT" ;;
	h2o) echo "http://127.0.0.1:$H2O_PORT" ;;
	node-pg) echo "http://127.0.0.1:$NODE_PORT" ;;
	axum) echo "http://127.0.0.1:$AXUM_PORT" ;;
	esac
}
# the processes whose CPU time a server's figures are charged with
server_ticks() {
	case $1 in
	webgres) tree_ticks "$(postmaster_pid)" ;;
	pgbench|pgbench-sql) tree_ticks "$(ref_postmaster_pid)" ;;
	webgres-base) tree_ticks "$(head -n 1 "$BASE_PGDIR/postmaster.pid")" ;;
	h2o) tree_ticks "$H2O_PID" ;;
	node-pg) echo $(( $(tree_ticks "$NODE_PID") + $(tree_ticks "$(ref_postmaster_pid)") )) ;;
	axum) echo $(( $(tree_ticks "$AXUM_PID") + $(tree_ticks "$(ref_postmaster_pid)") )) ;;
	esac
}

ACCEPT_PLAIN='text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7'
ACCEPT_JSON='application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7'
ACCEPT_HTML='text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

# wrk_cmd OUTFILE URL ACCEPT CONNS SECONDS SCRIPT [SCRIPT ARGS...]
wrk_cmd() {
	local out=$1 url=$2 accept=$3 conns=$4 secs=$5 script=$6 threads=$THREADS
	shift 6
	[ "$conns" -lt "$threads" ] && threads=$conns
	wrk -t "$threads" -c "$conns" -d "${secs}s" --timeout 8 --latency \
		-H 'Host: tfb-server' -H "Accept: $accept" -H 'Connection: keep-alive' \
		${WRK_AUTH:+-H "Authorization: $WRK_AUTH"} \
		-s "$BENCH/wrk/$script" "$url" ${1:+--} "$@" > "$out" 2>&1
}

# pgbench_cmd OUTFILE SCRIPT CONNS SECONDS: prints the WRKJSON-shaped result
pgbench_cmd() {
	local out=$1 script=$2 conns=$3 secs=$4 threads=$THREADS logdir
	[ "$conns" -lt "$threads" ] && threads=$conns
	logdir=$(mktemp -d "$TMP/pgbench.XXXXXX")
	# pgbench 15 logs a latency of 0 for most transactions of a script that
	# begins with an SQL command (35 to 70% of them at 16 to 256 clients here);
	# behind a meta-command the same script is timed right.  report.py flags
	# a run that still logged zeros.
	{ echo '\set bench_clock 0'; cat "$script"; } > "$logdir/script.sql"
	PGHOST=$REF_PGHOST PGPORT=$REF_PGPORT \
		pgbench -n -M prepared -f "$logdir/script.sql" --max-tries=10 -c "$conns" -j "$threads" -T "$secs" \
		-l --log-prefix="$logdir/log" -U benchmarkdbuser hello_world > "$out" 2>&1 || true
	python3 "$BENCH/report.py" pgbench-json "$out" "$logdir" >> "$out"
	rm -rf "$logdir"
}

# tcp_counters: the machine's TCP segments sent, delayed ACKs and tail loss
# probes so far, as "OUT DELAYED PROBES" (from /proc/net/snmp and netstat;
# the load generator's side counts too, since both ends are on this machine)
tcp_counters() {
	awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else printf "%s", $col["OutSegs"] }' /proc/net/snmp
	awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else printf " %s %s", $col["DelayedACKs"], $col["TCPLossProbes"] }' /proc/net/netstat
}

# run_one SERVER TIER ENDPOINT PATH ACCEPT CONNS PIPELINE REP SECONDS [PGBENCH SCRIPT]
run_one() {
	local server=$1 tier=$2 endpoint=$3 path=$4 accept=$5 conns=$6 pipe=$7 rep=$8 secs=$9 pgscript=${10:-}
	local out="$RAW/$tier.$server.$endpoint.$(echo "$path" | tr -c 'A-Za-z0-9=' '_').c$conns.p$pipe.r$rep.txt"
	local t0 t1 w0 w1 m0 m1 result tcp0 tcp1
	tcp0=$(tcp_counters)
	t0=$(server_ticks "$server"); m0=$(machine_ticks); w0=$(now_ms)
	if [[ $server == pgbench* ]]; then
		pgbench_cmd "$out" "$pgscript" "$conns" "$secs"
	elif [ "$pipe" -gt 1 ]; then
		wrk_cmd "$out" "$(server_url "$server")$path" "$accept" "$conns" "$secs" pipeline.lua "$pipe" || true
	else
		wrk_cmd "$out" "$(server_url "$server")$path" "$accept" "$conns" "$secs" report.lua || true
	fi
	w1=$(now_ms); m1=$(machine_ticks); t1=$(server_ticks "$server")
	tcp1=$(tcp_counters)
	result=$(sed -n 's/^WRKJSON //p' "$out" | tail -n 1)
	[ -n "$result" ] || result=null
	printf '{"tier":"%s","endpoint":"%s","path":"%s","conns":%d,"pipeline":%d,"server":"%s","rep":%d,"seconds":%d,"wall_ms":%d,"cpu_s":%.2f,"machine_cpu_s":%.2f,"tcp":%s,"result":%s}\n' \
		"$tier" "$endpoint" "$path" "$conns" "$pipe" "$server" "$rep" "$secs" $(( w1 - w0 )) \
		"$(awk -v t=$(( t1 - t0 )) -v h="$CLK_TCK" 'BEGIN { print t / h }')" \
		"$(awk -v t=$(( m1 - m0 )) -v h="$CLK_TCK" 'BEGIN { print t / h }')" \
		"$(echo "$tcp0 $tcp1" | awk 'NF == 6 { printf "{\"out_segs\":%d,\"delayed_acks\":%d,\"loss_probes\":%d}", $4 - $1, $5 - $2, $6 - $3; next } { printf "null" }')" \
		"$result" >> "$CASES"
	printf '  %-8s %-26s c=%-4s p=%-2s rep %s: %s req/s\n' "$server" "$path" "$conns" "$pipe" "$rep" \
		"$(awk '/^Requests\/sec:/ { print $2 } /^tps = / { print $3 }' "$out" | tail -n 1)" >&2
}

# bench_case TIER ENDPOINT PATH ACCEPT CONNS PIPELINE SERVER[:PGBENCH SCRIPT]...
# Repetitions are interleaved (webgres, then each reference, REPS times) so a
# drift in the machine's speed hits every server alike.
declare -A PRIMED=()
bench_case() {
	local tier=$1 endpoint=$2 path=$3 accept=$4 conns=$5 pipe=$6
	shift 6
	[ -n "${ONLY:-}" ] && ! [[ $endpoint =~ ^($ONLY)$ ]] && return 0
	local spec server script rep status live=() order
	for spec in "$@"; do
		server=${spec%%:*}
		[ "$server" = webgres ] && [ "$WEBGRES" != 1 ] && continue
		# BENCH_REFERENCES=0 (bench/guard.sh): the two webgres builds only
		[ "${BENCH_REFERENCES:-1}" = 0 ] && [[ $server != webgres* ]] && continue
		# pgbench-sql needs the handler's SQL, which only a webgres run has
		[[ $server == pgbench-sql && ! -s ${spec#*:} ]] && continue
		if [[ $server != pgbench* ]]; then
			status=$(http_status "$(server_url "$server")$path" 5)
			if [ "$status" != 200 ]; then
				log "skip: $server $path answers $status"
				printf '{"tier":"%s","endpoint":"%s","path":"%s","conns":%d,"pipeline":%d,"server":"%s","unavailable":"HTTP %s"}\n' \
					"$tier" "$endpoint" "$path" "$conns" "$pipe" "$server" "$status" >> "$CASES"
				continue
			fi
			# a short unrecorded primer the first time a server sees a path
			if [ -z "${PRIMED[$server$path]:-}" ]; then
				wrk_cmd "$RAW/primer.txt" "$(server_url "$server")$path" "$accept" 8 1 report.lua || true
				PRIMED[$server$path]=1
			fi
		fi
		live+=("$spec")
	done
	for rep in $(seq 1 "$REPS"); do
		# Beside an older build the two builds swap places every other
		# repetition: each in turn runs first, right after the previous
		# repetition's last reference, and each in turn follows the other.
		order=("${live[@]}")
		if [ $(( rep % 2 )) = 0 ] && [ "${#order[@]}" -ge 2 ] && [ "${order[1]%%:*}" = webgres-base ]; then
			order[0]=${live[1]} order[1]=${live[0]}
		fi
		for spec in "${order[@]}"; do
			server=${spec%%:*}; script=""
			[ "$spec" != "$server" ] && script=${spec#*:}
			run_one "$server" "$tier" "$endpoint" "$path" "$accept" "$conns" "$pipe" "$rep" "$DURATION" "$script"
			sleep 0.5
		done
	done
}

{
	echo "{"
	echo "\"stamp\": \"$STAMP\","
	echo "\"quick\": $QUICK, \"reps\": $REPS, \"duration_s\": $DURATION, \"workers\": $WORKERS,"
	echo "\"conns\": [$(echo $CONNS | tr ' ' ',')], \"qconns\": $QCONNS, \"wrk_threads\": $THREADS,"
	echo "\"node_pool\": $NODE_POOL, \"soak\": $SOAK, \"profile\": $PROFILE,"
	echo "\"axum_threads\": $([ -n "$AXUM_SERVER" ] && echo "$AXUM_THREADS" || echo null), \"rustc\": $(jstr "$([ -n "$AXUM_SERVER" ] && rustc --version 2>/dev/null)"),"
	echo "\"git\": $(jstr "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"),"
	# BASE_BUILD: the older build measured beside this one (before_after.sh)
	echo "\"base_build\": $(jstr "$([ -n "$BASE_SERVER" ] && echo "${BASE_BUILD:-unknown}")"),"
	echo "\"command\": $(jstr "$BENCH_COMMAND"),"
	echo "\"share_read_transactions\": $(jstr "$("$CLUSTER" psql "$PGDIR" -d postgres -At -c 'SHOW webgres.share_read_transactions' 2>/dev/null || echo unknown)"),"
	echo "\"nproc\": $(nproc), \"cpu\": $(jstr "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"),"
	echo "\"kernel\": $(jstr "$(uname -r)"), \"postgres\": $(jstr "$("$PG_CONFIG" --version)"),"
	echo "\"libh2o\": $(jstr "$(dpkg-query -W -f='${Version}' libh2o-evloop0.13 2>/dev/null || dpkg-query -W -f='${Version}' libh2o-evloop-dev 2>/dev/null || echo unknown)"),"
	echo "\"node\": $(jstr "$(node --version)"), \"wrk\": $(jstr "$(wrk -v 2>&1 | head -n 1 | cut -d' ' -f2)"),"
	echo "\"mem_total_kib\": $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	echo "}"
} > "$RAW/meta.json"

# --- tier 3a: worker RSS over a fixed number of requests --------------------
[ "$WEBGRES" = 1 ] && note rss_idle "$(rss_json)"
done_reqs=0
for step in $RSS_STEPS; do
	n=$(( step - done_reqs ))
	[ "$n" -gt 0 ] || continue
	log "RSS tier: $n more /db requests (to $step)"
	rm -f "$TMP/rss-marker".*
	wrk -t "$THREADS" -c 64 -d 600s --timeout 8 -s "$BENCH/wrk/soak.lua" \
		"http://127.0.0.1:$WG_PORT" -- $(( (n + THREADS - 1) / THREADS )) 0 0 "$TMP/rss-marker" > "$RAW/rss.$step.txt" 2>&1 &
	wpid=$!; PIDS+=("$wpid")
	for _ in $(seq 1 6000); do
		[ "$(ls "$TMP"/rss-marker.* 2>/dev/null | wc -l)" -ge "$THREADS" ] && break
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -INT "$wpid" 2>/dev/null || true
	wait "$wpid" || true
	done_reqs=$step
	note "rss_after_$step" "$(rss_json)"
	note "rss_run_$step" "$(sed -n 's/^WRKJSON //p' "$RAW/rss.$step.txt" | tail -n 1 | grep . || echo null)"
done

# --- tier 1 + 2 + 4: TechEmpower endpoints against the references ----------
log "TechEmpower endpoints: $REPS repetition(s) of ${DURATION}s, connections $CONNS (queries: $QCONNS)"
for c in $CONNS; do
	bench_case tfb plaintext /plaintext "$ACCEPT_PLAIN" "$c" 1 webgres $BASE_SERVER h2o node-pg $AXUM_SERVER
	bench_case tfb json /json "$ACCEPT_JSON" "$c" 1 webgres $BASE_SERVER h2o "pgbench-sql:$JSON_SQL" node-pg $AXUM_SERVER
	bench_case tfb db /db "$ACCEPT_JSON" "$c" 1 webgres $BASE_SERVER "pgbench:$BENCH/pgbench/db.sql" "pgbench-sql:$DB_SQL" node-pg $AXUM_SERVER
	bench_case tfb fortunes /fortunes "$ACCEPT_HTML" "$c" 1 webgres $BASE_SERVER "pgbench:$BENCH/pgbench/fortunes.sql" \
		"pgbench-sql:$FORTUNES_SQL" node-pg $AXUM_SERVER
	bench_case tfb plaintext-pipelined /plaintext "$ACCEPT_PLAIN" "$c" 16 webgres $BASE_SERVER h2o node-pg $AXUM_SERVER
done
for q in 1 5 20; do
	bench_case tfb queries "/queries?queries=$q" "$ACCEPT_JSON" "$QCONNS" 1 webgres $BASE_SERVER node-pg $AXUM_SERVER
done
for q in 1 5 20; do
	if [ "$q" = 1 ]; then script=$BENCH/pgbench/updates.sql
	else script=$TMP/updates-$q.sql; "$BENCH/pgbench/updates.sh" "$q" > "$script"; fi
	bench_case tfb updates "/updates?queries=$q" "$ACCEPT_JSON" "$QCONNS" 1 webgres $BASE_SERVER "pgbench:$script" \
		"pgbench-sql:$(updates_sql "$q")" node-pg $AXUM_SERVER
done
for n in 1 20 100; do
	bench_case tfb cached-queries "/cached-queries?count=$n" "$ACCEPT_JSON" "$QCONNS" 1 webgres $BASE_SERVER node-pg $AXUM_SERVER
done
mid=$(echo $CONNS | awk '{ print $(int((NF + 1) / 2)) }')
bench_case overhead select1 /select1 "$ACCEPT_PLAIN" "$mid" 1 webgres

# --- tier 6: route-table size -----------------------------------------------
# other_routes N: replaces the generated routes with N new ones.  They have a
# higher priority than /bench/constant, so a router that tries routes in
# order passes all of them first; three shapes (literal then parameter, one
# literal, parameter then literal) so that none is trivially skipped.
other_routes() {
	"$CLUSTER" psql "$PGDIR" -d hello_world -q >> "$RAW/route-table.log" 2>&1 <<SQL
SET client_min_messages = warning;
DELETE FROM webgres.routes WHERE path LIKE '/bench/other/%' OR path LIKE '/other%' OR path LIKE '/:p/other%';
INSERT INTO webgres.routes (method, path, priority, handler)
SELECT 'GET', CASE i % 3 WHEN 0 THEN '/bench/other/' || i || '/:id'
                         WHEN 1 THEN '/other' || i
                         ELSE '/:p/other' || i END,
       1, 'SELECT 200 AS status, ''other'' AS body'
FROM generate_series(1, $1) AS i;
SQL
}
if [ "$WEBGRES" = 1 ] && { [ -z "${ONLY:-}" ] || [[ routes =~ ^($ONLY)$ ]]; }; then
	for n in $ROUTE_COUNTS; do
		log "route table: /bench/constant beside $n other routes"
		other_routes "$n" || die "could not add $n routes (see $RAW/route-table.log)"
		# the query string only names the case: it takes no part in routing
		bench_case routes routes "/bench/constant?others=$n" "$ACCEPT_PLAIN" "$mid" 1 webgres
	done
	other_routes 0 || true
fi

# --- tier: per-route counting on and off (webgres.track_route_stats) ---------
# The same build, the same cluster: /plaintext and /db with the per-route
# counters (route_stats.c) on, then off, alternating every repetition.  The
# query string only names the case.
set_track_route_stats() {
	"$CLUSTER" psql "$PGDIR" -d postgres -q -c "ALTER SYSTEM SET webgres.track_route_stats = $1" \
		-c "SELECT pg_reload_conf()" >> "$RAW/counting.log" 2>&1
	# Workers take a reload when their event loop next comes round: at once,
	# idle or busy; a second is ample.
	sleep 1
}
if [ "$WEBGRES" = 1 ] && { [ -z "${ONLY:-}" ] || [[ counting =~ ^($ONLY)$ ]]; }; then
	log "per-route counting on and off: /plaintext and /db at c=$mid"
	for rep in $(seq 1 "$REPS"); do
		for setting in on off; do
			set_track_route_stats "$setting"
			run_one webgres counting counting-plaintext "/plaintext?route_stats=$setting" "$ACCEPT_PLAIN" "$mid" 1 "$rep" "$DURATION"
			sleep 0.5
			run_one webgres counting counting-db "/db?route_stats=$setting" "$ACCEPT_JSON" "$mid" 1 "$rep" "$DURATION"
			sleep 0.5
		done
	done
	set_track_route_stats on
fi

# --- tier: authentication cost (AUTH=1, default on) --------------------------
# /db with no token (the TechEmpower route, auth none), and the same handler
# on a route with auth = 'optional' called without a token (it runs as
# webgres.anon_role), with a valid HS256 token and with a valid ES256 token
# (made with PyJWT, test/t/jwt_mint.py) that claim the same role.  One
# token per case, so after the first request it is found in the worker's
# cache (docs/authentication.md).  The four cases take turns within each
# repetition, so that a noisy moment falls on all of them.
auth_tier() {
	local py keys secret hs es rep spec endpoint path auth
	py=$("$ROOT/scripts/pydeps.sh" | tail -1) || return 1
	keys=$TMP/jwt; mkdir -p "$keys"
	"$py" "$ROOT/test/t/jwt_mint.py" keys "$keys" || return 1
	chmod -R a+rX "$keys"
	secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
	"$CLUSTER" psql "$PGDIR" -d hello_world -q >> "$RAW/auth.log" 2>&1 <<SQL || return 1
ALTER SYSTEM SET webgres.jwt_secret = '$secret';
ALTER SYSTEM SET webgres.jwt_keys_file = '$keys/jwks.json';
ALTER SYSTEM SET webgres.anon_role = 'bench_auth_user';
SELECT pg_reload_conf();
DO \$\$ BEGIN CREATE ROLE bench_auth_user; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
GRANT SELECT ON world TO bench_auth_user;
GRANT bench_auth_user TO benchmarkdbuser;
DELETE FROM webgres.routes WHERE path = '/bench/auth/db';
INSERT INTO webgres.routes (method, path, handler, owner, search_path, auth)
  SELECT method, '/bench/auth/db', handler, owner, search_path, 'optional'
  FROM webgres.routes WHERE method = 'GET' AND path = '/db';
SQL
	read -r hs es < <(printf '[{"alg": "HS256", "secret": "%s", "claims": {"role": "bench_auth_user", "exp": %d}},
		{"alg": "ES256", "claims": {"role": "bench_auth_user", "exp": %d}}]' \
		"$secret" $(( $(date +%s) + 86400 )) $(( $(date +%s) + 86400 )) |
		"$py" "$ROOT/test/t/jwt_mint.py" tokens "$keys" | tr '\n' ' ')
	[ -n "$es" ] || return 1
	local cases=("db-no-token /db -" "db-anon /bench/auth/db -"
		"db-hs256 /bench/auth/db Bearer:$hs" "db-es256 /bench/auth/db Bearer:$es")
	log "authentication: /db without a token; a route with auth without a token, with HS256, with ES256; at c=$mid"
	for spec in "${cases[@]}"; do
		read -r endpoint path auth <<< "$spec"
		[ "$auth" = - ] && auth="" || auth=${auth/:/ }
		if [ "$(WRK_AUTH=$auth http_status "$(server_url webgres)$path" 5)" != 200 ]; then
			log "auth tier: $path ($endpoint) does not answer 200"
			return 1
		fi
		WRK_AUTH=$auth wrk_cmd "$RAW/primer.txt" "$(server_url webgres)$path" "$ACCEPT_JSON" 8 1 report.lua || true
	done
	for rep in $(seq 1 "$REPS"); do
		for spec in "${cases[@]}"; do
			read -r endpoint path auth <<< "$spec"
			[ "$auth" = - ] && auth="" || auth=${auth/:/ }
			WRK_AUTH=$auth run_one webgres auth "$endpoint" "$path" "$ACCEPT_JSON" "$mid" 1 "$rep" "$DURATION"
			sleep 0.5
		done
	done
}
if [ "$WEBGRES" = 1 ] && [ "${AUTH:-1}" = 1 ] &&
	{ [ -z "${ONLY:-}" ] || [[ auth =~ ^($ONLY)$ ]]; }; then
	auth_tier || log "auth tier failed; see $RAW/auth.log"
fi
[ "$WEBGRES" = 1 ] && note rss_after_cases "$(rss_json)"

# --- tier 7: connection capacity (CAPACITY=1) --------------------------------
# Throughput and latency from 256 to 10,000 keep-alive connections, what an
# idle connection costs, and the limits that bound the count.
if [ "$CAPACITY" = 1 ] && [ "$WEBGRES" = 1 ]; then
	log "connection capacity: $CAP_CONNS connections on /plaintext and /db (wrk open file limit $(ulimit -Sn))"
	# Idle-connection memory first, while the workers' heaps are still small.
	if [ -z "${ONLY:-}" ] || [[ plaintext-conns =~ ^($ONLY)$ ]]; then
		wp=$(worker_pids)
		idle=$(python3 "$BENCH/idleconns.py" "$WG_PORT" 5000 $wp 2> "$RAW/idleconns.err" || echo null)
		note capacity_idle "${idle:-null}"
		first_worker=$(echo $wp | awk '{ print $1 }')
		note capacity_limits "$(printf '{"somaxconn":%s,"tcp_max_syn_backlog":%s,"port_range":"%s","file_max":%s,"nr_open":%s,"bench_nofile_soft":%s,"bench_nofile_hard":%s,"worker_nofile_soft":%s,"listen_backlog":%s,"workers":%d}' \
			"$(cat /proc/sys/net/core/somaxconn)" "$(cat /proc/sys/net/ipv4/tcp_max_syn_backlog)" \
			"$(tr -s '\t ' ' ' < /proc/sys/net/ipv4/ip_local_port_range)" "$(cat /proc/sys/fs/file-max)" \
			"$(cat /proc/sys/fs/nr_open)" "$(ulimit -Sn)" "$(ulimit -Hn)" \
			"$(awk '/^Max open files/ { print $4 }' "/proc/$first_worker/limits" 2>/dev/null | grep . || echo null)" \
			"$(ss -ltnH "sport = :$WG_PORT" 2>/dev/null | awk 'NR == 1 { print $3 }' | grep . || echo null)" \
			"$WORKERS")"
		sleep 1
	fi
	# bare h2o on /plaintext: how much of the drop is the machine's, not webgres'
	for c in $CAP_CONNS; do
		DURATION=$CAP_DURATION bench_case capacity plaintext-conns /plaintext "$ACCEPT_PLAIN" "$c" 1 webgres h2o
		# as TechEmpower's plaintext test runs it: 16 requests pipelined
		DURATION=$CAP_DURATION bench_case capacity plaintext-pipelined-conns /plaintext "$ACCEPT_PLAIN" "$c" 16 webgres h2o
		DURATION=$CAP_DURATION bench_case capacity db-conns /db "$ACCEPT_JSON" "$c" 1 webgres
	done
fi

# --- tier 4: where the time goes (PROFILE=1) --------------------------------
# perf on one worker while wrk loads /plaintext, /json, /db, /fortunes and
# /updates?queries=20 at the middle connection count (/updates runs its
# reads and UPDATE on the worker, so their executor time per request, which
# any server running these statements pays too, is in its account): that
# worker's CPU time over the window (every thread's schedstat, in ns) over
# the requests it served in it (its row of webgres.workers) gives its CPU
# microseconds per request, and
# bench/profile_account.py splits them by library, by step and by function.
# PROFILE_FREQ samples a second of the worker's CPU time, call graphs by
# PROFILE_CALLGRAPH (perf's --call-graph; dwarf, copies of the stack, by
# default: libc has no frame pointers). As long again without perf, half
# before its window and half after, says what the sampling costs the worker.
# It runs whenever PROFILE=1, whatever ONLY says.
PROFILE_FREQ=${PROFILE_FREQ:-1999}
PROFILE_CALLGRAPH=${PROFILE_CALLGRAPH:-dwarf,8192}
# task_ns PID: CPU nanoseconds all of PID's threads have run so far
task_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
worker_requests() {
	"$CLUSTER" psql "$PGDIR" -d hello_world -At -c "SELECT requests FROM webgres.workers WHERE pid = $1" 2>> "$RAW/profile.err"
}
if [ "$PROFILE" = 1 ]; then
	if ! command -v perf >/dev/null; then
		note profile '"perf is not installed (apt-get install linux-perf)"'
	elif ! perf record -e cpu-clock -o "$TMP/probe.data" -- true >/dev/null 2>&1; then
		note profile '"perf record does not work on this machine (perf_event_paranoid or no PMU access)"'
	else
		for spec in "/plaintext $ACCEPT_PLAIN" "/json $ACCEPT_JSON" "/db $ACCEPT_JSON" "/fortunes $ACCEPT_HTML" \
			"/updates?queries=20 $ACCEPT_JSON"; do
			path=${spec%% *}; accept=${spec#* }
			# the first HTTP worker: the load spreads over all of them alike
			wpid=$("$CLUSTER" psql "$PGDIR" -d hello_world -At -c "SELECT pid FROM webgres.workers ORDER BY worker LIMIT 1" 2>> "$RAW/profile.err")
			[ -n "$wpid" ] || break
			name=$(printf %s "$path" | tr -c 'A-Za-z0-9' '_')
			log "profiling $path on worker $wpid ($mid connections, $DURATION s)"
			wrk_cmd "$RAW/profile-load$name.txt" "http://127.0.0.1:$WG_PORT$path" "$accept" "$mid" $(( 2 * DURATION + 3 )) report.lua &
			lpid=$!; PIDS+=("$lpid")
			# perf attaches now, its events off until the fifo turns them on:
			# the CPU time and requests read just outside them bracket them
			rm -f "$TMP/perf.ctl" "$TMP/perf.ack"; mkfifo "$TMP/perf.ctl" "$TMP/perf.ack"
			perf record -e cpu-clock -F "$PROFILE_FREQ" --call-graph "$PROFILE_CALLGRAPH" -p "$wpid" \
				-D -1 --control "fifo:$TMP/perf.ctl,$TMP/perf.ack" -o "$TMP/perf$name.data" > "$RAW/perf-record$name.log" 2>&1 &
			ppid=$!; PIDS+=("$ppid")
			exec 8<> "$TMP/perf.ctl" 9<> "$TMP/perf.ack"
			sleep 1
			# half of DURATION unprofiled before perf's window and half after:
			# what the sampling itself costs the worker, drift cancelled
			half=$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')
			b0=$(task_ns "$wpid"); q0=$(worker_requests "$wpid")
			sleep "$half"
			c0=$(task_ns "$wpid"); echo enable >&8; read -r -t 10 _ <&9 || true
			r0=$(worker_requests "$wpid")
			sleep "$DURATION"
			echo disable >&8; read -r -t 10 _ <&9 || true
			c1=$(task_ns "$wpid"); r1=$(worker_requests "$wpid")
			sleep "$half"
			b1=$(task_ns "$wpid"); q1=$(worker_requests "$wpid")
			kill -INT "$ppid" 2>/dev/null || true
			wait "$ppid" || true
			exec 8>&- 9<&-
			wait "$lpid" || true
			if [ -z "$r0" ] || [ -z "$r1" ] || [ $(( r1 - r0 )) -le 0 ]; then
				note "profile_request:$path" "$(jstr "no requests counted for worker $wpid in webgres.workers")"
				continue
			fi
			acct=$(nice python3 "$BENCH/profile_account.py" --json "$TMP/perf$name.data" $(( r1 - r0 )) \
				"$(awk -v n=$(( c1 - c0 )) 'BEGIN { printf "%.0f", n / 1000 }')" "$RAW/profile$name.md" 2> "$RAW/profile$name.err") ||
				acct=$(jstr "bench/profile_account.py failed (see raw/profile$name.err)")
			# the pid, the load's figures and the sampling, beside the account
			note "profile_request:$path" "$(python3 -c '
import json, sys
a = json.loads(sys.argv[1])
if isinstance(a, dict):
    a.update(pid=int(sys.argv[2]), conns=int(sys.argv[3]), seconds=int(sys.argv[4]),
             freq=int(sys.argv[5]), call_graph=sys.argv[6])
    if a.get("cpu_us"):        # samples taken of those the CPU time allows
        a["sample_coverage"] = round(a["samples"] / (a["cpu_us"] / 1e6 * a["freq"]), 3)
    cpu, n = (int(x or 0) for x in sys.argv[8:10])
    if cpu > 0 and n > 0:
        a["us_per_request_unprofiled"] = round(cpu / 1000 / n, 3)
    for line in open(sys.argv[7]):
        if line.startswith("WRKJSON "):
            w = json.loads(line[8:])
            a["wrk_requests"] = w.get("requests")
print(json.dumps(a))' "$acct" "$wpid" "$mid" "$DURATION" "$PROFILE_FREQ" "$PROFILE_CALLGRAPH" "$RAW/profile-load$name.txt" \
				"$(( ${c0:-0} - ${b0:-0} + ${b1:-0} - ${c1:-0} ))" "$(( ${r0:-0} - ${q0:-0} + ${q1:-0} - ${r1:-0} ))")"
			rm -f "$TMP/perf$name.data"
		done
		note profile "$(jstr "perf record -e cpu-clock -F $PROFILE_FREQ --call-graph $PROFILE_CALLGRAPH on one webgres worker (software clock: this machine exposes no hardware counters)")"
	fi
fi

# --- soak and faults (SOAK=1) -----------------------------------------------
if [ "$SOAK" = 1 ]; then
	log "soak: $SOAK_REQUESTS requests through 256 connections (10% raise, 1% sleep past the handler timeout)"
	"$CLUSTER" psql "$PGDIR" -d postgres -c "ALTER SYSTEM SET webgres.handler_timeout = $HANDLER_TIMEOUT_MS" \
		-c "SELECT pg_reload_conf()" > /dev/null 2>&1 || log "note: could not set webgres.handler_timeout"
	sleep 1
	note soak_rss_before "$(rss_json)"
	rm -f "$TMP/soak-marker".*
	wrk -t "$THREADS" -c 256 -d 1800s --timeout 8 --latency -s "$BENCH/wrk/soak.lua" \
		"http://127.0.0.1:$WG_PORT" -- $(( (SOAK_REQUESTS + THREADS - 1) / THREADS )) 10 1 "$TMP/soak-marker" > "$RAW/soak.txt" 2>&1 &
	wpid=$!; PIDS+=("$wpid")
	for _ in $(seq 1 18000); do
		[ "$(ls "$TMP"/soak-marker.* 2>/dev/null | wc -l)" -ge "$THREADS" ] && break
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -INT "$wpid" 2>/dev/null || true
	wait "$wpid" || true
	note soak "$(sed -n 's/^WRKJSON //p' "$RAW/soak.txt" | tail -n 1 | grep . || echo null)"
	note soak_rss_after "$(rss_json)"

	# TechEmpower's synchronous_commit = off lets a crash lose the last
	# commits, acknowledged or not; the durability check needs it on.
	log "faults under load: restart -m fast, restart -m immediate, SIGKILL of a worker"
	"$CLUSTER" psql "$PGDIR" -d postgres -c "ALTER SYSTEM SET synchronous_commit = on" \
		-c "SELECT pg_reload_conf()" > /dev/null
	sleep 1
	rm -f "$TMP/ack.stop"
	python3 "$BENCH/ackclient.py" "$WG_PORT" "$RAW/acked.txt" "$TMP/ack.stop" 600 > "$RAW/ackclient.json" 2> "$RAW/ackclient.err" &
	apid=$!; PIDS+=("$apid")
	wrk -t "$THREADS" -c 64 -d 600s --timeout 2 -s "$BENCH/wrk/report.lua" \
		"http://127.0.0.1:$WG_PORT/db" > "$RAW/faults-load.txt" 2>&1 &
	lpid=$!; PIDS+=("$lpid")
	for fault in restart-fast restart-immediate kill-worker; do
		sleep 3
		t0=$(now_ms)
		case $fault in
		restart-fast) "$CLUSTER" stop "$PGDIR" fast; "$CLUSTER" start "$PGDIR" ;;
		restart-immediate) "$CLUSTER" stop "$PGDIR" immediate; "$CLUSTER" start "$PGDIR" ;;
		kill-worker)
			victim=$(worker_pids | awk '{ print $1 }')
			if [ -n "$victim" ]; then kill -KILL "$victim"; else log "no worker found to kill"; fi
			sleep 0.2 ;;
		esac
		waited=$(wait_200 "http://127.0.0.1:$WG_PORT/db" 60) || true
		if [ "$waited" -ge 0 ]; then ms=$(( $(now_ms) - t0 )); else ms=-1; fi
		note "fault_$fault" "{\"resumed_ms\":$ms}"
		log "  $fault: serving again after $ms ms"
	done
	sleep 2
	touch "$TMP/ack.stop"
	wait "$apid" || true
	kill -INT "$lpid" 2>/dev/null || true
	wait "$lpid" || true
	note fault_load "$(sed -n 's/^WRKJSON //p' "$RAW/faults-load.txt" | tail -n 1 | grep . || echo null)"
	# every fault drops the load's connections: socket errors are expected
	# here, and the report prints them with what each kind means
	log "  /db load through the faults: $(grep -E '^ *(Socket errors|Non-2xx)' "$RAW/faults-load.txt" | sed 's/^ *//' | tr '\n' ';' | sed 's/;$//' | grep . || echo 'no socket errors')"
	acked=$(wc -l < "$RAW/acked.txt")
	present=0
	if [ "$acked" -gt 0 ]; then
		cp "$RAW/acked.txt" "$TMP/acked.txt"; chmod 644 "$TMP/acked.txt"
		present=$("$CLUSTER" psql "$PGDIR" -d hello_world -At \
			-c "CREATE TEMP TABLE acked (id bigint)" \
			-c "\\copy acked FROM '$TMP/acked.txt'" \
			-c "SELECT count(*) FROM acked JOIN bench_ack USING (id)" | tail -n 1)
	fi
	note durability "{\"acknowledged\":$acked,\"present\":${present:-0},\"client\":$(cat "$RAW/ackclient.json" 2>/dev/null | grep . || echo null)}"
fi

# --- tier: mixed (slow handlers beside /db; bench/mixed.sh) -----------------
# Its own cluster with make run's settings; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ mixed =~ ^(${ONLY:-})$ ]]; }; then
	log "mixed tier"
	DURATION=${MIXED_DURATION:-$DURATION} REPS=$REPS "$BENCH/mixed.sh" "$RAW/mixed" > "$RAW/mixed.log" 2>&1 \
		|| log "mixed tier failed (see $RAW/mixed.log)"
	if [ -n "$BASE_SERVER" ]; then
		log "mixed tier, older build ${BASE_BUILD:-}"
		WEBGRES_BINDIR=$BASE_BINDIR BENCH_TFB_DB=$BASE_TFB_DB DURATION=${MIXED_DURATION:-$DURATION} REPS=$REPS \
			"$BENCH/mixed.sh" "$RAW/mixed-base" > "$RAW/mixed-base.log" 2>&1 \
			|| log "mixed tier of the older build failed (see $RAW/mixed-base.log)"
	fi
fi

# --- tier: stream (a 1M-row table export in mode stream; bench/stream.sh) ----
# Its own cluster; in full runs, or when ONLY names it. ROWS sets the size.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ stream =~ ^(${ONLY:-})$ ]]; }; then
	log "stream tier"
	REPS=$REPS "$BENCH/stream.sh" "$RAW/stream" > "$RAW/stream.log" 2>&1 \
		|| log "stream tier failed (see $RAW/stream.log)"
fi

# --- tier: TLS (handshakes, /json and /db over TLS; bench/tls.sh) -----------
# Its own cluster; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ tls =~ ^(${ONLY:-})$ ]]; }; then
	log "tls tier"
	REPS=$REPS DURATION=$DURATION WORKERS=$WORKERS "$BENCH/tls.sh" "$RAW/tls" > "$RAW/tls.log" 2>&1 \
		|| log "tls tier failed (see $RAW/tls.log)"
fi

# --- tier: static (files against nginx, and compression; bench/static.sh) ----
# Its own cluster and nginx; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ static =~ ^(${ONLY:-})$ ]]; }; then
	log "static tier"
	WORKERS=$WORKERS REPS=$REPS DURATION=$DURATION "$BENCH/static.sh" "$RAW/static" > "$RAW/static.log" 2>&1 \
		|| log "static tier failed (see $RAW/static.log)"
fi

# --- tier: rate limits (a limit never hit, and clients over one; bench/ratelimit.sh) ---
# Its own cluster; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ ratelimit =~ ^(${ONLY:-})$ ]]; }; then
	log "rate-limit tier"
	WORKERS=$WORKERS REPS=$REPS DURATION=$DURATION "$BENCH/ratelimit.sh" "$RAW/ratelimit" > "$RAW/ratelimit.log" 2>&1 \
		|| log "rate-limit tier failed (see $RAW/ratelimit.log)"
fi

# --- tier: uploads (bulk ingest against \copy, concurrent multipart uploads; bench/uploads.sh) ---
# Its own cluster; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ uploads =~ ^(${ONLY:-})$ ]]; }; then
	log "uploads tier"
	WORKERS=$WORKERS "$BENCH/uploads.sh" "$RAW/uploads" > "$RAW/uploads.log" 2>&1 \
		|| log "uploads tier failed (see $RAW/uploads.log)"
fi

# --- tier: websocket (echo against node-ws, NOTIFY fan-out, idle sockets; bench/websocket.sh) ---
# Its own cluster; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ websocket =~ ^(${ONLY:-})$ ]]; }; then
	log "websocket tier"
	WORKERS=$WORKERS REPS=$REPS DURATION=$DURATION "$BENCH/websocket.sh" "$RAW/websocket" > "$RAW/websocket.log" 2>&1 \
		|| log "websocket tier failed (see $RAW/websocket.log)"
fi

# --- tier: scale-out (reads through HAProxy over 1-3 nodes; bench/scaleout.sh) ---
# Its own three clusters and HAProxy; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ scaleout =~ ^(${ONLY:-})$ ]]; }; then
	log "scale-out tier"
	REPS=$REPS DURATION=$DURATION "$BENCH/scaleout.sh" "$RAW/scaleout" > "$RAW/scaleout.log" 2>&1 \
		|| log "scale-out tier failed (see $RAW/scaleout.log)"
fi

# --- tier: board (the application under hundreds of event streams; bench/board.sh) ---
# Its own cluster set up as make demo does; in full runs, or when ONLY names it.
if [ "$WEBGRES" = 1 ] && { { [ "$QUICK" = 0 ] && [ -z "${ONLY:-}" ]; } || [[ board =~ ^(${ONLY:-})$ ]]; }; then
	log "board tier"
	DURATION=$DURATION "$BENCH/board.sh" "$RAW/board" > "$RAW/board.log" 2>&1 \
		|| log "board tier failed (see $RAW/board.log)"
fi

# --- sse: event-stream subscribers (bench/sse/run.sh, a cluster of its own) ---
if [ "$WEBGRES" = 1 ] && [ "${SSE:-1}" = 1 ] && { [ -z "${ONLY:-}" ] || [[ sse =~ ^($ONLY)$ ]]; }; then
	log "sse tier: event-stream subscribers, NOTIFY-to-delivery latency, worker RSS"
	"$BENCH/sse/run.sh" "$RAW" || log "sse tier failed; see $RAW/sse-postgres.log"
fi

# --- report -------------------------------------------------------------------
note elapsed_s "$(( $(date +%s) - RUN_T0 ))"
log "writing the report"
python3 "$BENCH/report.py" build "$OUT"
mkdir -p "$BENCH/results/latest"
if [ -z "${BENCH_OUT:-}" ]; then
	cp "$OUT/report.md" "$OUT/chart.svg" "$OUT/results.json" "$BENCH/results/latest/"
	log "done: $OUT/report.md (copied to bench/results/latest/)"
else
	log "done: $OUT/report.md"
fi
