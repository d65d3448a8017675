#!/usr/bin/env bash
# The application tier: the board (examples/board) set up as 'make demo'
# does, on ports of its own, under many signed-in users: STREAMS event
# streams held open while writers post items at each of RATES writes per
# second for DURATION seconds.  Reports, per rate, the writes held, the
# deliveries (every write reaches every stream) and the time from a write
# being sent to its delivery, p50 and p99 (bench/board_load.py).
#
#   bench/board.sh     (webgres installed: make all install first)
#
#   STREAMS (300), USERS (20), WRITERS (4), RATES (20,100,300), DURATION (15)
#
# Writes bench/results/<UTC timestamp>-board/ (report.md, results.json).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STREAMS=${STREAMS:-300}
USERS=${USERS:-20}
WRITERS=${WRITERS:-4}
RATES=${RATES:-20,100,300}
DURATION=${DURATION:-15}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
# A directory given as the first argument (bench/run.sh gives one) takes the results.
out=${1:-$ROOT/bench/results/$stamp-board}
mkdir -p "$out"
top=$(mktemp -d "${TMPDIR:-/tmp}/webgres-board.XXXXXX")
chmod 755 "$top"	# the cluster runs as the unprivileged postgres user
port=$((20000 + RANDOM % 10000))
export PORT=$port HTTP_PORT=$((port + 1)) PGPORT=$((30000 + RANDOM % 10000))
export WEBGRES_DATA=$top/demo WORKERS=${WORKERS:-2} EXECUTORS=${EXECUTORS:-2} DEMO_UP_ONLY=1

cleanup() { "$ROOT/scripts/demo.sh" down >/dev/null 2>&1 || true; rm -rf "$top"; }
trap cleanup EXIT

"$ROOT/scripts/demo.sh" > "$out/demo.log" 2>&1
# Hundreds of streams: each is a socket of the worker and of this client.
ulimit -n 65536 2>/dev/null || true
python3 "$ROOT/bench/board_load.py" --url "https://localhost:$PORT" --streams "$STREAMS" \
	--users "$USERS" --writers "$WRITERS" --rates "$RATES" --duration "$DURATION" \
	--out "$out/results.json"

python3 - "$out" "$(git -C "$ROOT" rev-parse --short HEAD)" \
	"$(git -C "$ROOT" status --porcelain | grep -q . && echo dirty || echo clean)" "$WORKERS" <<'PY'
import json, sys
out, commit, tree, workers = sys.argv[1:]
r = json.load(open(out + '/results.json'))
r['git'], r['tree'] = commit, tree
json.dump(r, open(out + '/results.json', 'w'), indent=1)
lines = ['# The board under load at %s (%s tree)' % (commit, tree), '',
         '`bench/board.sh`: %d event streams held by %d signed-in users over TLS, %d writers posting public items '
         'for %g s at each rate; %s webgres workers; clients and server on this one 2-core machine. '
         'Latency is from a write being sent to its event arriving on a stream, over every (write, stream) pair.'
         % (r['streams'], r['users'], r['writers'], r['duration_s'], workers), '',
         '| target writes/s | writes/s held | write errors | deliveries / expected | p50 ms | p99 ms | max ms |',
         '|---|---|---|---|---|---|---|']
for s in r['steps']:
    f = lambda v: '–' if v is None else '%.1f' % v  # noqa: E731
    lines.append('| %g | %.1f | %d | %d / %d | %s | %s | %s |' % (
        s['target_rate'], s['write_rate'], s['write_errors'], s['deliveries'], s['expected'],
        f(s['p50_ms']), f(s['p99_ms']), f(s['max_ms'])))
open(out + '/report.md', 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
PY
echo "report: $out/report.md" >&2
