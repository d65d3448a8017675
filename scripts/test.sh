#!/usr/bin/env bash
# Runs every test against the installed extension: pg_regress for the SQL
# surface (test/regress) and TAP for running servers (test/t).
#
# Postgres will not run as root, and the checkout may sit where the
# 'postgres' user cannot read it, so the tests run as that user from a
# scratch copy.  WEBGRES_TAP=t/010_x.pl runs the named TAP files only;
# WEBGRES_KEEP=1 keeps the scratch directory for inspection;
# WEBGRES_FUZZ_SECONDS sets how long each fuzzer runs (10; 0 skips them).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bindir=$(pg_config --bindir)
pgxs=$(cd "$(dirname "$(pg_config --pgxs)")/../.." && pwd)
os_user=${WEBGRES_OS_USER:-postgres}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/webgres-test.XXXXXX")
cleanup() {
	status=${1:-$?}
	if [ $status -ne 0 ] || [ -n "${WEBGRES_KEEP:-}" ]; then
		echo "test output kept in $scratch" >&2
	else
		rm -rf "$scratch"
	fi
	exit $status
}
trap cleanup EXIT

mkdir -p "$scratch/src"
cp -r "$src/test" "$src/sql" "$src/scripts" "$src/Makefile" "$src/README.md" "$scratch/src/"
[ -d "$src/docker" ] && cp -r "$src/docker" "$scratch/src/"
[ -d "$src/examples" ] && cp -r "$src/examples" "$scratch/src/"
[ -d "$src/bench" ] && cp -r "$src/bench" "$scratch/src/" 2>/dev/null || true

