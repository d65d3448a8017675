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
# -c4, less the first request's one-time loads, divided by the calls of
# on_req callgrind saw, the tables rewritten by VACUUM FULL before each
# count so that every count starts from the same, and every count after
# a route's first stopping after as many responses, bench/wrk/cap.lua, so
# that every count makes the same requests), CG_COUNTS (1) times for
# each build and route: count after count, each over every route, the
# builds' order rotated each count as the repetitions' is, so that the
# counts of one build show how far its repeats spread.
#
# REPS=0 skips the throughput measurements: with CALLGRIND=1, a run that
# only counts instructions (bench/guard.sh runs it so); report.md then says
# that no repetitions were run instead of showing empty tables.
#
# Writes OUT/runs.tsv (one line per run), OUT/report.md (per route and build
# the minimum, median and maximum microseconds of CPU per request, and the
# ratio of each build's median to the first build's) and prints the report.
# With CALLGRIND=1 also OUT/instructions.tsv: a header line, then one line
# per count: build (its index in OUT/builds.tsv, in the order given), route,
# count (1..CG_COUNTS), requests, instructions per request, errors (wrk's
# socket errors and error statuses; such a count is marked, and left out
# of the medians).
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
CG_COUNTS=${CG_COUNTS:-1}
# the routes as a list, read without pathname expansion ("?" is a pattern)
read -r -a ROUTE_LIST <<< "$ROUTES"
[[ $REPS =~ ^[0-9]+$ ]] || die "REPS must be a count (0: no throughput measurements)"
[[ $CG_COUNTS =~ ^[1-9][0-9]*$ ]] || die "CG_COUNTS must be 1 or more"
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
	/json | /db* | /queries* | /updates* | /cached-queries*) echo 'application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7' ;;
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
	for r in "${ROUTE_LIST[@]}"; do
		wait_200 "http://127.0.0.1:${PORT[$i]}$r" 60 || die "${NAME[$i]} does not answer 200 on $r"
	done
done
CLK_TCK=$(getconf CLK_TCK)
printf 'build\troute\trep\trequests\terrors\tworker_us_ticks\tworker_us\tcluster_us\n' > "$OUT/runs.tsv"
for ((i = 0; i < NBUILDS; i++)); do
	printf '%s\t%s\n' "$i" "${NAME[$i]}" >> "$OUT/builds.tsv"
done

# --- the measurements ---------------------------------------------------------
if [ "$REPS" -gt 0 ]; then
	log "$NBUILDS builds, routes $ROUTES, $REPS repetitions of ${DURATION}s at $CONNS connections"
else
	log "$NBUILDS builds, routes $ROUTES, no throughput repetitions (REPS=0)"
