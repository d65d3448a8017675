#!/usr/bin/env bash
# The bench's TLS tier: what TLS costs, as ratios to cleartext HTTP/1.1, and
# against nginx with the same certificate and TLS settings.
#
#   bench/tls.sh OUTDIR
#
# Starts its own throwaway cluster with the TechEmpower database, webgres
# on a cleartext port and on a TLS port (webgres.tls_listen) with a
# throwaway ECDSA P-256 certificate made by openssl for the run, and
# nginx (Debian's nginx-light, WORKERS worker processes) with the same
# certificate, the same TLS versions, ciphers, key exchange groups and
# session handling as webgres (src/http/tls.c), answering /json, on a
# cleartext port and a TLS port (HTTP/2 by ALPN there).  Then, REPS times
# each, DURATION seconds each, at CONNS connections, each nginx case just
# after (odd repetitions) or before (even ones) the same webgres case:
#
#   - /json (both servers) and /db (webgres) over keep-alive connections
#     with h2load: cleartext HTTP/1.1 (the base), TLS HTTP/1.1 (ALPN
#     http/1.1) and TLS HTTP/2 (ALPN h2, one stream at a time per
#     connection, so that every case has CONNS requests in flight);
#   - a new connection per request: wrk with "Connection: close" on /json,
#     over TLS and in cleartext, and cleartext keep-alive /json with wrk,
#     the base of their ratios.  wrk keeps each connection's TLS session
#     across its reconnections (SSL_clear), so its TLS connections resume
#     that session: an abbreviated handshake, not a full one;
#   - full handshakes per second: STIME_PROCS processes of
#     `openssl s_time -new` at once, each opening connection after
#     connection with a fresh session (a full handshake: key exchange and
#     the server's ECDSA signature) and fetching /json over HTTP/1.0;
#   - the CPU time each server spent in each case (webgres: the postmaster
#     and all its children; nginx: its master and workers; utime + stime
#     from /proc), for requests per CPU-second;
#   - session resumption across workers (webgres): one full handshake with
#     openssl s_client, then RESUMES connections offering its session, on
#     TLS 1.2 and on TLS 1.3; SO_REUSEPORT spreads them over the workers,
#     so each is resumed only if every worker can decrypt the ticket (the
#     keys are shared: docs/tls.md).
#
# Before measuring, openssl s_client connects once to each server's TLS
# port with its defaults and once with TLS 1.2 only, and the version,
# suite and key exchange group each negotiated are recorded.
#
# Writes OUTDIR/tls.jsonl (one line per run, with "server") and prints (and
# writes to OUTDIR/tls.md, through bench/report.py tls-md) the tables.
#
# Settings (environment): REPS (3), DURATION (10), TLS_CONNS (64), WORKERS
# (2 x nproc), RESUMES (200), STIME_PROCS (8), BENCH_TFB_DB
# (scripts/tfb-db.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script tls "${1:-}"
REPS=${REPS:-3}
DURATION=${DURATION:-10}
CONNS=${TLS_CONNS:-64}
WORKERS=${WORKERS:-$(( 2 * $(nproc) ))}
RESUMES=${RESUMES:-200}
STIME_PROCS=${STIME_PROCS:-8}

command -v h2load > /dev/null || { log "h2load is missing (Debian: nghttp2-client)"; exit 1; }
command -v nginx > /dev/null || { log "nginx is not installed (apt-get install nginx-light)"; exit 1; }
throwaway_cluster tls
TLS_PORT=$(free_port)

log "cluster in $PGDIR: $WORKERS workers, webgres on $WG_PORT, TLS on $TLS_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF2
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
# Nothing here writes after the load: no autovacuum worker to add its CPU
# time to webgres' (the postmaster's children) in the middle of a case.
autovacuum = off
EOF2
# The certificate, made for this run, lives in the data directory (the
# settings' relative paths), readable by the server's user only.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$PGDIR/server.key" -out "$PGDIR/server.pem" -days 2 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost,IP:127.0.0.1 > "$OUT/openssl.log" 2>&1
[ "$(id -u)" -eq 0 ] && chown postgres: "$PGDIR/server.key" "$PGDIR/server.pem"
chmod 600 "$PGDIR/server.key"

