#!/usr/bin/env bash
# The bench's uploads tier: a CSV loaded through one request
# (webgres.ingest) against psql's \copy of the same file into the same
# table, and the same rows as NDJSON against psql loading them as a text
# column with COPY and jsonb_populate_record, each with the peak memory of
# every webgres process; then concurrent
# multipart uploads (webgres.body_files), each stored and checked byte for
# byte, with their latency quantiles and a small route's beside them.
#
#   bench/uploads.sh OUTDIR
#
# Settings (environment): ROWS (2000000), UPLOADS (200 at once), UPLOAD_MB
# (5), WORKERS (nproc).  The body is whole in memory
# (docs/uploads.md#how-a-body-is-held), so ROWS is bounded by
# webgres.max_body_size (1000MB here).  Writes OUTDIR/uploads.json and
# OUTDIR/uploads.md.  The uploads route's queue (webgres.max_queue) holds
# them all: with the default 64, the rest are refused 503, as they should.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script uploads "${1:-}"
WORKERS=${WORKERS:-$(nproc)}
ROWS=${ROWS:-2000000}
UPLOADS=${UPLOADS:-200}
UPLOAD_MB=${UPLOAD_MB:-5}

throwaway_cluster uploads
log "cluster in $PGDIR: $WORKERS workers, webgres on $WG_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<CONF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'postgres'
webgres.workers = $WORKERS
webgres.executors = 4
webgres.max_body_size = '1000MB'
webgres.handler_timeout = '600s'
webgres.body_timeout = '300s'
# Every upload may wait for an executor: a full queue would answer 503.
webgres.max_queue = 1000
max_worker_processes = 32
log_min_messages = warning
CONF
"$CLUSTER" start "$PGDIR"
"$CLUSTER" psql "$PGDIR" -d postgres > "$OUT/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION webgres;
CREATE TABLE loaded (id int PRIMARY KEY, name text NOT NULL, price numeric, qty int);
CREATE TABLE copied (LIKE loaded INCLUDING ALL);
CREATE TABLE nd_loaded (LIKE loaded INCLUDING ALL);
CREATE TABLE nd_copied (LIKE loaded INCLUDING ALL);
CREATE TABLE nd_lines (line text);
CREATE TABLE files (id bigint GENERATED ALWAYS AS IDENTITY, filename text, md5 text, data bytea);
INSERT INTO webgres.routes (method, path, mode, handler) VALUES
  ('POST', '/ingest', 'executor', $$SELECT webgres.ingest('loaded', body, 'text/csv')::text AS body FROM request$$),
  ('POST', '/ingest_nd', 'executor', $$SELECT webgres.ingest('nd_loaded', body, 'application/x-ndjson')::text AS body FROM request$$),
  ('POST', '/upload', 'executor', $$
     WITH stored AS (
       INSERT INTO files (filename, md5, data)
       SELECT f.filename, md5(f.content), f.content
       FROM request, webgres.body_files(request.body, request.headers->>'content-type') f
       RETURNING md5)
     SELECT 201 AS status, string_agg(md5, ',') AS body FROM stored $$),
  ('GET', '/ping', 'auto', $$SELECT 'pong' AS body$$);
SQL
for _ in $(seq 1 300); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WG_PORT/ping")" = 200 ] && break
	sleep 0.1
done

log "writing $ROWS rows of CSV and of NDJSON"
python3 - "$OUT/rows.csv" "$OUT/rows.ndjson" "$ROWS" <<'PY'
import sys
with open(sys.argv[1], 'w') as f, open(sys.argv[2], 'w') as g:
    f.write('id,name,price,qty\n')
    for i in range(1, int(sys.argv[3]) + 1):
        f.write('%d,item %d,%d.25,%d\n' % (i, i, i % 1000, i % 77))
        g.write('{"id": %d, "name": "item %d", "price": %d.25, "qty": %d}\n' % (i, i, i % 1000, i % 77))
PY
chmod 644 "$OUT/rows.csv" "$OUT/rows.ndjson"
chmod 755 "$OUT"

# peaks: the webgres processes' peak and current RSS (kB) by pid, as JSON.
peaks() {
	"$CLUSTER" psql "$PGDIR" -d postgres -At -c \
		"SELECT pid FROM pg_stat_activity WHERE backend_type IN ('webgres worker', 'webgres executor')" |
		python3 -c '
import json, sys
out = {}
for pid in sys.stdin.read().split():
    for line in open("/proc/%s/status" % pid):
        if line.startswith(("VmHWM:", "VmRSS:")):
            out.setdefault(pid, {})[line.split(":")[0]] = int(line.split()[1])
print(json.dumps(out))'
}

# now: seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }

