#!/usr/bin/env bash
# The performance guard: measures this tree's build against an older one in
# every TechEmpower case, with enough alternating repetitions to see a 5 %
# loss, prints each case that lost more, and exits non-zero if any did.
#
#   bench/guard.sh BASE            BASE: a commit (e.g. main before a change)
#   bench/guard.sh HEAD            on a clean tree: an A/A run, the same code
#                                  built twice, which shows the machine's spread
#
# It runs bench/before_after.sh (the older build in a copy of the Postgres
# installation, served by a cluster of its own) with the references left out
# (BENCH_REFERENCES=0, AXUM=0) and only the TechEmpower endpoints, so the two
# builds' repetitions alternate back to back, each in turn first.  Then
# `bench/report.py guard` judges each case on the paired repetitions: with
# d_i = ln(this_i / older_i), a case lost when exp(median d) < 1 - LOSS and a
# sign test over the pairs agrees (its exact one-sided upper bound of the
# median is below 1.00x), the 5 % chance of a false alarm shared among the
# cases.  It states its power: the smallest loss flagged in 80 % of runs at
# the spread of d it saw, and, for a case too coarse to see LOSS, the REPS
# that would.
#
# Settings (environment): REPS (10), DURATION (5 s), CONNS (256), QCONNS
# (512), LOSS (0.05), ONLY (the TechEmpower endpoints), and those of
# bench/run.sh.  Exit status: 0 no case lost; 1 some case lost more than LOSS;
# 2 none lost but some case was measured too coarsely to see LOSS (raise
# REPS); anything else, the measurement itself failed.
#
# Writes bench/results/<UTC timestamp>-guard/ (a bench/run.sh result
# directory, plus guard.md, the table printed at the end).
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

"$BENCH/before_after.sh" "$BASE"
python3 "$BENCH/report.py" guard "$OUT" "$LOSS"
