#!/usr/bin/env bash
# The bench's WebSocket tier (docs/websocket.md), on a throwaway cluster of
# its own, with bench/wsload.js (Node `ws`) as the client:
#
#  1. idle sockets: WS_IDLE (10,000) sockets opened on an echo route; the
#     webgres workers' memory (VmRSS and Pss, /proc) before and after, per
#     socket; held past webgres.websocket_idle_timeout (set to
#     WS_IDLE_TIMEOUT_MS, 5 s, for this part) answering the server's pings,
#     beside WS_IDLE_SILENT (100) sockets that do not answer (closed with
#     1001); then every worker is restarted (pg_terminate_backend; the
#     supervisor starts new ones) and the close codes counted (1001 expected);
#  2. echo through a SQL handler: WS_SOCKETS (64) sockets, each sending a
#     message, waiting for the reply and sending again for DURATION seconds,
#     against webgres' on_message and against bench/reference/node-ws (Node
#     `ws` + `pg`, WORKERS processes, a pool of WS_NODE_POOL connections
#     each, to the same cluster) running the same SQL: the message back
#     (`echo`) and a one-row read of `world` by primary key (`select`);
#     repetitions interleaved (webgres, node-ws, webgres, ...), REPS times;
#  3. NOTIFY fan-out: for each of WS_FANOUT (5,000 and 20,000) sockets on a
#     route listening on one channel, WS_NOTIFIES pg_notify()s, each sent
#     once the previous one reached every socket; per NOTIFY, the time from
#     sending it until the LAST socket had it: p50, p99, max.
#
#   bench/websocket.sh [OUTDIR]     (webgres installed: make all install first)
#
# Settings (environment): WORKERS (2 x nproc), WS_EXECUTORS (WORKERS),
# REPS (3), DURATION (10), WS_SOCKETS (64), WS_NODE_POOL (16), WS_FANOUT
# ("5000 20000"), WS_NOTIFIES (50), WS_IDLE (10000), WS_IDLE_SILENT (100),
# WS_IDLE_TIMEOUT_MS (5000), WS_CLIENT_PROCS (2, client processes),
# WS_PARTS ("idle echo fanout").
# Writes OUTDIR (default bench/results/<UTC timestamp>-websocket/):
# report.md, results.json, raw/ (every client's JSON line, the logs).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
tier_script websocket "${1:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)-websocket}"
WORKERS=${WORKERS:-$(( 2 * $(nproc) ))}
WS_EXECUTORS=${WS_EXECUTORS:-$WORKERS}
REPS=${REPS:-3}
DURATION=${DURATION:-10}
WS_SOCKETS=${WS_SOCKETS:-64}
WS_NODE_POOL=${WS_NODE_POOL:-16}
WS_FANOUT=${WS_FANOUT:-5000 20000}
WS_NOTIFIES=${WS_NOTIFIES:-50}
WS_IDLE=${WS_IDLE:-10000}
WS_IDLE_SILENT=${WS_IDLE_SILENT:-100}
WS_IDLE_TIMEOUT_MS=${WS_IDLE_TIMEOUT_MS:-5000}
WS_CLIENT_PROCS=${WS_CLIENT_PROCS:-2}
WS_PARTS=${WS_PARTS:-idle echo fanout}
RAW=$OUT/raw
mkdir -p "$RAW"
COMMAND=""
for v in WORKERS WS_EXECUTORS REPS DURATION WS_SOCKETS WS_NODE_POOL WS_FANOUT WS_NOTIFIES WS_IDLE \
	WS_IDLE_SILENT WS_IDLE_TIMEOUT_MS WS_CLIENT_PROCS WS_PARTS; do
	COMMAND+="$v='${!v}' "
done
COMMAND+="bench/websocket.sh"
# the commit and tree measured, taken before anything runs
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
TREE=$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -qv '^??' && echo dirty || echo clean)
# A run of some parts into a directory that holds the others' adds its
# command: the report names every command its figures came from.
echo "$COMMAND $*" >> "$RAW/commands.txt"

