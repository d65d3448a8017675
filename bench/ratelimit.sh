#!/usr/bin/env bash
# The bench's rate-limit tier: what a limit costs when it is never hit, and
# what a client over its limit costs the server.
#
#   bench/ratelimit.sh OUTDIR
#
# Starts its own throwaway cluster (WORKERS workers) with pairs of routes
# that differ only in their rate limit: a constant route (answered from
# memory, the cheapest path, where the check weighs most) and a one-row
# read by primary key, each without a limit and with one it never reaches
# (a million requests a second, keyed by address: every wrk connection
# comes from 127.0.0.1, so all of them take from one bucket, the most
# contended case).  Then the same read with a limit every request but the
# first is over (429s).  wrk (2 threads, CONNS connections, DURATION
# seconds, REPS times, the pair's order swapped every rep) runs each in
# turn.  Writes OUTDIR/ratelimit.jsonl (one line per run) and
# OUTDIR/ratelimit.md: req/s, the ratio with a limit to without (target
# >= 0.97), and 429s a second against reads served a second.
#
# Settings (environment): WORKERS (nproc), CONNS (64), DURATION (5), REPS (3).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script ratelimit "${1:-}"
WORKERS=${WORKERS:-$(nproc)}
CONNS=${CONNS:-64}
DURATION=${DURATION:-5}
REPS=${REPS:-3}

throwaway_cluster ratelimit
log "cluster in $PGDIR: $WORKERS workers, webgres on $WG_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'postgres'
webgres.workers = $WORKERS
max_worker_processes = 32
log_min_messages = warning
EOF
"$CLUSTER" start "$PGDIR"
"$CLUSTER" psql "$PGDIR" -d postgres -q -v ON_ERROR_STOP=1 > "$OUT/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION webgres;
CREATE TABLE item (id int PRIMARY KEY, name text);
INSERT INTO item SELECT i, 'item ' || i FROM generate_series(1, 1000) i;
INSERT INTO webgres.routes (method, path, handler, rate_limit, rate_burst) VALUES
  ('GET', '/const/free', $$SELECT 'hello' AS body$$, NULL, 0),
  ('GET', '/const/limited', $$SELECT 'hello' AS body$$, 1000000, 1000000),
  ('GET', '/read/free', $$SELECT name AS body FROM item WHERE id = 42$$, NULL, 0),
  ('GET', '/read/limited', $$SELECT name AS body FROM item WHERE id = 42$$, 1000000, 1000000),
  ('GET', '/read/over', $$SELECT name AS body FROM item WHERE id = 42$$, 0.001, 0);
SQL
for p in /const/free /const/limited /read/free /read/limited; do
	for _ in $(seq 1 300); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WG_PORT$p")" = 200 ] && break
		sleep 0.1
	done
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WG_PORT/read/over")" = 200 ] ||
	{ log "/read/over did not serve its first request"; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WG_PORT/read/over")" = 429 ] ||
	{ log "/read/over is not limited"; exit 1; }

# run_wrk CASE PATH: one wrk run, a JSON line in ratelimit.jsonl.
run_wrk() {
	local case=$1 path=$2 raw
	raw=$OUT/$case.r$rep.txt
	wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 "http://127.0.0.1:$WG_PORT$path" > "$raw" 2>&1
	python3 - "$case" "$rep" "$raw" >> "$OUT/ratelimit.jsonl" <<'PY'
import json, re, sys
case, rep, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = open(path).read()
rps = re.search(r'Requests/sec:\s+([\d.]+)', t)
non2xx = re.search(r'Non-2xx or 3xx responses: (\d+)', t)
m = re.search(r'(\d+) requests in', t)
print(json.dumps({'case': case, 'rep': rep, 'rps': float(rps.group(1)) if rps else 0,
                  'requests': int(m.group(1)) if m else 0,
                  'non2xx': int(non2xx.group(1)) if non2xx else 0}))
PY
}

: > "$OUT/ratelimit.jsonl"
for rep in $(seq 1 "$REPS"); do
	for kind in const read; do
		log "rep $rep: /$kind, without and with a limit never hit"
		if [ $(( rep % 2 )) = 1 ]; then
			run_wrk "$kind-free" "/$kind/free"; run_wrk "$kind-limited" "/$kind/limited"
		else
			run_wrk "$kind-limited" "/$kind/limited"; run_wrk "$kind-free" "/$kind/free"
		fi
	done
	log "rep $rep: /read/over, every request over its limit"
	run_wrk read-over /read/over
done

python3 - "$OUT/ratelimit.jsonl" "$WORKERS" "$CONNS" "$DURATION" "$REPS" <<'PY' | tee "$OUT/ratelimit.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
workers, conns, secs, reps = sys.argv[2:6]
def med(case, key='rps'):
    xs = [r[key] for r in rows if r['case'] == case]
    return statistics.median(xs) if xs else 0
def bad(case):
    return sum(r['non2xx'] for r in rows if r['case'] == case)
print('%s workers, %s connections from one address, %s s a run, %s reps (medians), wrk 2 threads.' % (
    workers, conns, secs, reps))
print()
print('| route | no limit req/s | limit never hit req/s | ratio (target >= 0.97) | non-2xx |')
print('| --- | --- | --- | --- | --- |')
for kind, label in [('const', 'constant (from memory)'), ('read', 'one-row read')]:
    f, l = med(kind + '-free'), med(kind + '-limited')
    print('| %s | %.0f | %.0f | %.3fx | %d / %d |' % (label, f, l, l / f if f else 0,
                                                   bad(kind + '-free'), bad(kind + '-limited')))
print()
served, over = med('read-free'), med('read-over')
print('| one-row read | req/s | non-2xx |')
print('| --- | --- | --- |')
print('| served (no limit) | %.0f | %d |' % (served, bad('read-free')))
print('| over its limit (429) | %.0f | %d of %d |' % (over, bad('read-over'),
                                                 sum(r['requests'] for r in rows if r['case'] == 'read-over')))
print()
print('A client over its limit gets %.2fx the req/s a served one does: each refusal costs the server that much less.' % (
    over / served if served else 0))
PY
