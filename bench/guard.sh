#!/usr/bin/env bash
# The performance guard: measures this tree's build against an older one in
# every TechEmpower case, by throughput and by the instructions the worker
# spends per request, prints each case that lost more than 5 %, and exits
# non-zero if any did.
#
#   bench/guard.sh BASE            BASE: a commit (e.g. main before a change)
#   bench/guard.sh HEAD            on a clean tree: an A/A run, the same code
#                                  built twice, which shows the machine's spread
#
# The throughput leg runs bench/before_after.sh (the older build in a copy
# of the Postgres installation, served by a cluster of its own) with the
# references left out (BENCH_REFERENCES=0, AXUM=0) and only the TechEmpower
# endpoints, so the two builds' repetitions alternate back to back, each in
# turn first.  `bench/report.py guard` judges each case on the paired
# repetitions: with d_i = ln(this_i / older_i), a case lost when
# exp(median d) < 1 - LOSS and a sign test over the pairs agrees (its exact
# one-sided upper bound of the median is below 1.00x), the 5 % chance of a
# false alarm shared among the cases.  It states its power: the smallest
# loss flagged in 80 % of runs at the spread of d it saw, and, for a case
# too coarse to see LOSS, the REPS that would.  On a busy machine that is
# often well above LOSS.
#
# The instruction leg (unless GUARD_INSTRUCTIONS=0) then runs
# bench/cpu_per_request.sh with CALLGRIND=1 REPS=0 on BASE and this tree
# (".", uncommitted changes included, as before_after.sh builds it): each
# build's cluster restarted under callgrind with one worker, CG_COUNTS (2)
# counts of each build on each route of CG_ROUTES (the TechEmpower routes;
# pipelined plaintext runs the same code per request as /plaintext), the
# builds alternating, into OUT/instructions/.  Counts of the same code
# repeat within a fraction of a percent, so report.py flags a route whose
# instructions per request rose by more than 1 / (1 - LOSS), less the
# largest spread s between two counts of one build: every rise of LOSS is
# flagged, and only a real rise of at least LOSS - 2s can false-alarm.  A
# route with s > LOSS / 2, or counted once (CG_COUNTS=1), is too coarse.
# A count takes about 19 s (10 s, CG_DURATION, of load, or as many
# requests), the 9 routes, 2 builds and 2 counts some 11½ minutes, and
# building the two copies a minute.
#
# Settings (environment): REPS (10), DURATION (5 s), CONNS (256), QCONNS
# (512), LOSS (0.05), ONLY (the TechEmpower endpoints), and those of
# bench/run.sh; GUARD_INSTRUCTIONS (1; 0 leaves the instruction leg out),
# CG_COUNTS (2), CG_ROUTES (the routes counted), and CG_DURATION (10 s of
# load per count) and CG_TOGGLE of bench/cpu_per_request.sh.
# Exit status: 1 some case lost more than LOSS in either leg; 0 none lost
# and the instruction leg saw every route (s <= LOSS / 2) or, without it,
# the throughput leg saw every case; 2 none lost but the throughput leg was
# too coarse to see LOSS (raise REPS) and the instruction leg too, or it did
# not run; anything else, the measurement itself failed (the report is
# still printed when the instruction leg fails and the throughput leg ran).
#
# Writes bench/results/<UTC timestamp>-guard/ (a bench/run.sh result
# directory, plus instructions/, bench/cpu_per_request.sh's, and guard.md,
# the tables printed at the end).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
BASE=${1:?usage: bench/guard.sh BASE-COMMIT}
LOSS=${LOSS:-0.05}

export ONLY=${ONLY:-plaintext|plaintext-pipelined|json|db|fortunes|queries|updates|cached-queries}
# 10 pairs of 5 s: enough for a 6 % loss where the repetitions spread by 3 %
# or less (bench/README.md, "The guard"); the guard says when not
export REPS=${REPS:-10} DURATION=${DURATION:-5} CONNS=${CONNS:-256} QCONNS=${QCONNS:-512}
export BENCH_REFERENCES=0 AXUM=0 AUTH=0
OUT=$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)-guard
export BENCH_OUT=$OUT BENCH_VIA="bench/guard.sh $BASE"

GUARD_INSTRUCTIONS=${GUARD_INSTRUCTIONS:-1}
# the paths and query strings of bench/run.sh's TechEmpower cases; queries=5
# and count=1 and 20 lie between those counted
CG_ROUTES=${CG_ROUTES:-/plaintext /json /db /fortunes /queries?queries=1 /queries?queries=20 /updates?queries=1 /updates?queries=20 /cached-queries?count=100}

"$BENCH/before_after.sh" "$BASE"
ileg=0
if [ "$GUARD_INSTRUCTIONS" != 0 ]; then
	# this tree as before_after.sh built it: the working tree, not HEAD
	CALLGRIND=1 REPS=0 CG_COUNTS=${CG_COUNTS:-2} WORKERS=1 \
		ROUTES="$CG_ROUTES" OUT="$OUT/instructions" "$BENCH/cpu_per_request.sh" "$BASE" . || ileg=$?
	[ "$ileg" = 0 ] || printf '[guard %s] error: the instruction leg failed (exit %s)\n' "$(date -u +%H:%M:%S)" "$ileg" >&2
fi
status=0
python3 "$BENCH/report.py" guard "$OUT" "$LOSS" || status=$?
# a loss found stands; otherwise a failed leg is a failed measurement
[ "$status" = 1 ] || [ "$ileg" = 0 ] || exit 3
exit "$status"