# Every socket is a descriptor in a worker and in a client process: take
# as many as the kernel lets (root may raise the hard limit too).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
log "open file limit $NOFILE"

# node-ws and the client's ws, from npm (only when missing or stale)
NODEDIR=$BENCH/reference/node-ws
if [ ! -d "$NODEDIR/node_modules/ws" ] || [ "$NODEDIR/package-lock.json" -nt "$NODEDIR/node_modules/.package-lock.json" ]; then
	log "installing node-ws's dependencies (npm ci)"
	(cd "$NODEDIR" && npm ci --no-audit --no-fund --silent)
fi

throwaway_cluster websocket
NODE_PORT=$(free_port)
log "cluster in $PGDIR: $WORKERS workers, $WS_EXECUTORS executors, webgres on $WG_PORT, node-ws on $NODE_PORT"
# TechEmpower's Postgres settings (scripts/tfb-postgres.conf), as the HTTP tiers have them.
{
	cat "$ROOT/scripts/tfb-postgres.conf"
	cat <<CONF
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$WG_PORT'
webgres.database = 'postgres'
webgres.workers = $WORKERS
webgres.executors = $WS_EXECUTORS
max_worker_processes = $(( WORKERS + WS_EXECUTORS + 8 ))
max_connections = $(( WORKERS * WS_NODE_POOL + 50 ))
CONF
} | "$CLUSTER" init "$PGDIR" "$PGPORT"
# Started by hand rather than with cluster.sh start: runuser gives the
# cluster's OS user the default soft limit of descriptors, too few.
"$CLUSTER" as-owner bash -c "ulimit -n $NOFILE; pg_ctl -D '$PGDIR' -l '$PGDIR/postgres.log' -w -t 60 start" >/dev/null
trap '"$CLUSTER" stop "$PGDIR" immediate >/dev/null 2>&1 || true; cp "$PGDIR/postgres.log" "$RAW/postgres.log" 2>/dev/null || true;
	[ -n "${NODE_PID:-}" ] && kill "$NODE_PID" 2>/dev/null; rm -rf "$PGDIR"' EXIT
psql_() { "$CLUSTER" psql "$PGDIR" -d postgres "$@"; }
psql_ > "$RAW/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION webgres;
CREATE TABLE world (id int PRIMARY KEY, randomnumber int NOT NULL);
INSERT INTO world SELECT i, 1 + (random() * 9999)::int FROM generate_series(1, 10000) AS i;
VACUUM ANALYZE world;
INSERT INTO webgres.routes (method, path, handler, upgrade, on_message) VALUES
  ('GET', '/echo', 'SELECT NULL::text AS body', 'websocket', $$SELECT $2$$),
  ('GET', '/select', 'SELECT NULL::text AS body', 'websocket',
   $$SELECT json_build_object('id', id, 'randomNumber', randomnumber)::text FROM world WHERE id = $2::int$$),
  ('GET', '/fan', $$SELECT ARRAY['fan'] AS channels, NULL::text AS body$$, 'websocket', NULL);
INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/ping', $$SELECT 'pong' AS body$$);
SQL
log "server file-descriptor limit: $(awk '/Max open files/ { print $4 }' "/proc/$(head -n 1 "$PGDIR/postmaster.pid")/limits")"

