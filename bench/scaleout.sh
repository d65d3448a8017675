#!/usr/bin/env bash
# The scale-out tier: a read route through HAProxy with the primary alone,
# with one standby beside it and with two (scripts/topology.sh, HAProxy
# configured from scripts/haproxy/webgres.cfg less the server lines left
# out), repetitions interleaved; the cost of a standby's redirect of a
# write; and the CPU time each node spends per request it served.
#
#   bench/scaleout.sh        (webgres installed: make all install first)
#
#   REPS (3), DURATION (10 s), CONNS (64)
#
# Every node runs on this machine, so three nodes share its cores with wrk
# and HAProxy: throughput here cannot grow with nodes the way it does on
# separate machines.  CPU per request per node is what carries over.
# Writes bench/results/<UTC timestamp>-scaleout/ (report.md, results.json,
# raw/).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-10}
CONNS=${CONNS:-64}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
# A directory given as the first argument (bench/run.sh gives one) takes the results.
out=${1:-$ROOT/bench/results/$stamp-scaleout}
raw=$out/raw
mkdir -p "$raw"
port=$((20000 + RANDOM % 10000))
pgport=$((30000 + RANDOM % 10000))
top=$(mktemp -d "${TMPDIR:-/tmp}/webgres-scaleout.XXXXXX")
chmod 755 "$top"	# the nodes run as the unprivileged postgres user

