#!/usr/bin/env bash
# CPU time per request of two or more builds, on the TechEmpower routes.
#
#   bench/cpu_per_request.sh BUILD [BUILD...]
#
# BUILD is a commit (anything git rev-parse takes) or "." for this tree as it
# is, uncommitted changes included.  Each build is built into a copy of the
# Postgres installation of its own (bench/lib.sh: pg_install_copy) and served
# by a cluster of its own, set up by that build's scripts/tfb-db.sh, all of
# them running at once; only the one being measured has load.
#
# Throughput on this machine moves by tens of percent with whatever else
# runs on its two cores; the CPU time a server spends per request moves far
# less.  For each repetition, route and build (the builds' order rotated
# each repetition), wrk puts a fixed load on the build's port (CONNS
# connections, 2 threads, DURATION seconds, TechEmpower's headers), and the
# script reads utime+stime of the build's webgres workers from /proc/PID/stat
# and their run time in nanoseconds from /proc/PID/schedstat, before and
# after, and divides by the requests wrk completed.  It also charges the
# cluster's every process (postmaster and all its children) the same way.
# A run with socket errors or error statuses is reported and left out.
#
# Settings (environment): REPS (5), DURATION (4 s), CONNS (64), WORKERS (2),
# ROUTES ('/json /plaintext /db /fortunes'), PROFILE (0; 1 adds, after the
# measurements, a `perf record --call-graph dwarf` of the first worker of
# each build under each route, read by bench/profile_account.py), OUT
# (the result directory; default bench/results/<UTC timestamp>-cpu),
# CALLGRIND (0; 1 adds, after the rest, the user-space instructions per
# request of each build and route: the build's cluster restarted under
# valgrind --tool=callgrind with one worker and no executors, counting
# inside CG_TOGGLE only (on_req: the request from its head to its response
# handed to libh2o; h2o_evloop_run: all the worker does, libh2o's parsing,
# writing and freeing included), for CG_DURATION (10) seconds of wrk -t1
# -c4, less the first request's one-time loads).
#
# Writes OUT/runs.tsv (one line per run), OUT/report.md (per route and build
# the minimum, median and maximum microseconds of CPU per request, and the
# ratio of each build's median to the first build's) and prints the report.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
CLUSTER=$ROOT/scripts/cluster.sh
TIER=cpu
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
die() { log "error: $*"; exit 1; }

[ $# -ge 1 ] || { echo "usage: bench/cpu_per_request.sh BUILD [BUILD...]  (BUILD: a commit, or . for this tree)" >&2; exit 2; }
REPS=${REPS:-5} DURATION=${DURATION:-4} CONNS=${CONNS:-64} WORKERS=${WORKERS:-2}
ROUTES=${ROUTES:-/json /plaintext /db /fortunes}
PROFILE=${PROFILE:-0}
CALLGRIND=${CALLGRIND:-0} CG_DURATION=${CG_DURATION:-10} CG_TOGGLE=${CG_TOGGLE:-on_req}
OUT=${OUT:-$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)-cpu}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
for tool in wrk python3 curl; do
	command -v "$tool" >/dev/null || die "$tool is not installed (scripts/deps.sh)"
done
[ "$PROFILE" = 1 ] && { command -v perf >/dev/null || die "PROFILE=1 needs perf (linux-perf)"; }
[ "$CALLGRIND" = 1 ] && { command -v callgrind_annotate >/dev/null || die "CALLGRIND=1 needs valgrind"; }