log "psql \\copy"
t0=$(now)
"$CLUSTER" psql "$PGDIR" -d postgres -c "\\copy copied FROM '$OUT/rows.csv' CSV HEADER" > "$OUT/copy.log" 2>&1
t1=$(now)
# psql's way with NDJSON: each line into a text column (CSV with a quote
# and a delimiter no line holds, so that a backslash stays one), then
# jsonb_populate_record into the table.
log "psql \\copy of NDJSON lines and jsonb_populate_record"
nd0=$(now)
"$CLUSTER" psql "$PGDIR" -d postgres -v ON_ERROR_STOP=1 > "$OUT/copy_nd.log" 2>&1 <<SQL
\\copy nd_lines FROM '$OUT/rows.ndjson' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')
INSERT INTO nd_copied SELECT r.* FROM nd_lines, jsonb_populate_record(NULL::nd_copied, line::jsonb) r;
SQL
nd1=$(now)
nd_copied=$("$CLUSTER" psql "$PGDIR" -d postgres -At -c "SELECT count(*) FROM nd_copied")
pids=$("$CLUSTER" psql "$PGDIR" -d postgres -At -c \
	"SELECT pid FROM pg_stat_activity WHERE backend_type IN ('webgres worker', 'webgres executor')")

# ingest NAME PATH FILE TYPE: one request loading FILE through PATH, timed
# (OUT/NAME.times: start and end), with each webgres process's peak RSS
# before and after (OUT/NAME.idle.json, OUT/NAME.after.json) and its
# private memory's peak growth (OUT/NAME.anon.json); the answer in
# OUT/NAME.loaded.
ingest() {
	local name=$1 path=$2 file=$3 type=$4 sampler
	peaks > "$OUT/$name.idle.json"
	# VmHWM counts the shared buffers a process wrote into as well; private
	# memory (RssAnon) has no peak in /proc, so it is sampled during the load.
	python3 - "$OUT/$name.anon.json" "$OUT/$name.stop" "$OUT/$name.ready" $pids <<'PY' &
import json, os, sys, time
out, stop, ready, pids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def anon(p):
    for line in open('/proc/%s/status' % p):
        if line.startswith('RssAnon:'):
            return int(line.split()[1])
base = {p: anon(p) for p in pids}
peak = dict(base)
open(ready, 'w').close()
while not os.path.exists(stop):
    for p in pids:
        peak[p] = max(peak[p], anon(p))
    time.sleep(0.02)
json.dump({p: (peak[p] - base[p]) // 1024 for p in pids}, open(out, 'w'))
PY
	sampler=$!
	# The load starts once the sampler has its base, not before.
	for _ in $(seq 1 100); do [ -e "$OUT/$name.ready" ] && break; sleep 0.1; done
	log "webgres.ingest over HTTP: $file"
	local s0 s1
	s0=$(now)
	curl -s --data-binary @"$file" -H "Content-Type: $type" "http://127.0.0.1:$WG_PORT$path" > "$OUT/$name.loaded"
	s1=$(now)
	peaks > "$OUT/$name.after.json"
	touch "$OUT/$name.stop"
	wait "$sampler"
	echo "$s0 $s1" > "$OUT/$name.times"
}
ingest csv /ingest "$OUT/rows.csv" text/csv
ingest ndjson /ingest_nd "$OUT/rows.ndjson" application/x-ndjson

log "$UPLOADS concurrent uploads of $UPLOAD_MB MB"
python3 - "$WG_PORT" "$UPLOADS" "$UPLOAD_MB" > "$OUT/concurrent.json" <<'PY'
import concurrent.futures, hashlib, http.client, json, multiprocessing, os, sys, time
port, n, mb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def upload(i):
    data = os.urandom(mb * 1024 * 1024)
    b = 'bench%016x' % i
    body = (('--%s\r\nContent-Disposition: form-data; name="file"; filename="f%d.bin"\r\n'
             'Content-Type: application/octet-stream\r\n\r\n' % (b, i)).encode()
            + data + ('\r\n--%s--\r\n' % b).encode())
    t = time.monotonic()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=600)
    c.request('POST', '/upload', body, {'Content-Type': 'multipart/form-data; boundary=' + b})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, time.monotonic() - t, text == hashlib.md5(data).hexdigest()

def ping_once():
    t = time.monotonic()
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    c.request('GET', '/ping')
    c.getresponse().read()
    c.close()
    return time.monotonic() - t

def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] * 1000 if v else None

# The small route is timed from a process of its own: in the uploaders'
# process its thread would wait for Python's interpreter lock behind theirs,
# and that wait, not the server, would be measured.
def ping(stop, out):
    v = []
    while not stop.is_set():
        v.append(ping_once())
    out.send(v)

fork = multiprocessing.get_context('fork')
alone = [ping_once() for _ in range(200)]
stop, (got, out) = fork.Event(), fork.Pipe(False)
pinger = fork.Process(target=ping, args=(stop, out))
pinger.start()
t0 = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(n) as ex:
    res = list(ex.map(upload, range(n)))
