#!/usr/bin/env bash
# The bench's static tier: static files against nginx, and compression.
#
#   bench/static.sh OUTDIR
#
# Starts its own throwaway cluster (WORKERS workers) with a static mount of
# a directory holding a 4 KB and a 1 MB file, and nginx (Debian's
# nginx-light, WORKERS worker processes) serving the same directory, with
# sendfile on (libh2o 2.2.5's file handler has no sendfile: it preads and
# writes), no access log, keep-alive on both.  wrk (2 threads, CONNS
# connections, DURATION seconds, REPS times) fetches each file from each
# server in turn.  Then a 100 KB JSON route (one row read by primary key)
# with webgres.compress on, with and without Accept-Encoding: gzip:
# requests per second and bytes per response as wrk read them.
# Writes OUTDIR/static.jsonl (one line per run) and OUTDIR/static.md.
#
# Settings (environment): WORKERS (nproc), CONNS (64), DURATION (5), REPS (1).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script static "${1:-}"
WORKERS=${WORKERS:-$(nproc)}
CONNS=${CONNS:-64}
DURATION=${DURATION:-5}
REPS=${REPS:-1}

command -v nginx >/dev/null || { log "nginx is not installed (apt-get install nginx-light)"; exit 1; }
throwaway_cluster static

# The files, readable by Postgres' user and nginx's workers alike, and
# nginx's own directory, beside the cluster's (initdb wants that empty).
WORK=$(mktemp -d /tmp/webgres-static-files.XXXXXX)
FILES=$WORK/files
NGINX_DIR=$WORK/nginx
mkdir -p "$FILES" "$NGINX_DIR"
head -c 4096 /dev/urandom > "$FILES/4k.bin"
head -c 1048576 /dev/urandom > "$FILES/1m.bin"
chmod 755 "$WORK" "$FILES"
chmod 644 "$FILES"/*

# nginx, stopped with the cluster.
NGINX_PORT=$(free_port)
{ nginx_conf_head "$NGINX_DIR" "$WORKERS"; cat <<EOF
http {
	include /etc/nginx/mime.types;
	access_log off;
	sendfile on;
	tcp_nopush on;
	tcp_nodelay on;
	keepalive_requests 1000000;
	keepalive_timeout 60s;
	client_body_temp_path $NGINX_DIR/body;
	proxy_temp_path $NGINX_DIR/proxy;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		location /files/ { alias $FILES/; }
	}
}
EOF
} > "$NGINX_DIR/nginx.conf"
nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR"
trap 'nginx -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR" -s stop 2>/dev/null || true;
	"$CLUSTER" stop "$PGDIR" immediate >/dev/null 2>&1 || true; rm -rf "$PGDIR" "$WORK"' EXIT

log "cluster in $PGDIR: $WORKERS workers, webgres on $WG_PORT, nginx on $NGINX_PORT"
"$CLUSTER" init "$PGDIR" "$PGPORT" <<EOF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'postgres'
webgres.workers = $WORKERS
webgres.compress = on
max_worker_processes = 32
log_min_messages = warning
EOF
"$CLUSTER" start "$PGDIR"
"$CLUSTER" psql "$PGDIR" -d postgres -q -v ON_ERROR_STOP=1 > "$OUT/setup.log" 2>&1 <<SQL
CREATE EXTENSION webgres;
INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/files', '$FILES');
CREATE TABLE blob (id int PRIMARY KEY, body json);
INSERT INTO blob SELECT 1, json_agg(json_build_object('id', i, 'name', 'user ' || i,
	'email', 'user' || i || '@example.com', 'active', i % 3 = 0))
	FROM generate_series(1, 1170) i;
INSERT INTO webgres.routes (method, path, handler) VALUES
  ('GET', '/bench/json100k', \$\$SELECT body FROM blob WHERE id = 1\$\$);
SQL
for url in "http://127.0.0.1:$WG_PORT/files/4k.bin" "http://127.0.0.1:$NGINX_PORT/files/4k.bin" \
	"http://127.0.0.1:$WG_PORT/bench/json100k"; do
	for _ in $(seq 1 300); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$url")" = 200 ] && break
		sleep 0.1
	done
done
cmp <(curl -s "http://127.0.0.1:$WG_PORT/files/1m.bin") "$FILES/1m.bin" || { log "webgres sent other bytes"; exit 1; }
cmp <(curl -s "http://127.0.0.1:$NGINX_PORT/files/1m.bin") "$FILES/1m.bin" || { log "nginx sent other bytes"; exit 1; }
JSON_BYTES=$(curl -s "http://127.0.0.1:$WG_PORT/bench/json100k" | wc -c)

# run_wrk CASE SERVER URL [HEADER]: one wrk run, a JSON line in static.jsonl.
run_wrk() {
	local case=$1 server=$2 url=$3 header=${4:-} raw
	raw=$OUT/$case.$server.r$rep.txt
	if [ -n "$header" ]; then
		wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 -H "$header" "$url" > "$raw" 2>&1
	else
		wrk -t 2 -c "$CONNS" -d "${DURATION}s" --timeout 8 "$url" > "$raw" 2>&1
	fi
	python3 - "$case" "$server" "$rep" "$raw" >> "$OUT/static.jsonl" <<'PY'
import json, re, sys
case, server, rep, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
t = open(path).read()
units = {'B': 1, 'KB': 1024, 'MB': 1024**2, 'GB': 1024**3}
m = re.search(r'(\d+) requests in [\d.]+\w+, ([\d.]+)(B|KB|MB|GB) read', t)
rps = re.search(r'Requests/sec:\s+([\d.]+)', t)
non2xx = re.search(r'Non-2xx or 3xx responses: (\d+)', t)
errors = re.search(r'Socket errors: (.*)', t)
requests = int(m.group(1)) if m else 0
read = float(m.group(2)) * units[m.group(3)] if m else 0
print(json.dumps({'case': case, 'server': server, 'rep': rep,
                  'rps': float(rps.group(1)) if rps else 0, 'requests': requests,
                  'bytes_per_response': read / requests if requests else 0,
                  'non2xx': int(non2xx.group(1)) if non2xx else 0,
                  'socket_errors': errors.group(1) if errors else ''}))
PY
}

: > "$OUT/static.jsonl"
for rep in $(seq 1 "$REPS"); do
	for f in 4k 1m; do
		log "rep $rep: $f.bin, webgres then nginx, $CONNS connections"
		run_wrk "file-$f" webgres "http://127.0.0.1:$WG_PORT/files/$f.bin"
		run_wrk "file-$f" nginx "http://127.0.0.1:$NGINX_PORT/files/$f.bin"
	done
	log "rep $rep: 100 KB JSON, plain then gzip"
	run_wrk json100k-plain webgres "http://127.0.0.1:$WG_PORT/bench/json100k"
	run_wrk json100k-gzip webgres "http://127.0.0.1:$WG_PORT/bench/json100k" 'Accept-Encoding: gzip'
done

python3 - "$OUT/static.jsonl" "$WORKERS" "$CONNS" "$DURATION" "$JSON_BYTES" <<'PY' | tee "$OUT/static.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
workers, conns, secs, json_bytes = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def med(case, server, key):
    xs = [r[key] for r in rows if r['case'] == case and r['server'] == server]
    return statistics.median(xs) if xs else 0
def bad(case, server):
    return sum(r['non2xx'] for r in rows if r['case'] == case and r['server'] == server)
print('%s workers (webgres) and worker processes (nginx), %s connections, %s s a run, wrk 2 threads.' % (workers, conns, secs))
print()
print('| file | webgres req/s | nginx req/s | webgres / nginx | webgres MB/s | nginx MB/s | non-2xx |')
print('| --- | --- | --- | --- | --- | --- | --- |')
for f in ['4k', '1m']:
    w, n = med('file-' + f, 'webgres', 'rps'), med('file-' + f, 'nginx', 'rps')
    wb, nb = med('file-' + f, 'webgres', 'bytes_per_response'), med('file-' + f, 'nginx', 'bytes_per_response')
    print('| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %d / %d |' % (
        {'4k': '4 KB', '1m': '1 MB'}[f], w, n, w / n if n else 0, w * wb / 1e6, n * nb / 1e6,
        bad('file-' + f, 'webgres'), bad('file-' + f, 'nginx')))
print()
print('A %d-byte JSON route (one row by primary key), webgres.compress on:' % json_bytes)
print()
print('| request | req/s | bytes a response (with headers) | non-2xx |')
print('| --- | --- | --- | --- |')
for case, label in [('json100k-plain', 'no Accept-Encoding'), ('json100k-gzip', 'Accept-Encoding: gzip')]:
    print('| %s | %.0f | %.0f | %d |' % (label, med(case, 'webgres', 'rps'),
                                       med(case, 'webgres', 'bytes_per_response'), bad(case, 'webgres')))
PY
