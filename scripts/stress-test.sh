#!/usr/bin/env bash
# Runs the whole suite (make test) RUNS times in a row (default 10) while
# stress-ng keeps every CPU busy, as a shared CI machine can be: the tests
# must wait on events, not on time, and this is where a race shows.  Stops
# at the first failure and keeps that run's output.  Each run's result and
# duration go to stdout and to $OUT (default stress-test.log).
#
#   scripts/stress-test.sh                    every version, ten runs
#   PG=15 RUNS=3 scripts/stress-test.sh       15 only (make test-stress PG=15)
#
# The environment reaches make test: PG picks one version, and
# WEBGRES_TAP_JOBS how many TAP files run at once (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
OUT=${OUT:-stress-test.log}
# The load: one CPU-bound worker per core, at the tests' own priority.
LOAD_WORKERS=${LOAD_WORKERS:-$(nproc)}

WEBGRES_DEPS_EXTRA="${WEBGRES_DEPS_EXTRA:-} stress-ng" scripts/deps.sh

stress-ng --cpu "$LOAD_WORKERS" --quiet &
load_pid=$!
trap 'kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true' EXIT

say() { echo "$*" | tee -a "$OUT"; }
say "stress-test $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2>/dev/null || echo '?'):" \
	"$RUNS runs of make test${PG:+ PG=$PG} (TAP files ${WEBGRES_TAP_JOBS:-3} at a time)" \
	"beside stress-ng --cpu $LOAD_WORKERS on $(nproc) CPUs"
for i in $(seq 1 "$RUNS"); do
	start=$(date +%s)
	if make test > "run-$i.log" 2>&1; then
		say "run $i: passed in $(( $(date +%s) - start )) s ($(grep -Eo '[0-9]+ passed, [0-9]+ failed' "run-$i.log" | tail -1))"
		rm -f "run-$i.log"
	else
		say "run $i: FAILED after $(( $(date +%s) - start )) s; its output: run-$i.log"
		grep -E '^(not ok|FAIL|# Failed)' "run-$i.log" | head -20 | tee -a "$OUT" || true
		exit 1
	fi
done
say "all $RUNS runs passed"