# nginx: its own directory beside the cluster's (initdb wants that empty),
# a copy of the same certificate and key for its master to read, and the
# TLS settings webgres makes in src/http/tls.c: TLS 1.2 and 1.3, Mozilla's
# intermediate ciphers and TLS 1.3 suites, the client's order, the groups
# X25519:P-256:P-384, OpenSSL's own session cache in each worker, sessions
# (and tickets) an hour long, tickets under keys the workers share (the
# master makes them).  SO_REUSEPORT, as webgres' workers listen.  Stopped
# with the cluster.
NGINX_DIR=$(mktemp -d /tmp/webgres-tls-nginx.XXXXXX)
trap 'nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR" -s stop 2>/dev/null || true;
	"$CLUSTER" stop "$PGDIR" immediate >/dev/null 2>&1 || true; rm -rf "$PGDIR" "$NGINX_DIR"' EXIT
cp "$PGDIR/server.pem" "$PGDIR/server.key" "$NGINX_DIR/"
chmod 600 "$NGINX_DIR/server.key"
NGINX_PORT=$(free_port)
NGINX_TLS_PORT=$(free_port)
CIPHERS=$(sed -n '/^#define INTERMEDIATE_CIPHERS /,/[^\\]$/p' "$ROOT/src/http/tls.c" | grep -o '"[^"]*"' | tr -d '"\n')
SUITES=$(sed -n '/^#define INTERMEDIATE_CIPHERSUITES/,/[^\\]$/p' "$ROOT/src/http/tls.c" | grep -o '"[^"]*"' | tr -d '"\n')
TLS_GROUPS=$(sed -n 's/^#define TLS_GROUPS "\(.*\)"$/\1/p' "$ROOT/src/http/tls.c")
[ -n "$CIPHERS" ] && [ -n "$SUITES" ] && [ -n "$TLS_GROUPS" ] ||
	{ log "could not read webgres' TLS settings from src/http/tls.c"; exit 1; }
{ nginx_conf_head "$NGINX_DIR" "$WORKERS"; cat <<EOF2
http {
	access_log off;
	tcp_nodelay on;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	client_body_temp_path $NGINX_DIR/body;
	proxy_temp_path $NGINX_DIR/proxy;
	ssl_certificate $NGINX_DIR/server.pem;
	ssl_certificate_key $NGINX_DIR/server.key;
	ssl_protocols TLSv1.2 TLSv1.3;
	ssl_ciphers $CIPHERS;
	ssl_conf_command Ciphersuites $SUITES;
	ssl_prefer_server_ciphers off;
	ssl_ecdh_curve $TLS_GROUPS;
	ssl_session_cache builtin;
	ssl_session_timeout 1h;
	ssl_session_tickets on;
	server {
		listen 127.0.0.1:$NGINX_PORT reuseport;
		listen 127.0.0.1:$NGINX_TLS_PORT ssl http2 reuseport;
		location = /json {
			default_type application/json;
			return 200 '{"message":"Hello, World!"}';
		}
	}
}
EOF2
} > "$NGINX_DIR/nginx.conf"
nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"

"$CLUSTER" start "$PGDIR"
"${BENCH_TFB_DB:-$ROOT/scripts/tfb-db.sh}" > "$OUT/tfb-db.log" 2>&1
"$CLUSTER" psql "$PGDIR" -d hello_world -q -c "VACUUM ANALYZE" -c CHECKPOINT > /dev/null
"$CLUSTER" psql "$PGDIR" -d postgres -q -c "ALTER SYSTEM SET webgres.workers = $WORKERS" -c "SELECT pg_reload_conf()" > /dev/null
for url in "https://127.0.0.1:$TLS_PORT/db" "https://127.0.0.1:$NGINX_TLS_PORT/json" "http://127.0.0.1:$NGINX_PORT/json"; do
	for _ in $(seq 1 300); do
		[ "$(curl -sk -o /dev/null -w '%{http_code}' "$url")" = 200 ] && break
		sleep 0.1
	done
done
# s_time asks for /json over HTTP/1.0 and reads no status: both must answer it
for url in "https://127.0.0.1:$TLS_PORT/json" "https://127.0.0.1:$NGINX_TLS_PORT/json"; do
	code=$(curl -sk --http1.0 -o /dev/null -w '%{http_code}' "$url")
	[ "$code" = 200 ] || { log "error: $url answers HTTP/1.0 with $code: s_time's handshakes would not be requests served"; exit 1; }
done
PG_PID=$(head -n 1 "$PGDIR/postmaster.pid")
NGINX_PID=$(cat "$NGINX_DIR/nginx.pid")
log "nginx on $NGINX_PORT, TLS on $NGINX_TLS_PORT, $WORKERS worker processes; webgres $(curl -sk "https://127.0.0.1:$TLS_PORT/json"), nginx $(curl -sk "https://127.0.0.1:$NGINX_TLS_PORT/json")"