WORK=$(mktemp -d /tmp/webgres-cpu.XXXXXX)
chmod a+rx "$WORK"
NBUILDS=$#
declare -a NAME PGDIR PORT TREE
cleanup() {
	local i
	for ((i = 0; i < NBUILDS; i++)); do
		[ -n "${PGDIR[$i]:-}" ] && WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" stop "${PGDIR[$i]}" immediate >/dev/null 2>&1 || true
		[ -n "${TREE[$i]:-}" ] && [ "${TREE[$i]}" != "$ROOT" ] &&
			git -C "$ROOT" worktree remove --force "${TREE[$i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
declare -a BIN
trap cleanup EXIT

PGC=${PG_CONFIG:-pg_config}
PGSS=
[ -f "$("$PGC" --pkglibdir)/pg_stat_statements.so" ] && PGSS=,pg_stat_statements

# The postgresql.conf lines of a build's cluster: TechEmpower's settings as
# bench/run.sh sets them, no shared transactions.
settings() {
	cat "$ROOT/scripts/tfb-postgres.conf"
	cat <<EOF
shared_preload_libraries = 'webgres$PGSS'
webgres.listen = '127.0.0.1:$1'
webgres.workers = $WORKERS
max_worker_processes = $(( WORKERS + 8 ))
webgres.database = 'hello_world'
webgres.share_read_transactions = off
EOF
}

# --- the builds --------------------------------------------------------------
i=0
for b in "$@"; do
	if [ "$b" = . ]; then
		NAME[$i]="this tree ($(git -C "$ROOT" describe --always --dirty))"
		TREE[$i]=$ROOT
	else
		sha=$(git -C "$ROOT" rev-parse --verify "$b^{commit}") || die "no commit $b"
		NAME[$i]=${sha:0:7}
		TREE[$i]=$WORK/tree$i
		commit_tree "$ROOT" "$sha" "${TREE[$i]}"
	fi
	BIN[$i]=$(pg_install_copy "$WORK/pg$i")
	log "building ${NAME[$i]} into $WORK/pg$i"
	build_into_copy "${TREE[$i]}" "$WORK/pg$i" "$WORK/build$i.log" || die "could not build ${NAME[$i]}"
	PGDIR[$i]=$WORK/cluster$i
	PORT[$i]=$(free_port)
	pgport=$(free_port)
	settings "${PORT[$i]}" | WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" init "${PGDIR[$i]}" "$pgport"
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" start "${PGDIR[$i]}"
	PGHOST=${PGDIR[$i]}/socket PGPORT=$pgport WEBGRES_BINDIR=${BIN[$i]} \
		"${TREE[$i]}/scripts/tfb-db.sh" > "$OUT/tfb-db-$i.log" 2>&1 ||
		{ cat "$OUT/tfb-db-$i.log" >&2; die "tfb-db.sh failed for ${NAME[$i]}"; }
	i=$((i + 1))
done

# wait_200 URL SECONDS: polls URL until it answers 200, for at most SECONDS
wait_200() {
	local deadline=$(( $(date +%s) + $2 ))
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true)" = 200 ]; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# postmaster_of N: build N's postmaster PID
postmaster_of() { head -n 1 "${PGDIR[$1]}/postmaster.pid"; }

# workers_of N: build N's webgres worker PIDs (children of its postmaster
# whose title names them), space-separated
workers_of() {
	local c out=""
	for c in $(pgrep -P "$(postmaster_of "$1")"); do
		tr '\0' ' ' < "/proc/$c/cmdline" 2>/dev/null | grep -q 'webgres worker' && out="$out $c"
	done
	echo "$out"
}

# cpu_of PIDS...: "TICKS NANOSECONDS", utime+stime (clock ticks) and run time
# (/proc/PID/schedstat) summed over PIDS; a process gone counts 0
cpu_of() {
	local t=0 ns=0 p a b
	for p in "$@"; do
		a=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null || echo 0)
		b=$(awk '{ print $1 }' "/proc/$p/schedstat" 2>/dev/null || echo 0)
		t=$((t + a)); ns=$((ns + b))
	done
	echo "$t $ns"
}

accept_for() {
	case $1 in
	/json | /db*) echo 'application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7' ;;
	/fortunes) echo 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' ;;
	*) echo 'text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7' ;;
	esac
}

# wrk_run N ROUTE SECONDS OUTFILE: TechEmpower's wrk load on build N's ROUTE
wrk_run() {
	wrk -t 2 -c "$CONNS" -d "${3}s" --timeout 8 \
		-H 'Host: tfb-server' -H "Accept: $(accept_for "$2")" -H 'Connection: keep-alive' \
		-s "$BENCH/wrk/report.lua" "http://127.0.0.1:${PORT[$1]}$2" > "$4" 2>&1
}

for ((i = 0; i < NBUILDS; i++)); do
	for r in $ROUTES; do
		wait_200 "http://127.0.0.1:${PORT[$i]}$r" 60 || die "${NAME[$i]} does not answer 200 on $r"
	done