# wait_serving: until /ping answers and every worker is up (a deadline of 60 s)
wait_serving() {
	local i
	for i in $(seq 1 600); do
		if [ "$(curl -s --max-time 1 "http://127.0.0.1:$WG_PORT/ping")" = pong ] &&
			[ "$(psql_ -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres worker'")" = "$WORKERS" ]; then
			return 0
		fi
		sleep 0.1
	done
	log "webgres did not come up"; return 1
}
wait_serving

PORT=$NODE_PORT WORKERS=$WORKERS POOL=$WS_NODE_POOL PGUSER=postgres PGDATABASE=postgres \
	node "$NODEDIR/server.js" > "$RAW/node-ws.log" 2>&1 &
NODE_PID=$!
for i in $(seq 1 200); do
	[ "$(curl -s --max-time 1 "http://127.0.0.1:$NODE_PORT/health")" = ok ] && break
	[ "$i" = 200 ] && { log "node-ws did not start"; exit 1; }
	sleep 0.1
done

load() { PGUSER=postgres PGDATABASE=postgres node "$BENCH/wsload.js" "$@"; }

POSTMASTER=$(head -n 1 "$PGDIR/postmaster.pid")
# server_ticks SERVER: what a server is charged with: webgres all of
# Postgres; node-ws its processes plus all of Postgres (its backends)
server_ticks() {
	local t
	t=$(tree_ticks "$POSTMASTER")
	[ "$1" = node-ws ] && t=$(( t + $(tree_ticks "$NODE_PID") ))
	echo "$t"
}
has_part() { [[ " $WS_PARTS " == *" $1 "* ]]; }

# ---- 1. idle sockets: memory, pings past the idle timeout, a restart ----
if has_part idle; then
	log "idle: $WS_IDLE sockets (+ $WS_IDLE_SILENT that do not answer pings), idle timeout ${WS_IDLE_TIMEOUT_MS} ms"
	load idle "ws://127.0.0.1:$WG_PORT/echo" "$WS_IDLE" "$WS_IDLE_TIMEOUT_MS" "$WS_CLIENT_PROCS" "$WS_IDLE_SILENT" \
		> "$RAW/idle.json" 2> "$RAW/idle.log" || log "idle part failed (see $RAW/idle.log)"
	log "  $(cat "$RAW/idle.json")"
	wait_serving
fi

# ---- 2. echo through a SQL handler, against node-ws, interleaved ----
if has_part echo; then
	: > "$RAW/echo.jsonl"
	for kind in echo select; do
		for server in webgres node-ws; do   # one unrecorded second each: connections, plans
			port=$WG_PORT; [ "$server" = node-ws ] && port=$NODE_PORT
			load echo "ws://127.0.0.1:$port/$kind" "$WS_SOCKETS" 1 "$WS_CLIENT_PROCS" "$kind" > /dev/null 2>&1 || true
		done
	done
	for rep in $(seq 1 "$REPS"); do
		for kind in echo select; do
			for server in webgres node-ws; do
				port=$WG_PORT; [ "$server" = node-ws ] && port=$NODE_PORT
				c0=$(server_ticks "$server")
				r=$(load echo "ws://127.0.0.1:$port/$kind" "$WS_SOCKETS" "$DURATION" "$WS_CLIENT_PROCS" "$kind" 2>> "$RAW/echo.log") ||
					{ log "echo run failed: $server $kind rep $rep"; continue; }
				cpu=$(awk -v a="$c0" -v b="$(server_ticks "$server")" -v h="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / h }')
				echo "{\"server\":\"$server\",\"kind\":\"$kind\",\"rep\":$rep,\"cpu_s\":$cpu,\"result\":$r}" >> "$RAW/echo.jsonl"
				log "echo $kind $server rep $rep: $r"
			done
		done
	done
fi

# ---- 3. NOTIFY fan-out ----
if has_part fanout; then
	: > "$RAW/fanout.jsonl"
	for n in $WS_FANOUT; do
		log "fan-out: $n sockets, $WS_NOTIFIES notifications"
		r=$(load fanout "ws://127.0.0.1:$WG_PORT/fan" "$n" "$WS_NOTIFIES" "$WS_CLIENT_PROCS" fan 2>> "$RAW/fanout.log") ||
			{ log "fan-out of $n failed (see $RAW/fanout.log)"; continue; }
		echo "$r" >> "$RAW/fanout.jsonl"
		log "  $r"
		wait_serving
	done
fi

echo "$COMMIT $TREE" >> "$RAW/commits.txt"
python3 - "$OUT" "$COMMAND" "$(sort -u "$RAW/commits.txt" | tr '\n' ' ')" "" \
	"$WS_IDLE_TIMEOUT_MS" <<'PY'
import json, os, statistics, sys
out, command, commit, tree, idle_timeout_ms = sys.argv[1:6]
raw = os.path.join(out, 'raw')
def lines(name):
    p = os.path.join(raw, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
idle = None
if os.path.exists(os.path.join(raw, 'idle.json')) and os.path.getsize(os.path.join(raw, 'idle.json')):
    idle = json.load(open(os.path.join(raw, 'idle.json')))
echo_runs, fanout = lines('echo.jsonl'), lines('fanout.jsonl')
echo = {}
for kind in ('echo', 'select'):
    e = {}
    for server in ('webgres', 'node-ws'):
        rs = [r['result'] for r in echo_runs if r['kind'] == kind and r['server'] == server]
        if rs:
            rates = sorted(r['rate'] for r in rs)
            per_cpu = [r['result']['messages'] / r['cpu_s'] for r in echo_runs
                       if r['kind'] == kind and r['server'] == server and r.get('cpu_s')]
            e[server] = {'min': rates[0], 'median': statistics.median(rates), 'max': rates[-1],
                         'per_cpu_s': statistics.median(per_cpu) if per_cpu else None,
                         'errors': sum(r['errors'] for r in rs),
                         'p50_ms': statistics.median(r['p50_ms'] for r in rs if r['p50_ms'] is not None),
                         'p99_ms': statistics.median(r['p99_ms'] for r in rs if r['p99_ms'] is not None)}
    if 'webgres' in e and 'node-ws' in e and e['node-ws']['median']:
        e['ratio'] = e['webgres']['median'] / e['node-ws']['median']
        if e['webgres']['per_cpu_s'] and e['node-ws']['per_cpu_s']:
            e['ratio_per_cpu_s'] = e['webgres']['per_cpu_s'] / e['node-ws']['per_cpu_s']
    if e:
        echo[kind] = e
commands = [l.strip() for l in open(os.path.join(raw, 'commands.txt')) if l.strip()]
res = {'commands': commands, 'commit': commit, 'tree': tree, 'idle': idle, 'echo': echo,
       'echo_runs': echo_runs, 'fanout': fanout}
json.dump(res, open(os.path.join(out, 'results.json'), 'w'), indent=1)
L = ['# WebSocket tier', '',
     'Made by %s at commit and tree %s%s; the machine\'s 2 cores shared by the servers, Postgres and '
     'the client (bench/wsload.js, Node `ws`).' % (' then '.join('`%s`' % c for c in commands), commit, tree), '']
if idle:
    silent = sum(n for c, n in idle['closes_during_hold'].items() if c.startswith('silent_'))
    answering_closed = sum(n for c, n in idle['closes_during_hold'].items() if not c.startswith('silent_')) - silent
    L += ['## Idle sockets', '',
          '| figure | value |', '| --- | --- |',
          '| sockets opened (failed) | %d (%d), in %.1f s, over %d workers |' % (idle['opened'], idle['failed'], idle['open_s'], idle['workers']),
          '| workers\' VmRSS before / with them open | %.1f / %.1f MB |' % (idle['memory_before']['rss_kb'] / 1024, idle['memory_open']['rss_kb'] / 1024),
          '| workers\' Pss before / with them open | %.1f / %.1f MB |' % (idle['memory_before']['pss_kb'] / 1024, idle['memory_open']['pss_kb'] / 1024),
          '| memory per socket, VmRSS / Pss | %.2f / %.2f kB |' % (idle['rss_kb_per_socket'], idle['pss_kb_per_socket']),
          '| held, answering pings (idle timeout %s) | %.1f s, each socket pinged at least %d times; %d of %d still open; %d closed |'
          % ('%.1f s' % (int(idle_timeout_ms) / 1000), idle['held_ms'] / 1000, idle['min_pings_per_socket'],
             idle['answering_open_after_hold'], idle['opened'] - idle['silent'], answering_closed),
          '| sockets that do not answer pings, closed during the hold | %d of %d (codes: %s) |'
          % (silent, idle['silent'], ', '.join('%s x %d' % (c[7:], n) for c, n in sorted(idle['closes_during_hold'].items()) if c.startswith('silent_')) or 'none'),
          '| worker restart: close codes the open sockets got | %s, all closed %.0f ms after pg_terminate_backend |'
          % (', '.join('%s x %d' % (c, n) for c, n in sorted(idle['closes_on_restart'].items()) if not c.startswith('silent_') and n) or 'none',
             idle['restart_closed_all_ms']), '']
if echo:
    L += ['## Echo through a SQL handler', '',
          'Messages a second over %s sockets, each waiting for its reply before sending again; webgres\' '
          'on_message against node-ws (Node `ws` + `pg`, named prepared statements), the same SQL; '
          'repetitions interleaved. Target: webgres >= 2x node-ws.' % (echo_runs[0]['result']['sockets'] if echo_runs else '?'), '',
          'A server is charged with the CPU time (utime + stime, /proc) of all of Postgres, and node-ws '
          'with its own processes as well; msg per CPU-s is the median over the repetitions of messages '
          'divided by that time.', '',
          '| case | server | msg/s min | median | max | reply p50 / p99 ms | errors | msg per CPU-s | webgres / node-ws (msg/s; per CPU-s) |',
          '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for kind, e in echo.items():
        for server in ('webgres', 'node-ws'):
            if server in e:
                s = e[server]
                L.append('| %s | %s | %.0f | %.0f | %.0f | %.2f / %.2f | %d | %s | %s |' % (
                    kind, server, s['min'], s['median'], s['max'], s['p50_ms'], s['p99_ms'], s['errors'],
                    '%.0f' % s['per_cpu_s'] if s.get('per_cpu_s') else 'n/a',
                    ('%.2f (target >= 2: %s); %s' % (e['ratio'], 'met' if e['ratio'] >= 2 else 'not met',
                                                     '%.2f' % e['ratio_per_cpu_s'] if 'ratio_per_cpu_s' in e else 'n/a'))
                    if server == 'webgres' and 'ratio' in e else ''))
    L.append('')
if fanout:
    L += ['## NOTIFY fan-out', '',
          'Sockets on one route listening on one channel; each pg_notify() sent once the previous one '
          'reached every socket; per NOTIFY, the time until the LAST socket had it. Target: p99 <= 150 ms at 5,000.', '',
          'First: the median time until the FIRST socket had a NOTIFY. CPU per NOTIFY: the webgres '
          'workers\' and the client processes\' utime + stime over the NOTIFYs, divided by their number.', '',
          '| sockets (opened) | open in | NOTIFYs | p50 ms | p99 ms | max ms | first p50 ms | CPU per NOTIFY, workers / client ms | deliveries missed | target |',
          '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |']
    for f in fanout:
        tgt = ('met' if f['p99_ms'] is not None and f['p99_ms'] <= 150 and not f['deliveries_missed'] else 'not met') if f['sockets'] == 5000 else ''
        L.append('| %d (%d) | %.1f s | %d | %.1f | %.1f | %.1f | %s | %s | %d | %s |' % (
            f['sockets'], f['opened'], f['open_s'], f['notifies'], f['p50_ms'] or 0, f['p99_ms'] or 0, f['max_ms'] or 0,
            '%.1f' % f['first_p50_ms'] if f.get('first_p50_ms') is not None else 'n/a',
            '%.0f / %.0f' % (f['workers_cpu_ms_per_notify'], f['client_cpu_ms_per_notify'])
            if 'workers_cpu_ms_per_notify' in f else 'n/a',
            f['deliveries_missed'], tgt))
    L.append('')
open(os.path.join(out, 'report.md'), 'w').write('\n'.join(L))
print('\n'.join(L))
PY
log "done: $OUT/report.md"