fi
for ((rep = 1; rep <= REPS; rep++)); do
	for r in "${ROUTE_LIST[@]}"; do
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
if reps == "0":
    print(f"`bench/cpu_per_request.sh {args}`: no throughput repetitions were run (REPS=0).")
    sys.exit(0)
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
	for r in "${ROUTE_LIST[@]}"; do
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
# instructions N ROUTE COUNT CAP: "REQUESTS IR_PER_REQUEST ERRORS WRK" of
# build N on ROUTE under callgrind (CALLGRIND=1), its COUNT-th count, wrk
# stopping after CAP responses (0: after CG_DURATION); WRK, the responses
# wrk saw. The cluster is restarted under valgrind and back
instructions() {
	local i=$1 r=$2 dir data port w n e wreq tot one f fn v json
	dir=$OUT/callgrind-$1-$(printf '%s' "${2#/}" | tr -c 'A-Za-z0-9' '_')-$3
	mkdir -p "$dir"; [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
	data=${PGDIR[$i]}
	# Every count starts from the same tables: /updates leaves dead rows and
	# bloated indexes behind it, which the next count of /updates or /db
	# would otherwise walk (2 to 3 % more instructions a count there).
	"$CLUSTER" psql "$data" -d hello_world > /dev/null <<'SQL'
SELECT format('VACUUM (FULL, ANALYZE) %s', c.oid::regclass) FROM pg_class c
WHERE c.relkind = 'r' AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
\gexec
SQL
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" stop "$data" >/dev/null
	"$CLUSTER" as-owner valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$CG_TOGGLE" \
		--callgrind-out-file="$dir/cg.%p" "${BIN[$i]}/postgres" -D "$data" \
		-c webgres.workers=1 -c webgres.executors=0 > "$dir/valgrind.log" 2>&1 &
	wait_200 "http://127.0.0.1:${PORT[$i]}$r" 300 || die "${NAME[$i]} under valgrind does not answer $r"
	port=$(sed -n 's/^port = \([0-9]*\)$/\1/p' "$data/postgresql.conf" | tail -n 1)
	w=$("$CLUSTER" psql "$data" -d postgres -A -t -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'")
	if [ "$4" -gt 0 ]; then
		# as many requests as the route's first count made (cap.lua), with
		# time to spare on a slower machine
		WRK_REQUESTS=$4 wrk -t1 -c4 -d"$(( 3 * CG_DURATION ))s" -H "Accept: $(accept_for "$r")" \
			-s "$BENCH/wrk/cap.lua" "http://127.0.0.1:${PORT[$i]}$r" > "$dir/wrk.out" 2>&1 || true
	else
		wrk -t1 -c4 -d"${CG_DURATION}s" -H "Accept: $(accept_for "$r")" -s "$BENCH/wrk/report.lua" \
			"http://127.0.0.1:${PORT[$i]}$r" > "$dir/wrk.out" 2>&1 || true
	fi
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" stop "$data" >/dev/null
	WEBGRES_BINDIR=${BIN[$i]} "$CLUSTER" start "$data"
	json=$(grep '^WRKJSON ' "$dir/wrk.out" | sed 's/^WRKJSON //') || die "wrk gave no result under callgrind on $r: $(tail -n 3 "$dir/wrk.out")"
	# wrk's requests and the one that answered 200 above; its socket errors
	# and error statuses
	read -r n e <<< "$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j["requests"] + 1, sum(j["errors"].values()))' "$json")"
	wreq=$(( n - 1 ))
	f=$dir/cg.$w
	tot=$(awk '/^totals:/ { print $2 }' "$f")
	[ -n "$tot" ] || die "no callgrind totals in $f"
	# The requests the worker handled: the calls of on_req callgrind saw.
	# wrk stops with a request in flight on each connection, which the
	# worker still serves and which wrk does not count (4 of some 300 on
	# /updates?queries=20, a 1.3 % error that shrinks as a build gets faster).
	v=$(grep -m 1 -oE '^c?fn=\([0-9]+\) on_req$' "$f" | grep -oE '\([0-9]+\)' || true)
	if [ -n "$v" ]; then
		v=$(awk -v want="cfn=$v" '$1 == want { getline; sub(/^calls=/, "", $1); s += $1 } END { print s + 0 }' "$f")
		if [ "$v" -gt 0 ]; then n=$v; fi
	fi
	callgrind_annotate --inclusive=yes --threshold=100 "$f" > "$f.inclusive" 2>/dev/null
	one=0
	# the first request's one-time work: loading the routes, preparing the handler,
	for fn in routes_current prepare_route; do
		v=$(grep ":$fn[[:space:]]*\[" "$f.inclusive" | head -n 1 | awk '{ gsub(",", "", $1); print $1 }')
		one=$(( one + ${v:-0} ))
	done
	# and a cache's preload (/cached-queries: the 10,000 rows of World, some
	# 110 million instructions, which 1,000 or 1,500 requests would share
	# unevenly): cache_fill when it ran once, for the preload alone
	if grep -qE "=> .*:cache_fill \(1x\)" "$f.inclusive"; then
		v=$(grep ":cache_fill[[:space:]]*\[" "$f.inclusive" | head -n 1 | awk '{ gsub(",", "", $1); print $1 }')
		one=$(( one + ${v:-0} ))
	fi
	echo "$n $(( (tot - one) / n )) $e $wreq"
}

if [ "$CALLGRIND" = 1 ]; then
	printf 'build\troute\tcount\trequests\tinstructions\terrors\n' > "$OUT/instructions.tsv"
	log "callgrind: $CG_COUNTS count(s) of ${CG_DURATION}s per route and build, inside $CG_TOGGLE"
	# The first count of a route runs CG_DURATION; every later one (either
	# build's) stops after as many responses. On /updates a count's cost per
	# request grows with the updates it has made since the vacuum, so counts
	# of different lengths differed by up to 3 % on /updates?queries=20, and
	# a faster build would have looked costlier.
	declare -A CAP=()
	for ((count = 1; count <= CG_COUNTS; count++)); do
		for r in "${ROUTE_LIST[@]}"; do
			for ((k = 0; k < NBUILDS; k++)); do
				i=$(( (k + count - 1) % NBUILDS ))
				t0=$(date +%s)
				res=$(instructions "$i" "$r" "$count" "${CAP[$r]:-0}")
				read -r n ir e wreq <<< "$res"
				[ -n "${CAP[$r]:-}" ] || CAP[$r]=$wreq
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$r" "$count" "$n" "$ir" "$e" >> "$OUT/instructions.tsv"
				log "callgrind count $count $r ${NAME[$i]}: $n requests, $ir instructions each$([ "$e" = 0 ] || echo ", $e ERRORS") ($(( $(date +%s) - t0 )) s)"
			done
		done
	done
	python3 - "$OUT" "$CG_TOGGLE" "$CG_COUNTS" "$CG_DURATION" >> "$OUT/report.md" <<'PY'
import csv, math, statistics, sys
out, toggle, counts, secs = sys.argv[1:]
names = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{out}/builds.tsv"))
rows = list(csv.DictReader(open(f"{out}/instructions.tsv"), delimiter="\t"))
routes = list(dict.fromkeys(r["route"] for r in rows))
print(f"\n## User-space instructions per request inside {toggle} (callgrind)\n")
print(f"{counts} count(s) per route and build with wrk -t1 -c4, builds alternated, order rotated "
      f"each count; a route's first count runs {secs} s, the others stop after as many responses. "
      "*requests* are those the worker handled; *counts* lists each count's instructions per request in "
      "the order made; *spread* is the largest |ln(a ÷ b)| between two counts of the build; "
      "a count with errors is marked and left out of the median.\n")
print("| route | build | requests | counts | median | spread | ÷ first build's |")
print("|---|---|---|---|---|---|---|")
for route in routes:
    first = None
    for b in names:
        mine = sorted((r for r in rows if r["route"] == route and r["build"] == b), key=lambda r: int(r["count"]))
        if not mine:
            continue
        good = [int(r["instructions"]) for r in mine if r["errors"] == "0"]
        shown = ", ".join(r["instructions"] + ("" if r["errors"] == "0" else f" ({r['errors']} errors)") for r in mine)
        reqs = ", ".join(r["requests"] for r in mine)
        if not good:
            print(f"| {route} | {names[b]} | {reqs} | {shown} | | | |")
            continue
        med = statistics.median(good)
        first = med if first is None else first
        spread = f"{100 * math.log(max(good) / min(good)):.2f} %" if len(good) > 1 and min(good) > 0 else "–"
        print(f"| {route} | {names[b]} | {reqs} | {shown} | {med:.0f} | {spread} | {med / first:.3f}× |")
PY
fi
cat "$OUT/report.md"
log "done: $OUT/report.md"