: > "$OUT/tls.jsonl"

# What each server negotiates with openssl s_client's defaults (as wrk,
# which sets no cipher of its own) and with TLS 1.2 only: one line each.
negotiated() {
	local server=$1 port=$2 client=$3 raw
	shift 3
	raw="$OUT/s_client.$server.$(echo "$client" | tr -c 'a-z0-9\n' _).txt"
	openssl s_client -connect "127.0.0.1:$port" -servername localhost "$@" < /dev/null > "$raw" 2>&1 || true
	python3 - "$server" "$client" "$raw" >> "$OUT/tls.jsonl" <<'PY'
import json, re, sys
t = open(sys.argv[3]).read()
def find(pattern):
    m = re.search(pattern, t, re.M)
    return m.group(1).strip() if m else ''
print(json.dumps({'case': 'negotiated', 'server': sys.argv[1], 'client': sys.argv[2],
                  'protocol': find(r'^\s*Protocol\s*:\s*(\S+)') or find(r'^New, (TLSv[\d.]+),'),
                  'cipher': find(r'^New, [^,]+, Cipher is (\S+)'),
                  'group': find(r'^Server Temp Key: (.*)$'),
                  'alpn': find(r'^ALPN protocol: (.*)$')}))
PY
}
for s in "webgres $TLS_PORT" "nginx $NGINX_TLS_PORT"; do
	set -- $s
	negotiated "$1" "$2" "openssl s_client"
	negotiated "$1" "$2" "openssl s_client -tls1_2" -tls1_2
done

# CPU ticks of a server's processes: webgres is the postmaster and all its
# children, nginx its master and workers (lib.sh's tree_ticks).
server_ticks() {
	case $1 in
	webgres) tree_ticks "$PG_PID" ;;
	nginx) tree_ticks "$NGINX_PID" ;;
	esac
}

# record SERVER CASE TOOL PATH REP RPS ERRORS NON2XX NEGOTIATED CPU_TICKS WALL_NS
record() {
	python3 - "$@" "$CONNS" "$CLK_TCK" >> "$OUT/tls.jsonl" <<'PY'
import json, sys
(server, case, tool, path, rep, rps, errors, non2xx, tls, ticks, wall_ns, conns, clk) = sys.argv[1:]
r = {'case': case, 'server': server, 'tool': tool, 'path': path, 'conns': int(conns),
     'rep': int(rep), 'rps': float(rps), 'errors': int(errors), 'non2xx': int(non2xx),
     'cpu_s': round(int(ticks) / int(clk), 3), 'wall_s': round(int(wall_ns) / 1e9, 3)}
if tls != '-':
    r['negotiated'] = tls
print(json.dumps(r))
PY
}

# measure SERVER COMMAND...: runs COMMAND, setting TICKS and WALL_NS to the
# server's CPU ticks and the wall-clock nanoseconds it took.
measure() {
	local server=$1 t0 c0
	shift
	c0=$(server_ticks "$server"); t0=$(date +%s%N)
	"$@" || true
	WALL_NS=$(( $(date +%s%N) - t0 )); TICKS=$(( $(server_ticks "$server") - c0 ))
}

# h2load_case SERVER CASE PATH REP URL [h2load options]
h2load_case() {
	local server=$1 name=$2 path=$3 rep=$4 url=$5
	shift 5
	local raw="$OUT/h2load.$server.$name.${path//\//_}.r$rep.txt"
	measure "$server" h2load -c "$CONNS" -t 2 -m 1 -D "$DURATION" --warm-up-time 1 "$@" "$url" > "$raw" 2>&1
	python3 - "$raw" <<'PY' | { read -r rps errors non2xx tls; record "$server" "$name" h2load "$path" "$rep" "$rps" "$errors" "$non2xx" "$tls" "$TICKS" "$WALL_NS"; }
import re, sys
t = open(sys.argv[1]).read()
rps = re.search(r'finished in [\d.]+\w+, ([\d.]+) req/s', t)
req = re.search(r'requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout', t)
codes = re.search(r'status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx', t)
tls = [re.search(p + r': (.*)', t) for p in ('TLS Protocol', 'Cipher', 'Server Temp Key')]
print(rps.group(1) if rps else 0,
      int(req.group(2)) + int(req.group(3)) + int(req.group(4)) if req else -1,
      int(codes.group(3)) + int(codes.group(4)) if codes else -1,
      '/'.join(m.group(1).split()[0] for m in tls) if all(tls) else '-')
PY
}

