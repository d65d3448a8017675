#!/usr/bin/env bash
# The bench's mixed tier: does a slow route hurt the fast ones?
#
#   bench/mixed.sh OUTDIR
#
# Starts its own throwaway cluster with make run's settings (scripts/run.sh:
# two workers per CPU, webgres.executors, max_worker_processes), sets up the
# TechEmpower database, and adds one route whose handler takes 1 s.  Then,
# for each level of SLOW clients (default "0 2 8 32"), it runs
# bench/slowclients.py (each client loops request -> response on the slow
# route) and, meanwhile, wrk on /db with MIXED_CONNS (64) connections for DURATION
# seconds, REPS times.  Writes OUTDIR/mixed.jsonl, one line per run, and
# prints a table of min / median / max /db throughput and p99 per level,
# with the slow route's answered and refused counts.
#
# Settings (environment): SLOW, MIXED_CONNS (64; not CONNS, which bench/run.sh
# uses for its own levels), DURATION (default 10), REPS (3),
# EXECUTORS (default as in scripts/run.sh), WORKERS (2 x nproc), BENCH_TFB_DB
# (the script that sets up the TechEmpower database; an older build's own).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script mixed "${1:-}"
SLOW=${SLOW:-0 2 8 32}
CONNS=${MIXED_CONNS:-64}
DURATION=${DURATION:-10}
REPS=${REPS:-3}
WORKERS=${WORKERS:-$(( 2 * $(nproc) ))}
EXECUTORS=${EXECUTORS:-4}

throwaway_cluster mixed

log "cluster in $PGDIR: $WORKERS workers, $EXECUTORS executors, webgres on $WG_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF
shared_preload_libraries = 'webgres,pg_stat_statements'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'hello_world'
webgres.workers = 0
webgres.executors = 0
max_worker_processes = $(( WORKERS + 8 ))
max_connections = 200
shared_buffers = 256MB
synchronous_commit = off
log_min_messages = warning
EOF
"$CLUSTER" start "$PGDIR"
"${BENCH_TFB_DB:-$ROOT/scripts/tfb-db.sh}" > "$OUT/tfb-db.log" 2>&1
"$CLUSTER" psql "$PGDIR" -d hello_world -q > "$OUT/routes.log" 2>&1 <<'SQL'
SET ROLE benchmarkdbuser;
INSERT INTO webgres.routes (method, path, handler) VALUES
  ('GET', '/bench/slow', $$SELECT 'slept' AS body FROM request, pg_sleep(1)$$);
SQL
# The pools start once their database exists.
# (A build without executors refuses the second setting: it then runs without.)
"$CLUSTER" psql "$PGDIR" -d postgres -q -c "ALTER SYSTEM SET webgres.workers = $WORKERS" > /dev/null
"$CLUSTER" psql "$PGDIR" -d postgres -q -c "ALTER SYSTEM SET webgres.executors = $EXECUTORS" \
	> /dev/null 2>&1 || log "this build has no webgres.executors"
"$CLUSTER" psql "$PGDIR" -d postgres -q -c "SELECT pg_reload_conf()" > /dev/null
for _ in $(seq 1 300); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WG_PORT/db")" = 200 ] && break
	sleep 0.1
done

# Waits until no slow request is left running or queued from the last run.
drain() {
	for _ in $(seq 1 300); do
		left=$("$CLUSTER" psql "$PGDIR" -d hello_world -At -c \
			"SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'GET /bench/slow%' AND state = 'active'" 2>/dev/null || echo 0)
		# requests still waiting for an executor (a build without executors has none)
		waiting=$("$CLUSTER" psql "$PGDIR" -d hello_world -At -c \
			"SELECT coalesce(sum(running + queued), 0) FROM webgres.route_execution()" 2>/dev/null || echo 0)
		[ "$left" = 0 ] && [ "$waiting" = 0 ] && return 0
		sleep 0.2
	done
}

: > "$OUT/mixed.jsonl"
wrk -t 2 -c "$CONNS" -d 3s "http://127.0.0.1:$WG_PORT/db" > /dev/null 2>&1 || true
for rep in $(seq 1 "$REPS"); do
	for n in $SLOW; do
		drain
		log "rep $rep: /db at $CONNS connections beside $n slow clients"
		slowout=$OUT/slow.$n.r$rep.json
		if [ "$n" -gt 0 ]; then
			python3 "$BENCH/slowclients.py" "$n" $(( DURATION + 1 )) \
				"http://127.0.0.1:$WG_PORT/bench/slow" > "$slowout" &
			spid=$!
			sleep 1
		else
			echo '{"clients":0,"answered":0,"refused":0,"other":0,"errors":0,"pending":0}' > "$slowout"
			spid=
		fi
		wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 --latency \
			-s "$BENCH/wrk/report.lua" "http://127.0.0.1:$WG_PORT/db" > "$OUT/wrk.$n.r$rep.txt" 2>&1 || true
		[ -n "$spid" ] && wait "$spid"
		python3 - "$n" "$rep" "$OUT/wrk.$n.r$rep.txt" "$slowout" >> "$OUT/mixed.jsonl" <<'PY'
import json, sys
n, rep, wrkfile, slowfile = sys.argv[1:]
w = None
for line in open(wrkfile):
    if line.startswith('WRKJSON '):
        w = json.loads(line[8:])
s = json.load(open(slowfile))
print(json.dumps({'slow_clients': int(n), 'rep': int(rep),
                  'rps': w['requests'] / (w['duration_us'] / 1e6) if w else 0,
                  'p99_us': w['latency_us']['p99'] if w else None,
                  'errors': w['errors'] if w else None, 'slow': s}))
PY
	done
done

python3 - "$OUT/mixed.jsonl" <<'PY' | tee "$OUT/mixed.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
levels = sorted({r['slow_clients'] for r in rows})
def mmm(xs, fmt):
    return ' / '.join(fmt % v for v in (min(xs), statistics.median(xs), max(xs)))
base = [r for r in rows if r['slow_clients'] == 0]
bp99 = statistics.median([r['p99_us'] for r in base]) if base else None
brps = statistics.median([r['rps'] for r in base]) if base else None
print('| slow clients | /db req/s min / median / max | /db p99 ms min / median / max | p99 vs alone | req/s vs alone | slow answered | slow refused | slow other+errors |')
print('| --- | --- | --- | --- | --- | --- | --- | --- |')
for n in levels:
    rs = [r for r in rows if r['slow_clients'] == n]
    rps = [r['rps'] for r in rs]
    p99 = [r['p99_us'] / 1000 for r in rs]
    mp99 = statistics.median([r['p99_us'] for r in rs])
    mrps = statistics.median([r['rps'] for r in rs])
    print('| %d | %s | %s | %s | %s | %d | %d | %d |' % (
        n, mmm(rps, '%.0f'), mmm(p99, '%.2f'),
        '%.2fx' % (mp99 / bp99) if bp99 else '-', '%.2fx' % (mrps / brps) if brps else '-',
        sum(r['slow']['answered'] for r in rs), sum(r['slow']['refused'] for r in rs),
        sum(r['slow']['other'] + r['slow']['errors'] for r in rs)))
PY
