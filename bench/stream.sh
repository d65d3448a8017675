#!/usr/bin/env bash
# The bench's stream tier: exporting a large table through a route in mode
# stream.
#
#   bench/stream.sh OUTDIR
#
# Starts its own throwaway cluster (one worker, two executors), fills a
# table of ROWS rows of about 200 bytes each, and adds a route that streams
# it.  Then, for each format (JSON array, NDJSON, CSV), REPS times, curl
# downloads the whole export and reports the time to first byte and the
# total time.  Memory of the worker and the executors, from
# /proc/PID/status: the peak of their private memory (RssAnon, sampled
# every 20 ms during the runs), and VmHWM after all runs, which also counts
# the shared buffers a process touched (an export that reads a 200 MB
# table touches 200 MB of them: shared, not the stream's).
# Writes OUTDIR/stream.jsonl (one line per run), OUTDIR/memory.json, and
# prints (and writes to OUTDIR/stream.md) a table.
#
# Settings (environment): ROWS (default 1000000), REPS (3).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script stream "${1:-}"
ROWS=${ROWS:-1000000}
REPS=${REPS:-3}

throwaway_cluster stream

log "cluster in $PGDIR: 1 worker, 2 executors, webgres on $WG_PORT, $ROWS rows"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'postgres'
webgres.workers = 1
webgres.executors = 2
max_worker_processes = 16
shared_buffers = 256MB
synchronous_commit = off
log_min_messages = warning
EOF
"$CLUSTER" start "$PGDIR"
"$CLUSTER" psql "$PGDIR" -d postgres -q -v ON_ERROR_STOP=1 > "$OUT/setup.log" 2>&1 <<SQL
CREATE EXTENSION webgres;
CREATE TABLE export_rows (id int PRIMARY KEY, hash text, amount numeric, created timestamptz, note text);
INSERT INTO export_rows
  SELECT i, md5(i::text), i * 1.25, '2026-01-01'::timestamptz + i * interval '1 second',
         repeat('n', 100)
  FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE export_rows;
INSERT INTO webgres.routes (method, path, handler, mode, stream_headers) VALUES
  ('GET', '/bench/export', \$\$SELECT * FROM export_rows ORDER BY id\$\$, 'stream',
   '{"content-disposition": "attachment"}');
SQL
for _ in $(seq 1 300); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept: text/csv' \
		"http://127.0.0.1:$WG_PORT/bench/export?warm")" = 200 ] && break
	sleep 0.1
done

pids() {
	"$CLUSTER" psql "$PGDIR" -d postgres -At -c \
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres $1' ORDER BY pid"
}
kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

WORKER=$(pids worker | head -1)
EXECUTORS=$(pids executor | tr '\n' ' ')
declare -A RSS0 ANON0
for p in $WORKER $EXECUTORS; do RSS0[$p]=$(kb "$p" VmRSS); ANON0[$p]=$(kb "$p" RssAnon); done

# Samples each process's RssAnon until $OUT/stop exists; writes the peaks.
rm -f "$OUT/stop"
python3 - "$OUT" $WORKER $EXECUTORS <<'PY' &
import json, os, sys, time
out, pids = sys.argv[1], sys.argv[2:]
peak = {p: 0 for p in pids}
while not os.path.exists(os.path.join(out, 'stop')):
    for p in pids:
        try:
            for line in open('/proc/%s/status' % p):
                if line.startswith('RssAnon:'):
                    peak[p] = max(peak[p], int(line.split()[1]))
        except OSError:
            pass
    time.sleep(0.02)
json.dump(peak, open(os.path.join(out, 'anon_peak.json'), 'w'))
PY
SAMPLER=$!

: > "$OUT/stream.jsonl"
for rep in $(seq 1 "$REPS"); do
	for accept in application/json application/x-ndjson text/csv; do
		log "rep $rep: $accept"
		read -r ttfb total size code < <(curl -s -o /dev/null -H "Accept: $accept" \
			-w '%{time_starttransfer} %{time_total} %{size_download} %{http_code}\n' \
			"http://127.0.0.1:$WG_PORT/bench/export")
		printf '{"format":"%s","rep":%d,"status":%s,"ttfb_s":%s,"total_s":%s,"bytes":%s,"rows":%d}\n' \
			"$accept" "$rep" "$code" "$ttfb" "$total" "$size" "$ROWS" >> "$OUT/stream.jsonl"
	done
done

touch "$OUT/stop"
wait "$SAMPLER"
proc_json() {
	printf '{"pid":%s,"rss_before_kb":%s,"hwm_kb":%s,"anon_before_kb":%s,"anon_peak_kb":%s}' \
		"$1" "${RSS0[$1]}" "$(kb "$1" VmHWM)" "${ANON0[$1]}" \
		"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/anon_peak.json" "$1")"
}
{
	printf '{"worker":%s,"executors":[' "$(proc_json "$WORKER")"
	sep=
	for p in $EXECUTORS; do
		printf '%s%s' "$sep" "$(proc_json "$p")"
		sep=,
	done
	printf ']}\n'
} > "$OUT/memory.json"

python3 - "$OUT/stream.jsonl" "$OUT/memory.json" <<'PY' | tee "$OUT/stream.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mem = json.load(open(sys.argv[2]))
def mmm(xs, fmt):
    return ' / '.join(fmt % x for x in (min(xs), statistics.median(xs), max(xs)))
print('| format | runs | status | MB | first byte ms min / median / max | rows/s min / median / max | MB/s median |')
print('| --- | --- | --- | --- | --- | --- | --- |')
for fmt in ['application/json', 'application/x-ndjson', 'text/csv']:
    rs = [r for r in rows if r['format'] == fmt]
    if not rs:
        continue
    print('| %s | %d | %s | %.0f | %s | %s | %.0f |' % (
        fmt, len(rs), ','.join(sorted({str(r['status']) for r in rs})),
        statistics.median([r['bytes'] for r in rs]) / 1e6,
        mmm([r['ttfb_s'] * 1000 for r in rs], '%.1f'),
        mmm([r['rows'] / r['total_s'] for r in rs], '%.0f'),
        statistics.median([r['bytes'] / r['total_s'] / 1e6 for r in rs])))
print()
print('| process | private memory (RssAnon) before | its peak during the runs | VmRSS before | VmHWM after (with shared buffers touched) |')
print('| --- | --- | --- | --- | --- |')
for name, p in [('worker', mem['worker'])] + [('executor', e) for e in mem['executors']]:
    print('| %s %d | %.1f MB | %.1f MB | %.1f MB | %.1f MB |' % (
        name, p['pid'], p['anon_before_kb'] / 1024, p['anon_peak_kb'] / 1024,
        p['rss_before_kb'] / 1024, p['hwm_kb'] / 1024))
PY