# wrk_case SERVER CASE PATH REP URL [header]
wrk_case() {
	local server=$1 name=$2 path=$3 rep=$4 url=$5 header=${6:-Connection: keep-alive}
	local raw="$OUT/wrk.$server.$name.${path//\//_}.r$rep.txt"
	measure "$server" wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 -H "$header" \
		-s "$BENCH/wrk/report.lua" "$url" > "$raw" 2>&1
	python3 - "$raw" <<'PY' | { read -r rps errors non2xx; record "$server" "$name" wrk "$path" "$rep" "$rps" "$errors" "$non2xx" - "$TICKS" "$WALL_NS"; }
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

# stime_case SERVER REP PORT: full handshakes, STIME_PROCS `openssl s_time
# -new` at once for DURATION seconds; their connections summed, per second
# of the case.  s_time reads no status: the statuses are checked once, by
# curl, before the repetitions.
stime_case() {
	local server=$1 rep=$2 port=$3
	local raw="$OUT/s_time.$server.r$rep"
	measure "$server" stime_run "$port" "$raw"
	python3 - "$raw" "$STIME_PROCS" "$WALL_NS" <<'PY' | { read -r rps errors; record "$server" tls-h1-full s_time /json "$rep" "$rps" "$errors" 0 - "$TICKS" "$WALL_NS"; }
import re, sys
raw, procs, wall_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns, errors = 0, 0
for i in range(1, procs + 1):
    t = open('%s.%d.txt' % (raw, i)).read()
    m = re.search(r'^(\d+) connections in [\d.]+ real seconds', t, re.M)
    if m:
        conns += int(m.group(1))
    else:
        errors += 1
    errors += len(re.findall(r'^ERROR', t, re.M))
print(conns / (wall_ns / 1e9), errors)
PY
}

# stime_run PORT RAW: the s_time processes of one case, RAW.N.txt each
stime_run() {
	local port=$1 raw=$2 i pids=()
	for i in $(seq 1 "$STIME_PROCS"); do
		openssl s_time -connect "127.0.0.1:$port" -new -time "$DURATION" -www /json \
			> "$raw.$i.txt" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || true; done
}

declare -A CLEAR=([webgres]=http://127.0.0.1:$WG_PORT [nginx]=http://127.0.0.1:$NGINX_PORT)
declare -A TLS=([webgres]=https://127.0.0.1:$TLS_PORT [nginx]=https://127.0.0.1:$NGINX_TLS_PORT)
declare -A TLS_PORTS=([webgres]=$TLS_PORT [nginx]=$NGINX_TLS_PORT)
for rep in $(seq 1 "$REPS"); do
	# nginx after webgres in odd repetitions, before it in even ones
	servers="webgres nginx"
	[ $((rep % 2)) -eq 0 ] && servers="nginx webgres"
	for path in /json /db; do
		log "rep $rep: $path, h2load: cleartext HTTP/1.1, TLS HTTP/1.1, TLS HTTP/2 ($servers)"
		for c in clear-h1 tls-h1 tls-h2; do
			for s in $servers; do
				[ "$s" = nginx ] && [ "$path" != /json ] && continue
				case $c in
				clear-h1) h2load_case "$s" "$c" "$path" "$rep" "${CLEAR[$s]}$path" --h1 ;;
				tls-h1) h2load_case "$s" "$c" "$path" "$rep" "${TLS[$s]}$path" --h1 ;;
				tls-h2) h2load_case "$s" "$c" "$path" "$rep" "${TLS[$s]}$path" ;;
				esac
			done
		done
	done
	log "rep $rep: /json, wrk: keep-alive, a new connection per request, the same over TLS ($servers)"
	for s in $servers; do wrk_case "$s" clear-h1 /json "$rep" "${CLEAR[$s]}/json"; done
	for s in $servers; do wrk_case "$s" clear-h1-close /json "$rep" "${CLEAR[$s]}/json" "Connection: close"; done
	for s in $servers; do wrk_case "$s" tls-h1-close /json "$rep" "${TLS[$s]}/json" "Connection: close"; done
	log "rep $rep: full TLS handshakes, $STIME_PROCS openssl s_time -new at once ($servers)"
	for s in $servers; do stime_case "$s" "$rep" "${TLS_PORTS[$s]}"; done
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
printf '{"case":"resumption","server":"webgres","tls12":%d,"tls13":%d,"of":%d,"workers":%d}\n' \
	"$R12" "$R13" "$RESUMES" "$WORKERS" >> "$OUT/tls.jsonl"

python3 "$BENCH/report.py" tls-md "$OUT/tls.jsonl" | tee "$OUT/tls.md"