wall = time.monotonic() - t0
stop.set()
pings = got.recv()
pinger.join()
lat = [r[1] for r in res]
print(json.dumps({'uploads': n, 'mb': mb, 'ok': sum(1 for r in res if r[0] == 201 and r[2]),
                  'statuses': sorted({r[0] for r in res}), 'wall_s': wall,
                  'p50_ms': q(lat, 0.5), 'p99_ms': q(lat, 0.99),
                  'ping_alone_p99_ms': q(alone, 0.99), 'ping_during_p99_ms': q(pings, 0.99)}))
PY
stored=$("$CLUSTER" psql "$PGDIR" -d postgres -At -c "SELECT count(*) FROM files WHERE md5(data) = md5")

python3 - "$OUT" "$ROWS" "$t0" "$t1" "$nd0" "$nd1" "$stored" "$nd_copied" <<'PY' | tee "$OUT/uploads.md"
import json, os, sys
out, rows = sys.argv[1], int(sys.argv[2])
t0, t1, nd0, nd1 = map(float, sys.argv[3:7])
stored, nd_copied = int(sys.argv[7]), int(sys.argv[8])
conc = json.load(open(os.path.join(out, 'concurrent.json')))

def load(name):
    j = lambda f: json.load(open(os.path.join(out, '%s.%s' % (name, f))))
    idle, after = j('idle.json'), j('after.json')
    s0, s1 = map(float, open(os.path.join(out, name + '.times')).read().split())
    return {'ingest_s': s1 - s0, 'loaded': open(os.path.join(out, name + '.loaded')).read().strip(),
            'peak_growth_mb': {p: (after[p]['VmHWM'] - idle.get(p, after[p])['VmHWM']) // 1024 for p in after},
            'peak_anon_growth_mb': j('anon.json')}

csv, nd = load('csv'), load('ndjson')
csv['copy_s'], nd['copy_s'] = t1 - t0, nd1 - nd0
nd['copied'] = nd_copied
for r, f in ((csv, 'rows.csv'), (nd, 'rows.ndjson')):
    r['ratio'] = r['copy_s'] / r['ingest_s'] if r['ingest_s'] else None
    r['mb'] = os.path.getsize(os.path.join(out, f)) / 1e6
res = dict(csv, rows=rows, csv_mb=csv['mb'], ndjson=nd, concurrent=conc, stored_intact=stored)
json.dump(res, open(os.path.join(out, 'uploads.json'), 'w'), indent=1)
mem = lambda d: ', '.join('%s: %d' % kv for kv in sorted(d.items()))
print('# Uploads\n')
print('| case | result |\n| --- | --- |')
print('| CSV, %d rows (%.0f MB): psql \\copy | %.2f s (%.0f rows/s) |' % (rows, csv['mb'], csv['copy_s'], rows / csv['copy_s']))
print('| the same through one request (webgres.ingest) | %.2f s (%.0f rows/s), %s rows loaded |'
      % (csv['ingest_s'], rows / csv['ingest_s'], csv['loaded']))
print('| rows a second, ingest / \\copy (target >= 0.8) | %.2f |' % csv['ratio'])
print('| peak RSS growth of each webgres process during the ingest (MB; target <= 64) | %s |' % mem(csv['peak_growth_mb']))
print('| of which private memory (RssAnon, sampled every 20 ms; the rest is shared buffers written) | %s |'
      % mem(csv['peak_anon_growth_mb']))
print('| NDJSON, the same rows (%.0f MB): psql \\copy of the lines as text, then jsonb_populate_record | %.2f s (%.0f rows/s), %d rows loaded |'
      % (nd['mb'], nd['copy_s'], rows / nd['copy_s'], nd_copied))
print('| the same through one request (webgres.ingest, application/x-ndjson) | %.2f s (%.0f rows/s), %s rows loaded |'
      % (nd['ingest_s'], rows / nd['ingest_s'], nd['loaded']))
print('| rows a second, ingest / psql (target >= 0.8) | %.2f |' % nd['ratio'])
print('| peak RSS growth of each webgres process during the NDJSON ingest (MB) | %s |' % mem(nd['peak_growth_mb']))
print('| of which private memory (RssAnon) | %s |' % mem(nd['peak_anon_growth_mb']))
print('| %d concurrent %d MB uploads stored intact | %d of %d (statuses %s) |'
      % (conc['uploads'], conc['mb'], stored, conc['uploads'], conc['statuses']))
print('| their latency p50 / p99 | %.0f / %.0f ms (all in %.1f s) |' % (conc['p50_ms'], conc['p99_ms'], conc['wall_s']))
print('| GET /ping p99 alone / during the uploads (target <= 2x) | %.1f / %.1f ms |'
      % (conc['ping_alone_p99_ms'], conc['ping_during_p99_ms'] or 0))
PY
