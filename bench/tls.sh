#!/usr/bin/env bash
# The bench's TLS tier: what TLS costs, as ratios to cleartext HTTP/1.1.
#
#   bench/tls.sh OUTDIR
#
# Starts its own throwaway cluster with the TechEmpower database, webgres
# on a cleartext port and on a TLS port (webgres.tls_listen) with a
# throwaway ECDSA P-256 certificate made by openssl for the run.  Then,
# REPS times each, DURATION seconds each, at CONNS connections:
#
#   - /json and /db over keep-alive connections with h2load: cleartext
#     HTTP/1.1 (the base), TLS HTTP/1.1 (ALPN http/1.1) and TLS HTTP/2
#     (ALPN h2, one stream at a time per connection, so that every case
#     has CONNS requests in flight);
#   - full handshakes per second: wrk with "Connection: close" on /json,
#     so that every request opens a new connection (wrk resumes no TLS
#     session: each is a full handshake), over TLS and in cleartext; and
#     cleartext keep-alive /json with wrk, the base of their ratios;
#   - session resumption across workers: one full handshake with openssl
#     s_client, then RESUMES connections offering its session, on TLS 1.2
#     and on TLS 1.3; SO_REUSEPORT spreads them over the workers, so each is
#     resumed only if every worker can decrypt the ticket (the keys are
#     shared: docs/tls.md).
#
# Writes OUTDIR/tls.jsonl (one line per run) and prints (and writes to
# OUTDIR/tls.md) a table of median requests per second and each case's
# ratio to cleartext HTTP/1.1 measured by the same tool.
#
# Settings (environment): REPS (3), DURATION (10), CONNS (64), WORKERS
# (2 x nproc), RESUMES (200), BENCH_TFB_DB (scripts/tfb-db.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script tls "${1:-}"
REPS=${REPS:-3}
DURATION=${DURATION:-10}
CONNS=${TLS_CONNS:-64}
WORKERS=${WORKERS:-$(( 2 * $(nproc) ))}
RESUMES=${RESUMES:-200}

command -v h2load > /dev/null || { log "h2load is missing (Debian: nghttp2-client)"; exit 1; }
throwaway_cluster tls
TLS_PORT=$(free_port)

log "cluster in $PGDIR: $WORKERS workers, webgres on $WG_PORT, TLS on $TLS_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF
shared_preload_libraries = 'webgres,pg_stat_statements'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.tls_listen = '127.0.0.1:$TLS_PORT'
webgres.tls_cert_file = 'server.pem'
webgres.tls_key_file = 'server.key'
webgres.database = 'hello_world'
webgres.workers = 0
max_worker_processes = $(( WORKERS + 8 ))
max_connections = 200
shared_buffers = 256MB
synchronous_commit = off
log_min_messages = warning
EOF
# The certificate, made for this run, lives in the data directory (the
# settings' relative paths), readable by the server's user only.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$PGDIR/server.key" -out "$PGDIR/server.pem" -days 2 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost,IP:127.0.0.1 > "$OUT/openssl.log" 2>&1
[ "$(id -u)" -eq 0 ] && chown postgres: "$PGDIR/server.key" "$PGDIR/server.pem"
chmod 600 "$PGDIR/server.key"
"$CLUSTER" start "$PGDIR"
"${BENCH_TFB_DB:-$ROOT/scripts/tfb-db.sh}" > "$OUT/tfb-db.log" 2>&1
"$CLUSTER" psql "$PGDIR" -d postgres -q -c "ALTER SYSTEM SET webgres.workers = $WORKERS" -c "SELECT pg_reload_conf()" > /dev/null
for _ in $(seq 1 300); do
	[ "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$TLS_PORT/db")" = 200 ] && break
	sleep 0.1
done

: > "$OUT/tls.jsonl"
# record CASE TOOL PATH REP RPS ERRORS NON2XX
record() {
	printf '{"case":"%s","tool":"%s","path":"%s","conns":%d,"rep":%d,"rps":%s,"errors":%s,"non2xx":%s}\n' \
		"$1" "$2" "$3" "$CONNS" "$4" "$5" "$6" "$7" >> "$OUT/tls.jsonl"
}

# h2load_case CASE PATH REP URL [h2load options]
h2load_case() {
	local name=$1 path=$2 rep=$3 url=$4
	shift 4
	local raw="$OUT/h2load.$name.${path//\//_}.r$rep.txt"
	h2load -c "$CONNS" -t 2 -m 1 -D "$DURATION" --warm-up-time 1 "$@" "$url" > "$raw" 2>&1 || true
	python3 - "$raw" <<'PY' | { read -r rps errors non2xx; record "$name" h2load "$path" "$rep" "$rps" "$errors" "$non2xx"; }
import re, sys
t = open(sys.argv[1]).read()
rps = re.search(r'finished in [\d.]+\w+, ([\d.]+) req/s', t)
req = re.search(r'requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout', t)
codes = re.search(r'status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx', t)
print(rps.group(1) if rps else 0,
      int(req.group(2)) + int(req.group(3)) + int(req.group(4)) if req else -1,
      int(codes.group(3)) + int(codes.group(4)) if codes else -1)
PY
}

