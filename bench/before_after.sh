#!/usr/bin/env bash
# Measures an older build and this tree's with the same harness, one after
# the other, and writes a report comparing their same-run ratios.
#
#   bench/before_after.sh BASE        BASE: a commit (e.g. the one before a change)
#
# Both builds run bench/run.sh of this tree, with its references (bare h2o,
# pgbench, node-pg) measured in each run, so each build's ratios against the
# references come from its own run and the two sets can be compared even if
# the machine drifted between them. The older build sets up the TechEmpower
# database with its own scripts/tfb-db.sh (its routes and catalog), the newer
# with this tree's.
#
# Settings (environment): those of bench/run.sh. The default measures the
# TechEmpower tiers and the mixed tier: ONLY (default the TechEmpower
# endpoints and mixed), CONNS (64 512), QCONNS (512), REPS (3), DURATION (5),
# MIXED_DURATION (10). AFTER_ALL=1 also runs, on this tree's build only, the
# tiers an older build may not have (stream, sse, the route table and the
# connection capacity), so that its report holds every tier.
#
# Writes bench/results/<UTC timestamp>-before-after/{before,after}/ (each a
# bench/run.sh result directory) and report.md, the comparison
# (bench/compare.py). Leaves this tree's build installed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
BASE=${1:?usage: bench/before_after.sh BASE-COMMIT}

log() { printf '[before-after %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

base_sha=$(git -C "$ROOT" rev-parse --verify "$BASE^{commit}")
head_sha=$(git -C "$ROOT" describe --always --dirty)
export ONLY=${ONLY:-plaintext|plaintext-pipelined|json|db|fortunes|queries|updates|cached-queries|mixed}
export CONNS=${CONNS:-64 512} QCONNS=${QCONNS:-512} REPS=${REPS:-3} DURATION=${DURATION:-5}
export MIXED_DURATION=${MIXED_DURATION:-10}
AFTER_ALL=${AFTER_ALL:-0}
export QUICK=0 SOAK=0 RSS_STEPS=${RSS_STEPS:-0} CAPACITY=0 SSE=0

OUT=$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)-before-after
mkdir -p "$OUT"
T0=$(date +%s)

# The older build, from a worktree of its own.
SRC=$(mktemp -d /tmp/webgres-base.XXXXXX)
cleanup() {
	git -C "$ROOT" worktree remove --force "$SRC/tree" >/dev/null 2>&1 || rm -rf "$SRC"
	rm -rf "$SRC"
}
trap cleanup EXIT
git -C "$ROOT" worktree add --detach "$SRC/tree" "$base_sha" >/dev/null 2>&1
# Postgres runs as an unprivileged user and reads the TFB SQL files from here.
chmod -R a+rX "$SRC"

log "building and installing the older build ${base_sha:0:7}"
make -C "$SRC/tree" -s all install > "$OUT/build-before.log" 2>&1 \
	|| { tail -n 20 "$OUT/build-before.log" >&2; exit 1; }
log "measuring the older build"
BENCH_OUT=$OUT/before BENCH_BUILD=${base_sha:0:7} BENCH_TFB_DB=$SRC/tree/scripts/tfb-db.sh \
	"$BENCH/run.sh"

log "building and installing this tree ($head_sha)"
make -C "$ROOT" -s all install > "$OUT/build-after.log" 2>&1 \
	|| { tail -n 20 "$OUT/build-after.log" >&2; exit 1; }
log "measuring this tree"
if [ "$AFTER_ALL" = 1 ]; then
	ONLY="$ONLY|stream|sse|routes|plaintext-conns|plaintext-pipelined-conns|db-conns" CAPACITY=1 SSE=1 \
		BENCH_OUT=$OUT/after "$BENCH/run.sh"
else
	BENCH_OUT=$OUT/after "$BENCH/run.sh"
fi

python3 "$BENCH/compare.py" "$OUT/before" "$OUT/after" \
	"AFTER_ALL=$AFTER_ALL ONLY='$ONLY' CONNS='$CONNS' QCONNS='$QCONNS' REPS=$REPS DURATION=$DURATION MIXED_DURATION=$MIXED_DURATION bench/before_after.sh $BASE" \
	$(( $(date +%s) - T0 )) > "$OUT/report.md"
log "done: $OUT/report.md"