# The tests run against a private installation in the scratch directory:
# copies of the server programs (copies, since Postgres finds its lib and
# share directories relative to its own resolved path; see
# make_relative_path in src/port/path.c), symbolic links to the installed
# lib and share trees, and this checkout's extension installed over them.
# Two checkouts can then run their tests at once without one replacing
# the library the other's servers load.  (SANITIZE=address keeps the
# installed tree: its wrapper below relies on the installed paths.)
if [ "${SANITIZE:-}" != address ]; then
	inst=$scratch/install
	pkglibdir=$(pg_config --pkglibdir)
	sharedir=$(pg_config --sharedir)
	mkdir -p "$inst$bindir" "$inst$(dirname "$pkglibdir")" "$inst$(dirname "$sharedir")"
	cp -p "$bindir"/* "$inst$bindir/"
	cp -rs "$pkglibdir" "$inst$(dirname "$pkglibdir")/"
	cp -rs "$sharedir" "$inst$(dirname "$sharedir")/"
	# Only this checkout's extension files: a script another checkout
	# installed system-wide (a newer version) would otherwise show here.
	rm -f "$inst$sharedir/extension/webgres"* "$inst$pkglibdir/webgres.so"
	make -s -C "$src" install DESTDIR="$inst" >/dev/null
	# Only this checkout's scripts: another checkout's make install may have
	# left versions in the shared tree that this one does not have.
	for f in "$inst$sharedir"/extension/webgres--*.sql; do
		[ -e "$src/extension/$(basename "$f")" ] || rm -f "$f"
	done
	bindir=$inst$bindir
	# scripts/cluster.sh (docker/start.sh in TAP) takes the server from here.
	export WEBGRES_BINDIR=$bindir
fi

# SANITIZE=address: the extension was built with ASan and UBSan; Postgres
# was not, so the runtimes are preloaded into the server, and only there:
# a private bindir holds copies of the client programs (copies, since
# initdb and pg_ctl look for postgres next to their resolved path) and a
# 'postgres' script that sets LD_PRELOAD and execs the real binary
# ('postgres -V' is unchanged, and the share and lib directories are the
# installed ones).  Every server process, from initdb's
# bootstrap to the TAP nodes' backends and webgres workers, runs under the
# runtimes; initdb, pg_ctl, psql, perl and curl do not.
# scripts/asan-swift-demangle.c explains the small library preloaded with
# libasan.  Leak checking is off (Postgres frees by memory context, at exit
# or never); reports go to files that must stay empty.
if [ "${SANITIZE:-}" = address ]; then
	asan_dir=$scratch/asan
	# Not named '.../bin': Postgres would take its lib and share directories
	# to be next to it (see make_relative_path in src/port/path.c).
	san_bin=$asan_dir/bindir
	mkdir -p "$asan_dir/reports" "$san_bin"
	gcc -shared -fPIC -O2 -o "$asan_dir/swift-demangle.so" "$src/scripts/asan-swift-demangle.c"
	for f in "$bindir"/*; do
		case "$(basename "$f")" in postgres|postmaster) ;; *) cp -p "$f" "$san_bin/" ;; esac
	done
	real_postgres=$(readlink -f "$bindir/postgres")
	preload="$(gcc -print-file-name=libasan.so) $asan_dir/swift-demangle.so $(gcc -print-file-name=libubsan.so)"
	cat > "$san_bin/postgres" <<-WRAP
	#!/bin/bash
	# The real server with the sanitizer runtimes preloaded (scripts/test.sh).
	# Its argv[0] stays this script, so postmaster.opts names it and
	# pg_ctl restart comes back through here.
	LD_PRELOAD="$preload"
	ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_odr_violation=0:log_path=$asan_dir/reports/asan"
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1"
	export LD_PRELOAD ASAN_OPTIONS UBSAN_OPTIONS
	exec -a "$san_bin/postgres" "$real_postgres" "\$@"
	WRAP
	chmod 755 "$san_bin/postgres" "$asan_dir/swift-demangle.so"
	ln -s postgres "$san_bin/postmaster"
	bindir=$san_bin
	# scripts/cluster.sh (docker/start.sh in TAP) takes the server from here.
	export WEBGRES_BINDIR=$bindir
	# ASan writes its reports to files; UBSan (gcc's, next to ASan) ignores
	# log_path and writes to stderr, which is the server's log: both count.
	sanitize_check() {
		local logs
		logs=$(grep -rlE 'runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer|Sanitizer:DEADLYSIGNAL' \
			"$scratch/regress" "$scratch/src/test/tmp_check" 2>/dev/null || true)
		if ls "$asan_dir/reports/" | grep -q . || [ -n "$logs" ]; then
			echo "== sanitizer reports:" >&2
			for f in "$asan_dir"/reports/*; do [ -e "$f" ] && cat "$f" >&2; done
			for f in $logs; do
				echo "-- in $f:" >&2
				grep -E -A12 'runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer|Sanitizer:DEADLYSIGNAL' "$f" >&2
			done
			return 1
		fi
		echo "== sanitizers: no reports"
	}
	# Checked whatever the outcome: a report explains a failure it caused.
	trap 'status=$?; [ -n "${sanitize_checked:-}" ] || sanitize_check || status=1; cleanup $status' EXIT
fi

if [ "$(id -u)" -eq 0 ]; then
	chown -R "$os_user": "$scratch"
	run() { runuser -u "$os_user" -- env PATH="$bindir:$PATH" \
		${WEBGRES_BINDIR:+WEBGRES_BINDIR="$WEBGRES_BINDIR"} WEBGRES_PYTHON="$WEBGRES_PYTHON" "$@"; }
else
	run() { env PATH="$bindir:$PATH" "$@"; }
fi

# The tests' Python libraries (test/requirements.txt), in an environment
# every user can read; tests run $WEBGRES_PYTHON, never a bare python3.
WEBGRES_PYTHON=$("$src/scripts/pydeps.sh" | tail -1)
export WEBGRES_PYTHON

# ---- the layering check: every include goes down the floors (docs/internals-modules.md) ----
echo "== layers"
"$src/scripts/check-layers.sh"

# ---- docs/testing.md lists every TAP file, once, in order ----
echo "== TAP table"
"$src/scripts/check-test-table.sh"

# ---- the bench's report: it refuses figures that cannot be right ----
echo "== bench report"
PYTHONDONTWRITEBYTECODE=1 python3 "$src/bench/test_report.py"

# ---- pg_regress: the SQL surface, on a temporary instance ----
tests=$(cd "$src/test/regress/sql" && ls *.sql | sed 's/\.sql$//' | sort)
cat > "$scratch/regress.conf" <<CONF
shared_preload_libraries = 'webgres'
webgres.workers = 0
CONF
[ "$(id -u)" -eq 0 ] && chown "$os_user": "$scratch/regress.conf"
port=$(( 20000 + RANDOM % 20000 ))
echo "== pg_regress"
if ! run "$pgxs/src/test/regress/pg_regress" \
	--temp-instance="$scratch/regress/instance" \
	--temp-config="$scratch/regress.conf" \
	--port="$port" \
	--bindir="$bindir" \
	--inputdir="$scratch/src/test/regress" \
	--outputdir="$scratch/regress" \
	--dbname=contrib_regression \
	$tests; then
	cat "$scratch/regress/regression.diffs" >&2 || true
	exit 1
fi

# ---- TAP: servers over real sockets ----
# WebgresHarness (test/t) writes each file's outcome to tap-summary:
# passed, failed, or skipped (the file skipped all its tests).  A skipped
# file is counted as such, never as passed.  WEBGRES_REQUIRE_ALL=1 (make
# test sets it, having installed every tool a file may skip for) makes a
# skipped file fail the run: there it means a missing tool or a broken
# setup, and nothing was tested.
echo "== TAP"
cd "$scratch/src/test"
tap_summary=$scratch/tap-summary
tap_status=0
run env WEBGRES_SRC="$scratch/src" TESTDIR="$scratch/src/test" \
	PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
	PERL5LIB="$pgxs/src/test/perl:$scratch/src/test/t" \
	WEBGRES_TAP_SUMMARY="$tap_summary" ${WEBGRES_REQUIRE_ALL:+WEBGRES_REQUIRE_ALL="$WEBGRES_REQUIRE_ALL"} \
	prove --harness=WebgresHarness ${PROVE_FLAGS:-} ${WEBGRES_TAP:-t/*.pl} || tap_status=$?
nregress=$(echo "$tests" | wc -w)
ntap_files=$(ls ${WEBGRES_TAP:-t/*.pl} | wc -l)
tap_count() { if [ -f "$tap_summary" ]; then grep -c "^$1 " "$tap_summary" || true; else echo 0; fi; }
tap_passed=$(tap_count passed)
tap_failed=$(tap_count failed)
tap_skipped=$(tap_count skipped)
# A file the harness never reported (prove itself broke) counts as failed.
tap_failed=$(( ntap_files - tap_passed - tap_skipped ))
if [ "$tap_skipped" -gt 0 ]; then
	echo "TAP files skipped:"
	sed -n 's/^skipped \([^ ]*\) \(.*\)/  \1: \2/p' "$tap_summary"
	if [ -n "${WEBGRES_REQUIRE_ALL:-}" ]; then
		echo "webgres: WEBGRES_REQUIRE_ALL is set (make test installs every tool these files need): a skipped file fails the run" >&2
		tap_failed=$(( tap_failed + tap_skipped ))
		tap_skipped=0
	fi
fi
if [ "$tap_status" -ne 0 ] || [ "$tap_failed" -gt 0 ]; then
	sed -n 's/^failed /TAP file failed: /p' "$tap_summary" >&2 2>/dev/null || true
	echo "$((3 + nregress + tap_passed)) passed, $((tap_failed > 0 ? tap_failed : 1)) failed, $tap_skipped skipped"
	exit 1
fi

# ---- fuzzing: each harness briefly; fails without clang (make test installs it) ----
# The harnesses are always built with ASan and UBSan, so a sanitized run
# has nothing to add to them.
echo "== fuzz"
if [ "${SANITIZE:-}" = address ]; then
	echo "fuzz: skipped under SANITIZE=address (make test and make fuzz run the sanitized harnesses)"
	fuzzers=""
elif [ "${WEBGRES_FUZZ_SECONDS:-10}" = 0 ]; then
	echo "fuzz: skipped (WEBGRES_FUZZ_SECONDS=0)"
	fuzzers=""
else
	"$src/scripts/fuzz.sh" "${WEBGRES_FUZZ_SECONDS:-10}"
	fuzzers=" and the fuzzers"
fi

# A sanitizer report fails the run even when every test passed.
if [ "${SANITIZE:-}" = address ]; then
	sanitize_checked=1
	sanitize_check || exit 1
fi

# Every stage above stops the script on a failure, so reaching here means
# all passed but the TAP files that skipped (WEBGRES_REQUIRE_ALL unset).
skipped_note=""
[ "$tap_skipped" -gt 0 ] && skipped_note="; $tap_skipped TAP file(s) skipped, named above"
echo "webgres: the layering check, the TAP table check, the bench report's tests, $nregress pg_regress file(s), $tap_passed TAP file(s)$fuzzers passed${SANITIZE:+ (SANITIZE=$SANITIZE)}$skipped_note"
echo "$((3 + nregress + tap_passed)) passed, 0 failed, $tap_skipped skipped"