log() { printf '[scaleout %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

cleanup() {
	for f in "$top"/nodes/haproxy-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
	WEBGRES_DATA=$top/nodes "$ROOT/scripts/topology.sh" down || true
	rm -rf "$top"
}
trap cleanup EXIT

command -v wrk >/dev/null || "$ROOT/scripts/deps.sh"
log "starting a primary, two standbys and HAProxy"
WEBGRES_DATA=$top/nodes PORT=$port PGPORT=$pgport WORKERS=1 EXECUTORS=1 TOPOLOGY_UP_ONLY=1 \
	"$ROOT/scripts/topology.sh" > "$raw/topology.log" 2>&1
psql_node() { "$ROOT/scripts/cluster.sh" psql "$top/nodes/$1" -At -c "$2"; }
psql_node primary "INSERT INTO notes (body) SELECT 'note ' || g FROM generate_series(1, 1000) g;
INSERT INTO webgres.routes (method, path, handler) VALUES
 ('GET', '/note/:id', \$\$SELECT n.body FROM notes n JOIN request ON n.id = (request.params->>'id')::int\$\$)"
sleep 1
lua=$top/note.lua
cat > "$lua" <<'LUA'
-- a primary-key read of a random note
request = function() return wrk.format("GET", "/note/" .. math.random(1, 1000)) end
LUA
post=$top/post.lua
cat > "$post" <<'LUA'
-- a write, which a standby answers 307
wrk.method = "POST"
wrk.body = "x"
LUA

# An HAProxy of its own for a pool of N nodes (1: the primary alone), on
# its own port; prints the port.
haproxy_for() {
	local n=$1 hport=$((port + 20 + $1)) cfg=$top/haproxy-$1.cfg
	local drop=""
	[ "$n" -lt 3 ] && drop='/server node3/d'
	[ "$n" -lt 2 ] && drop='/server node[23]/d'
	sed -e "$drop" "$ROOT/scripts/haproxy/webgres.cfg" > "$cfg"
	"$ROOT/scripts/cluster.sh" as-owner env \
		WEBGRES_NODE1="127.0.0.1:$((port + 10))" WEBGRES_NODE2="127.0.0.1:$((port + 11))" \
		WEBGRES_NODE3="127.0.0.1:$((port + 12))" \
		WEBGRES_FRONT="127.0.0.1:$hport" WEBGRES_WRITES="127.0.0.1:$((hport + 10))" \
		haproxy -q -D -p "$top/nodes/haproxy-$n.pid" -f "$cfg"
	echo "$hport"
}
declare -A front
for n in 1 2 3; do front[$n]=$(haproxy_for "$n"); done
sleep 2	# the checks settle (inter 500ms, rise 2)

# CPU seconds (user + system) of every process of a node's cluster.
node_cpu() {
	local pm
	pm=$(head -n 1 "$top/nodes/$1/postmaster.pid")
	python3 - "$pm" <<'PY'
import os, sys
pm = sys.argv[1]
tick = os.sysconf('SC_CLK_TCK')
total = 0
for pid in [pm] + [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        st = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    except OSError:
        continue
    if pid != pm and st[1] != pm:	# ppid: the postmaster's children only
        continue
    total += int(st[11]) + int(st[12])
print(total / tick)
PY
}
node_requests() { psql_node "$1" "SELECT coalesce(sum(requests), 0) FROM webgres.workers"; }
nodes=(primary standby1 standby2)

echo '[]' > "$raw/cases.json"
# Runs one wrk case and appends its figures (with per-node CPU) to cases.json.
run_case() {
	local name=$1 rep=$2 url=$3 script=${4:-}
	local -a cpu0 req0
	for i in 0 1 2; do cpu0[$i]=$(node_cpu "${nodes[$i]}"); req0[$i]=$(node_requests "${nodes[$i]}"); done
	wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency --timeout 8 ${script:+-s "$script"} "$url" \
		> "$raw/$name-$rep.txt" 2>&1
	local cpus="" reqs=""
	for i in 0 1 2; do
		cpus+="$(node_cpu "${nodes[$i]}") ${cpu0[$i]} "
		reqs+="$(node_requests "${nodes[$i]}") ${req0[$i]} "
	done
	python3 - "$raw/cases.json" "$name" "$rep" "$raw/$name-$rep.txt" $cpus $reqs <<'PY'
import json, re, sys
path, name, rep, wrkout = sys.argv[1:5]
nums = [float(x) for x in sys.argv[5:]]
cpu = [nums[2*i] - nums[2*i+1] for i in range(3)]
req = [nums[6+2*i] - nums[6+2*i+1] for i in range(3)]
text = open(wrkout).read()
rps = float(re.search(r'Requests/sec:\s+([\d.]+)', text).group(1))
def ms(label):
    m = re.search(r'^\s+' + label + r'\s+([\d.]+)(us|ms|s)\b', text, re.M)
    if not m: return None
    v = float(m.group(1)); return v / 1000 if m.group(2) == 'us' else v * 1000 if m.group(2) == 's' else v
non2xx = re.search(r'Non-2xx or 3xx responses:\s+(\d+)', text)
errors = re.search(r'Socket errors:.*', text)
cases = json.load(open(path))
cases.append({'case': name, 'rep': int(rep), 'rps': rps, 'p50_ms': ms('50%'), 'p99_ms': ms('99%'),
              'non_2xx_3xx': int(non2xx.group(1)) if non2xx else 0,
              'socket_errors': errors.group(0) if errors else None,
              'node_cpu_s': cpu, 'node_requests': req})
json.dump(cases, open(path, 'w'), indent=1)
PY
}

for rep in $(seq 1 "$REPS"); do
	for n in 1 2 3; do
		log "rep $rep: reads through HAProxy, $n node(s)"
		run_case "reads-$n" "$rep" "http://127.0.0.1:${front[$n]}" "$lua"
	done
	log "rep $rep: a read and a redirected write on standby1 directly"
	run_case standby-read "$rep" "http://127.0.0.1:$((port + 11))" "$lua"
	run_case standby-redirect "$rep" "http://127.0.0.1:$((port + 11))/notes" "$post"
done

python3 - "$raw/cases.json" "$out" "$(git -C "$ROOT" rev-parse --short HEAD)" \
	"$(git -C "$ROOT" status --porcelain | grep -q . && echo dirty || echo clean)" \
	"$REPS" "$DURATION" "$CONNS" <<'PY'
import json, statistics, sys
cases_path, out, commit, tree, reps, duration, conns = sys.argv[1:]
cases = json.load(open(cases_path))
def by(name): return [c for c in cases if c['case'] == name]
def mmm(xs): return (min(xs), statistics.median(xs), max(xs))
res = {'git': commit, 'tree': tree, 'reps': int(reps), 'duration_s': int(duration), 'conns': int(conns), 'cases': {}}
lines = [f'# Scale-out tier at {commit} ({tree} tree)', '',
         f'`bench/scaleout.sh`: {reps} repetitions of {duration} s at {conns} connections, wrk -t2, '
         'one webgres worker and one executor per node, every node, HAProxy and wrk on this one 2-core machine.', '',
         '## Reads through HAProxy (GET /note/:id, a primary-key read)', '',
         '| nodes in the pool | req/s min / median / max | vs primary alone (median) | p99 ms (median) | CPU ms per request, per node (primary, standby1, standby2) |',
         '|---|---|---|---|---|']
base = statistics.median(c['rps'] for c in by('reads-1'))
for n in (1, 2, 3):
    cs = by(f'reads-{n}')
    lo, med, hi = mmm([c['rps'] for c in cs])
    per_node = []
    for i in range(3):
        # Only the nodes in this pool: another node serves nothing but
        # HAProxy's probes, and its replay work over a few probes means nothing.
        served = sum(c['node_requests'][i] for c in cs)
        per_node.append(1000 * sum(c['node_cpu_s'][i] for c in cs) / served if i < n and served else None)
    res['cases'][f'reads-{n}'] = {'rps': [lo, med, hi], 'ratio': med / base,
                                  'p99_ms': statistics.median(c['p99_ms'] for c in cs),
                                  'cpu_ms_per_request': per_node,
                                  'errors': sum(c['non_2xx_3xx'] for c in cs)}
    cpu = ', '.join('–' if x is None else f'{x:.3f}' for x in per_node)
    lines.append(f'| {n} | {lo:,.0f} / {med:,.0f} / {hi:,.0f} | {med / base:.2f}× | '
                 f'{res["cases"][f"reads-{n}"]["p99_ms"]:.2f} | {cpu} |')
lines += ['', '## A standby answering directly', '',
          '| case | req/s min / median / max | p99 ms (median) | CPU ms per request on standby1 |', '|---|---|---|---|']
for name, label in (('standby-read', 'read (GET /note/:id)'), ('standby-redirect', 'write redirected: 307 (POST /notes)')):
    cs = by(name)
    lo, med, hi = mmm([c['rps'] for c in cs])
    served = sum(c['node_requests'][1] for c in cs)
    cpu = 1000 * sum(c['node_cpu_s'][1] for c in cs) / served if served else None
    res['cases'][name] = {'rps': [lo, med, hi], 'p99_ms': statistics.median(c['p99_ms'] for c in cs),
                          'cpu_ms_per_request': cpu}
    lines.append(f'| {label} | {lo:,.0f} / {med:,.0f} / {hi:,.0f} | {res["cases"][name]["p99_ms"]:.2f} | '
                 + ('–' if cpu is None else f'{cpu:.3f}') + ' |')
errs = sum(c['non_2xx_3xx'] for c in cases if c['case'].startswith('reads'))
lines += ['', f'Non-2xx/3xx answers in the read cases: {errs}.', '',
          'All three nodes share this machine\'s two cores with HAProxy and wrk, so the pool\'s throughput '
          'cannot grow here as it does when each node has machines of its own. What carries over is the CPU '
          'time a node spends per request it serves (all of its Postgres processes, from /proc): on separate '
          'machines of the same kind, each node serves about (its cores) ÷ (that figure) requests per second, '
          'and a pool of N ready nodes about N times one node, as long as HAProxy and the network keep up.']
json.dump(res, open(f'{out}/results.json', 'w'), indent=1)
open(f'{out}/report.md', 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
PY
log "report: $out/report.md"