# wrk_case CASE PATH REP URL [header]
wrk_case() {
	local name=$1 path=$2 rep=$3 url=$4 header=${5:-Connection: keep-alive}
	local raw="$OUT/wrk.$name.${path//\//_}.r$rep.txt"
	wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 -H "$header" \
		-s "$BENCH/wrk/report.lua" "$url" > "$raw" 2>&1 || true
	python3 - "$raw" <<'PY' | { read -r rps errors non2xx; record "$name" wrk "$path" "$rep" "$rps" "$errors" "$non2xx"; }
import json, sys
line = [l for l in open(sys.argv[1]) if l.startswith('WRKJSON ')]
if not line:
    print(0, -1, -1)
else:
    r = json.loads(line[-1][len('WRKJSON '):])
    e = r['errors']
    print(r['requests'] / (r['duration_us'] / 1e6), e['connect'] + e['read'] + e['write'] + e['timeout'], e['status'])
PY
}

CLEAR=http://127.0.0.1:$WG_PORT
TLS=https://127.0.0.1:$TLS_PORT
for rep in $(seq 1 "$REPS"); do
	for path in /json /db; do
		log "rep $rep: $path, h2load: cleartext HTTP/1.1, TLS HTTP/1.1, TLS HTTP/2"
		h2load_case clear-h1 "$path" "$rep" "$CLEAR$path" --h1
		h2load_case tls-h1 "$path" "$rep" "$TLS$path" --h1
		h2load_case tls-h2 "$path" "$rep" "$TLS$path"
	done
	log "rep $rep: /json, wrk: keep-alive, a new connection per request, the same over TLS"
	wrk_case clear-h1 /json "$rep" "$CLEAR/json"
	wrk_case clear-h1-close /json "$rep" "$CLEAR/json" "Connection: close"
	wrk_case tls-h1-close /json "$rep" "$TLS/json" "Connection: close"
done

# resumed VERSION: how many of RESUMES connections offering one session resumed it.
resumed() {
	local v=$1 n=0
	local sess="$OUT/session.$v.pem"
	local req='GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	printf "$req" | openssl s_client -connect "127.0.0.1:$TLS_PORT" "-$v" -ign_eof \
		-sess_out "$sess" > /dev/null 2>&1 || true
	for _ in $(seq 1 "$RESUMES"); do
		printf "$req" | openssl s_client -connect "127.0.0.1:$TLS_PORT" "-$v" -ign_eof \
			-sess_in "$sess" 2> /dev/null | grep -q '^Reused' && n=$((n + 1))
	done
	echo "$n"
}
log "session resumption: $RESUMES connections offering one session, TLS 1.2 and 1.3"
R12=$(resumed tls1_2)
R13=$(resumed tls1_3)
printf '{"case":"resumption","tls12":%d,"tls13":%d,"of":%d,"workers":%d}\n' \
	"$R12" "$R13" "$RESUMES" "$WORKERS" >> "$OUT/tls.jsonl"

python3 - "$OUT/tls.jsonl" "$CONNS" <<'PY' | tee "$OUT/tls.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
resumption = [r for r in rows if r.get('case') == 'resumption']
rows = [r for r in rows if r.get('case') != 'resumption']
conns = sys.argv[2]
def med(case, tool, path):
    xs = [r['rps'] for r in rows if (r['case'], r['tool'], r['path']) == (case, tool, path)]
    return statistics.median(xs) if xs else None
def trouble(case, tool, path):
    rs = [r for r in rows if (r['case'], r['tool'], r['path']) == (case, tool, path)]
    e = sum(max(r['errors'], 0) for r in rs); n = sum(max(r['non2xx'], 0) for r in rs)
    return '' if not (e or n) else ' ⚠ %d socket errors, %d non-2xx' % (e, n)
names = {
    'clear-h1': 'cleartext HTTP/1.1, keep-alive',
    'tls-h1': 'TLS, HTTP/1.1 (ALPN), keep-alive',
    'tls-h2': 'TLS, HTTP/2 (ALPN), one stream per connection at a time',
    'clear-h1-close': 'cleartext HTTP/1.1, a new connection per request',
    'tls-h1-close': 'TLS HTTP/1.1, a new connection per request (full handshakes)',
}
print('| case | path | tool | connections | req/s (median of %d) | ratio to cleartext HTTP/1.1 keep-alive |' %
      len({r['rep'] for r in rows}))
print('| --- | --- | --- | --- | --- | --- |')
for tool, path, cases in [('h2load', '/json', ['clear-h1', 'tls-h1', 'tls-h2']),
                          ('h2load', '/db', ['clear-h1', 'tls-h1', 'tls-h2']),
                          ('wrk', '/json', ['clear-h1', 'clear-h1-close', 'tls-h1-close'])]:
    base = med('clear-h1', tool, path)
    for c in cases:
        m = med(c, tool, path)
        if m is None:
            continue
        ratio = '%.2f×' % (m / base) if base else 'n/a'
        print('| %s | %s | %s | %s | %.0f%s | %s |' % (names[c], path, tool, conns, m, trouble(c, tool, path), ratio))
print()
m = med('tls-h1-close', 'wrk', '/json')
if m:
    print('Full TLS handshakes per second (ECDSA P-256, one per request): %.0f.' % m)
for r in resumption:
    print('Session resumption across %d workers: TLS 1.2 %d of %d connections resumed, TLS 1.3 %d of %d.' %
          (r['workers'], r['tls12'], r['of'], r['tls13'], r['of']))
PY