done
CLK_TCK=$(getconf CLK_TCK)
printf 'build\troute\trep\trequests\terrors\tworker_us_ticks\tworker_us\tcluster_us\n' > "$OUT/runs.tsv"
for ((i = 0; i < NBUILDS; i++)); do
	printf '%s\t%s\n' "$i" "${NAME[$i]}" >> "$OUT/builds.tsv"
done

# --- the measurements ---------------------------------------------------------
log "$NBUILDS builds, routes $ROUTES, $REPS repetitions of ${DURATION}s at $CONNS connections"
for ((rep = 1; rep <= REPS; rep++)); do
	for r in $ROUTES; do
		for ((k = 0; k < NBUILDS; k++)); do
			i=$(( (k + rep - 1) % NBUILDS ))
			workers=$(workers_of "$i")
			[ -n "$workers" ] || die "${NAME[$i]} has no webgres workers"
			# A one-second primer, unmeasured: plans prepared, caches warm.
			wrk_run "$i" "$r" 1 "$WORK/primer.out" || true
			everyone="$(postmaster_of "$i") $(pgrep -P "$(postmaster_of "$i")" | tr '\n' ' ')"
			read -r w0 wn0 <<< "$(cpu_of $workers)"
			read -r _ cn0 <<< "$(cpu_of $everyone)"
			out=$OUT/wrk-$i-${r//\//}-$rep.out
			wrk_run "$i" "$r" "$DURATION" "$out" || true
			read -r w1 wn1 <<< "$(cpu_of $workers)"
			read -r _ cn1 <<< "$(cpu_of $everyone)"
			line=$(grep '^WRKJSON ' "$out" | sed 's/^WRKJSON //') || die "wrk gave no result on $r: $(tail -n 3 "$out")"
			python3 - "$line" "$i" "$r" "$rep" "$w0" "$w1" "$wn0" "$wn1" "$cn0" "$cn1" "$CLK_TCK" >> "$OUT/runs.tsv" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
i, route, rep = sys.argv[2:5]
w0, w1, wn0, wn1, cn0, cn1, hz = map(int, sys.argv[5:12])
n = j["requests"]
errors = sum(j["errors"].values())
per = lambda d: d / n if n else float("nan")
print(f"{i}\t{route}\t{rep}\t{n}\t{errors}\t{per((w1 - w0) * 1e6 / hz):.3f}"
      f"\t{per((wn1 - wn0) / 1e3):.3f}\t{per((cn1 - cn0) / 1e3):.3f}")
PY
			log "rep $rep $r ${NAME[$i]}: $(tail -n 1 "$OUT/runs.tsv" | cut -f4-)"
		done
	done
done

# --- the report ---------------------------------------------------------------
python3 - "$OUT" "$REPS" "$DURATION" "$CONNS" "$WORKERS" "$*" > "$OUT/report.md" <<'PY'
import csv, statistics, sys
out, reps, secs, conns, workers, args = sys.argv[1:]
names = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{out}/builds.tsv"))
rows = list(csv.DictReader(open(f"{out}/runs.tsv"), delimiter="\t"))
routes = list(dict.fromkeys(r["route"] for r in rows))
print(f"# CPU time per request\n")
print(f"`bench/cpu_per_request.sh {args}`: {reps} repetitions of {secs} s per route and build,")
print(f"wrk -t2 -c{conns}, {workers} webgres workers; builds alternated, order rotated each repetition.")
print("Microseconds of CPU (utime+stime as schedstat counts it) per request completed.\n")
for label, col in (("the webgres workers", "worker_us"), ("every process of the cluster", "cluster_us")):
    print(f"## {label}\n")
    print("| route | build | runs | min | median | max | median ÷ first build's |")
    print("|---|---|---|---|---|---|---|")
    for route in routes:
        base = None
        for b in names:
            good = [float(r[col]) for r in rows if r["route"] == route and r["build"] == b and r["errors"] == "0"]
            bad = sum(1 for r in rows if r["route"] == route and r["build"] == b and r["errors"] != "0")
            if not good:
                print(f"| {route} | {names[b]} | 0 ({bad} with errors) | | | | |")
                continue
            med = statistics.median(good)
            base = med if base is None else base
            note = f" ({bad} left out: errors)" if bad else ""
            print(f"| {route} | {names[b]} | {len(good)}{note} | {min(good):.2f} | {med:.2f} | {max(good):.2f} | {med / base:.3f}× |")
    print()
PY

if [ "$PROFILE" = 1 ]; then
	for r in $ROUTES; do
		for ((i = 0; i < NBUILDS; i++)); do
			w=$(workers_of "$i" | awk '{ print $1 }')
			data=$OUT/perf-$i-${r//\//}.data
			wrk_run "$i" "$r" $(( DURATION + 2 )) "$WORK/profile.out" &
			wpid=$!
			sleep 1
			# DWARF call graphs: libh2o has no frame pointers
			perf record -q --call-graph dwarf,16384 -F 1999 -p "$w" -o "$data" -- sleep "$DURATION" > /dev/null 2>&1 || true
			wait "$wpid" || true
			printf '\n## perf, %s, %s (worker %s)\n\n%s\n' "$r" "${NAME[$i]}" "$w" \
				"$(python3 "$BENCH/profile_account.py" "$data" 2>&1)" >> "$OUT/report.md"
		done
	done
fi
# instructions N ROUTE: "REQUESTS IR_PER_REQUEST" of build N on ROUTE under
# callgrind (CALLGRIND=1); the cluster is restarted under valgrind and back
instructions() {
	local i=$1 r=$2 dir=$OUT/callgrind-$1-${2//\//} data port w n tot one f fn v
	mkdir -p "$dir"; [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
	data=${PGDIR[$i]}
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" stop "$data" >/dev/null
	"$CLUSTER" as-owner valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$CG_TOGGLE" \
		--callgrind-out-file="$dir/cg.%p" "${BIN[$i]}/postgres" -D "$data" \
		-c webgres.workers=1 -c webgres.executors=0 > "$dir/valgrind.log" 2>&1 &
	wait_200 "http://127.0.0.1:${PORT[$i]}$r" 300 || die "${NAME[$i]} under valgrind does not answer $r"
	port=$(sed -n 's/^port = \([0-9]*\)$/\1/p' "$data/postgresql.conf" | tail -n 1)
	w=$("$CLUSTER" psql "$data" -d postgres -A -t -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'")
	wrk -t1 -c4 -d"${CG_DURATION}s" -H "Accept: $(accept_for "$r")" -s "$BENCH/wrk/report.lua" \
		"http://127.0.0.1:${PORT[$i]}$r" > "$dir/wrk.out" 2>&1 || true
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" stop "$data" >/dev/null
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" start "$data"
	# wrk's requests and the one that answered 200 above
	n=$(( $(grep '^WRKJSON ' "$dir/wrk.out" | sed 's/^WRKJSON //' |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])') + 1 ))
	f=$dir/cg.$w
	tot=$(awk '/^totals:/ { print $2 }' "$f")
	callgrind_annotate --inclusive=yes --threshold=100 "$f" > "$f.inclusive" 2>/dev/null
	one=0
	# the first request's one-time work: loading the routes, preparing the handler
	for fn in routes_current prepare_route; do
		v=$(grep ":$fn[[:space:]]*\[" "$f.inclusive" | head -n 1 | awk '{ gsub(",", "", $1); print $1 }')
		one=$(( one + ${v:-0} ))
	done
	echo "$n $(( (tot - one) / n ))"
}

if [ "$CALLGRIND" = 1 ]; then
	{
		printf '\n## User-space instructions per request inside %s (callgrind)\n\n' "$CG_TOGGLE"
		printf '| route | build | requests | instructions | ÷ first build |\n|---|---|---|---|---|\n'
	} >> "$OUT/report.md"
	for r in $ROUTES; do
		first=""
		for ((i = 0; i < NBUILDS; i++)); do
			read -r n ir <<< "$(instructions "$i" "$r")"
			first=${first:-$ir}
			log "callgrind $r ${NAME[$i]}: $n requests, $ir instructions each"
			printf '| %s | %s | %s | %s | %s× |\n' "$r" "${NAME[$i]}" "$n" "$ir" \
				"$(python3 -c "print(f'{$ir / $first:.3f}')")" >> "$OUT/report.md"
		done
	done
fi
cat "$OUT/report.md"
log "done: $OUT/report.md"
