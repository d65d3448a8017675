#!/usr/bin/env bash
# The sse bench tier: subscribers on one channel of an event-stream route,
# NOTIFY-to-delivery latency (p50/p99) and the worker's RSS.  Self-contained:
# its own throwaway cluster, stopped on exit.
#
#   bench/sse/run.sh OUTDIR           writes OUTDIR/sse.json (one line per level)
#
# Settings (environment): SSE_LEVELS (subscriber counts, default "1000 5000"),
# SSE_EVENTS (notifications per level, default 20, 100 ms apart), SSE_WORKERS
# (default 1, so that one worker holds every stream).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLUSTER=$ROOT/scripts/cluster.sh
OUTDIR=${1:?usage: bench/sse/run.sh OUTDIR}
LEVELS=${SSE_LEVELS:-1000 5000}
EVENTS=${SSE_EVENTS:-20}
WORKERS=${SSE_WORKERS:-1}
mkdir -p "$OUTDIR"
log() { printf '[bench sse %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Each stream is a file descriptor, in the server and in the client.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge 12000 ] || ulimit -n 12000 2>/dev/null || log "note: ulimit -n is $(ulimit -n)"

TMP=$(mktemp -d /tmp/webgres-bench-sse.XXXXXX)
chmod 755 "$TMP"
PGDIR=$TMP/pg
cleanup() {
	set +e
	[ -f "$PGDIR/postmaster.pid" ] && "$CLUSTER" stop "$PGDIR" fast
	[ -f "$PGDIR/postgres.log" ] && cp "$PGDIR/postgres.log" "$OUTDIR/sse-postgres.log"
	rm -rf "$TMP"
}
trap cleanup EXIT

PGPORT=$(free_port); WG_PORT=$(free_port)
export PGHOST=$PGDIR/socket PGPORT
"$CLUSTER" init "$PGDIR" "$PGPORT" <<CONF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.workers = $WORKERS
CONF
# Started by hand rather than with cluster.sh start: runuser gives the
# cluster's OS user the default soft limit (1024 descriptors), too few.
NOFILE=$(ulimit -n)
"$CLUSTER" as-owner bash -c "ulimit -n $NOFILE; pg_ctl -D '$PGDIR' -l '$PGDIR/postgres.log' -w -t 60 start" >/dev/null
log "server file-descriptor limit: $(awk '/Max open files/ { print $4 }' /proc/$(head -n 1 "$PGDIR/postmaster.pid")/limits)"
psql_() { "$CLUSTER" psql "$PGDIR" -d postgres -X -q "$@"; }
psql_ -c "CREATE EXTENSION webgres" \
	-c "INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/stream/:ch', \$\$SELECT ARRAY[request.params->>'ch'] AS channels FROM request\$\$)" \
	-c "CREATE PROCEDURE bench_notify(ch text, n int) LANGUAGE plpgsql AS \$\$BEGIN FOR i IN 1..n LOOP PERFORM pg_notify(ch, (extract(epoch FROM clock_timestamp()) * 1e6)::bigint::text); COMMIT; PERFORM pg_sleep(0.1); END LOOP; END\$\$"
for _ in $(seq 1 100); do
	curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$WG_PORT/" && break
	sleep 0.1
done
worker_rss() {
	local total=0 pid
	for pid in $(psql_ -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'"); do
		total=$(( total + $(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status") ))
	done
	echo "$total"
}

: > "$OUTDIR/sse.json"
for n in $LEVELS; do
	ch=bench$n
	rss_before=$(worker_rss)
	log "$n subscribers on one channel, $EVENTS notifications 100 ms apart"
	cmd=$(printf '%q ' "$CLUSTER" psql "$PGDIR" -d postgres -X -q -c "CALL bench_notify('$ch', $EVENTS)")
	# The client runs the notifier once every stream is open; the worker's
	# RSS is read while they are all still open.
	python3 "$ROOT/bench/sse/client.py" "$WG_PORT" "/stream/$ch" "$n" "$EVENTS" "$TMP/sse.$n.json" \
		-- bash -c "$cmd; awk '/^VmRSS:/ { print \$2 }' /proc/\$(cat $TMP/wpid)/status > $TMP/rss.$n" &
	cpid=$!
	echo "$(psql_ -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker' LIMIT 1")" > "$TMP/wpid"
	wait "$cpid"
	rss_open=$(cat "$TMP/rss.$n" 2>/dev/null || echo 0)
	python3 - "$TMP/sse.$n.json" "$rss_before" "$rss_open" "$WORKERS" >> "$OUTDIR/sse.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r.update(worker_rss_kib_before=int(sys.argv[2]), worker_rss_kib_streaming=int(sys.argv[3] or 0), workers=int(sys.argv[4]))
print(json.dumps(r))
PY
	log "  $(tail -n 1 "$OUTDIR/sse.json")"
	sleep 1
done
