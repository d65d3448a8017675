#!/usr/bin/env bash
# Measures an older build and this tree's in one run of the harness, side by
# side, and reports how this build compares with the older one.
#
#   bench/before_after.sh BASE        BASE: a commit (e.g. the one before a change)
#
# Two builds of one extension cannot be loaded by one Postgres installation,
# so the older build goes into a copy of it: the Postgres programs find their
# libraries and extension files relative to their own directory, and the copy
# mirrors the installation's layout under a directory of its own. bench/run.sh
# then serves the older build from a second cluster (BASE_BINDIR) and measures
# it as one more server, webgres-base, with its repetitions interleaved with
# this build's and the references' in the TechEmpower tiers; the mixed tier
# runs once for each build. A drift of the machine during the run hits both
# builds alike, which two runs one after the other cannot promise.
#
# Settings (environment): those of bench/run.sh. The default measures the
# TechEmpower tiers and the mixed tier: ONLY (default the TechEmpower
# endpoints and mixed), CONNS (64 512), QCONNS (512), REPS (3), DURATION (5),
# MIXED_DURATION (10). AFTER_ALL=1 also runs, on this tree's build only, the
# tiers an older build may not have (stream, sse, the route table and the
# connection capacity), so that the report holds every tier.
#
# Writes bench/results/<UTC timestamp>-before-after/ (a bench/run.sh result
# directory whose report.md has the section "Against the older build").
# Leaves this tree's build installed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
BASE=${1:?usage: bench/before_after.sh BASE-COMMIT}

# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
log() { printf '[before-after %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

base_sha=$(git -C "$ROOT" rev-parse --verify "$BASE^{commit}")
export ONLY=${ONLY:-plaintext|plaintext-pipelined|json|db|fortunes|queries|updates|cached-queries|mixed}
export CONNS=${CONNS:-64 512} QCONNS=${QCONNS:-512} REPS=${REPS:-3} DURATION=${DURATION:-5}
export MIXED_DURATION=${MIXED_DURATION:-10}
AFTER_ALL=${AFTER_ALL:-0}
export QUICK=0 SOAK=0 RSS_STEPS=${RSS_STEPS:-0} CAPACITY=0 SSE=0

SRC=$(mktemp -d /tmp/webgres-base.XXXXXX)
cleanup() {
	git -C "$ROOT" worktree remove --force "$SRC/tree" >/dev/null 2>&1 || true
	rm -rf "$SRC"
}
trap cleanup EXIT
# Postgres runs as an unprivileged user and reads the TFB SQL files from here.
chmod a+rx "$SRC"
commit_tree "$ROOT" "$base_sha" "$SRC/tree"

# The copy of the Postgres installation, without this tree's webgres
# (bench/lib.sh: pg_install_copy, build_into_copy).
bindir=$(pg_install_copy "$SRC/pg")
log "building the older build ${base_sha:0:7} into a copy of Postgres in $SRC/pg"
build_into_copy "$SRC/tree" "$SRC/pg" "$SRC/build-before.log"

log "building and installing this tree ($(git -C "$ROOT" describe --always --dirty))"
env -u PROFILE make -C "$ROOT" -s all install > "$SRC/build-after.log" 2>&1 \
	|| { tail -n 20 "$SRC/build-after.log" >&2; exit 1; }

# BENCH_OUT names another result directory (bench/guard.sh sets it)
OUT=${BENCH_OUT:-$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)-before-after}
export BENCH_VIA="${BENCH_VIA:-bench/before_after.sh $BASE}" BENCH_OUT=$OUT BASE_BINDIR=$bindir BASE_BUILD=${base_sha:0:7}
export BASE_TFB_DB=$SRC/tree/scripts/tfb-db.sh
log "measuring both builds"
if [ "$AFTER_ALL" = 1 ]; then
	ONLY="$ONLY|stream|sse|routes|plaintext-conns|plaintext-pipelined-conns|db-conns" CAPACITY=1 SSE=1 \
		"$BENCH/run.sh"
else
	"$BENCH/run.sh"
fi
log "done: $OUT/report.md"
