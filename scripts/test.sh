#!/usr/bin/env bash
# Runs every test against each supported Postgres: pg_regress for the SQL
# surface (test/regress) and TAP for running servers (test/t), each
# version in a scratch directory and clusters of its own, webgres built
# for it with -Werror (docs/versions.md).
#
#   scripts/test.sh          15 (Debian's) with the fuzzers, then 16 and 18;
#                            17 is built only (scripts/postgres.sh versions, built)
#   PG=18 scripts/test.sh    that version only (make test PG=18)
#   WEBGRES_TAP=... scripts/test.sh   those TAP files on 15 only (PG=N for another)
#
# Postgres will not run as root, and the checkout may sit where the
# 'postgres' user cannot read it, so the tests run as that user from a
# scratch copy.  WEBGRES_TAP=t/010_x.pl runs the named TAP files only;
# WEBGRES_KEEP=1 keeps the scratch directory for inspection;
# WEBGRES_FUZZ_SECONDS sets how long each fuzzer runs (10; 0 skips them);
# WEBGRES_TAP_JOBS how many TAP files run at once (3; 1 runs them in turn).
# Each version is built in build/pgN of the checkout (kept, so a second
# run only rebuilds what changed; scripts/postgres.sh build); SANITIZE=address
# tests the installed build of one version (PG, default 15) instead.
set -euo pipefail
# A failure inside $(...) (a build, an installation) stops the script too.
shopt -s inherit_errexit

src=$(cd "$(dirname "$0")/.." && pwd)
os_user=${WEBGRES_OS_USER:-postgres}
postgres=$src/scripts/postgres.sh
# The TAP modules (PostgreSQL::Test::Cluster) come from Debian's 15 for
# every version: the wheels ship none, and the modules drive whichever
# installation's programs come first in PATH.
tap_perl=/usr/lib/postgresql/15/lib/pgxs/src/test/perl

if [ "${SANITIZE:-}" = address ]; then
	versions=${PG:-15}
	built_only=""
elif [ -n "${PG:-}" ]; then
	versions=$PG
	built_only=""
elif [ -n "${WEBGRES_TAP:-}" ]; then
	# A few files for quick work: on the default Postgres, as before.
	versions=15
	built_only=""
else
	versions=$("$postgres" versions)
	built_only=$("$postgres" built)
	# Run on 15 only when every version is tested: testssl.sh's scan of the
	# TLS listener (a few hundred connections, a minute quiet, many under
	# load) tests OpenSSL and libh2o, which no Postgres version changes.
	# PG=16 or PG=18 runs it too.
	tap_15_only="t/037_security_headers.pl"
fi

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

if [ "$(id -u)" -eq 0 ]; then
	chown "$os_user": "$scratch"
	# $bindir is the version under test's, read at each call.
	run() { runuser -u "$os_user" -- env PATH="$bindir:$PATH" \
		${WEBGRES_BINDIR:+WEBGRES_BINDIR="$WEBGRES_BINDIR"} ${PG_CONFIG:+PG_CONFIG="$PG_CONFIG"} \
		${WEBGRES_UPGRADE_FROM:+WEBGRES_UPGRADE_FROM="$WEBGRES_UPGRADE_FROM"} \
		WEBGRES_PYTHON="$WEBGRES_PYTHON" "$@"; }
else
	run() { env PATH="$bindir:$PATH" "$@"; }
fi

# How many TAP files run at once (WEBGRES_TAP_JOBS): most of a file's
# time is spent waiting on its servers, so more files than cores keep the
# cores busy (docs/testing.md has the measurements).
tap_jobs=${WEBGRES_TAP_JOBS:-3}

# Ports are reserved in one directory for every run on this machine, so
# that two runs at once (make test beside make test-stress) never pick the
# same free port; PostgreSQL::Test::Cluster frees a port its owner left.
port_dir=${TMPDIR:-/tmp}/webgres-portlock
mkdir -p "$port_dir" && chmod 1777 "$port_dir" 2>/dev/null || true

# The tests' Python libraries (test/requirements.txt), in an environment
# every user can read; tests run $WEBGRES_PYTHON, never a bare python3.
WEBGRES_PYTHON=$("$src/scripts/pydeps.sh" | tail -1)
export WEBGRES_PYTHON

# ---- one version: the private installation, pg_regress, TAP, and the
# fuzzers if $2 is 'fuzz'.  Runs in a subshell of its own (see below), in
# $scratch/pg$1, and leaves its counts in $scratch/pg$1/result as
# "PASSED FAILED SKIPPED SECONDS WHAT".
test_version() {
	local v=$1 fuzz=$2 vs=$scratch/pg$1 pgc bindir pgxs tests port
	local passed=0 failed=0 skipped=0 what="" t0=$SECONDS t times=""
	pgc=$("$postgres" install "$v")
	bindir=$("$pgc" --bindir)
	pgxs=$(cd "$(dirname "$("$pgc" --pgxs)")/../.." && pwd)
	export PG_CONFIG=$pgc
	echo "== Postgres $v: $("$pgc" --version) ($pgc)"

	mkdir -p "$vs/src"
	cp -r "$src/test" "$src/sql" "$src/scripts" "$src/Makefile" "$src/README.md" "$vs/src/"
	[ -d "$src/docker" ] && cp -r "$src/docker" "$vs/src/"
	[ -d "$src/examples" ] && cp -r "$src/examples" "$vs/src/"
	[ -d "$src/bench" ] && cp -r "$src/bench" "$vs/src/" 2>/dev/null || true

	# The tests run against a private installation (scripts/postgres.sh private).
	# (SANITIZE=address keeps the installed tree: its wrapper below relies on
	# the installed paths.)
	if [ "${SANITIZE:-}" != address ]; then
		bindir=$("$postgres" private "$v" "$vs/install")
		# scripts/cluster.sh (docker/start.sh in TAP) takes the server from here.
		export WEBGRES_BINDIR=$bindir
	fi
	# t/013_pg_upgrade.pl upgrades from Debian's 15, with webgres built for
	# it (15 to 15 when 15 is tested), in an installation of its own.
	WEBGRES_UPGRADE_FROM=$(dirname "$("$postgres" private 15 "$vs/from15")")
	export WEBGRES_UPGRADE_FROM

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
	# or never); reports go to files that must stay empty (sanitize_check).
	if [ "${SANITIZE:-}" = address ]; then
		local asan_dir=$vs/asan san_bin real_postgres preload f
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
	fi
	[ "$(id -u)" -eq 0 ] && chown -R "$os_user": "$vs"

	# ---- pg_regress: the SQL surface, on a temporary instance ----
	tests=$(cd "$src/test/regress/sql" && ls *.sql | sed 's/\.sql$//' | sort)
	cat > "$vs/regress.conf" <<-CONF
	shared_preload_libraries = 'webgres'
	webgres.workers = 0
	CONF
	[ "$(id -u)" -eq 0 ] && chown "$os_user": "$vs/regress.conf"
	port=$(( 20000 + RANDOM % 20000 ))
	times="set-up $((SECONDS - t0)) s"
	t=$SECONDS
	echo "== pg_regress (Postgres $v)"
	if run "$pgxs/src/test/regress/pg_regress" \
		--temp-instance="$vs/regress/instance" \
		--temp-config="$vs/regress.conf" \
		--port="$port" \
		--bindir="$bindir" \
		--inputdir="$vs/src/test/regress" \
		--outputdir="$vs/regress" \
		--dbname=contrib_regression \
		$tests 2>&1 | tee "$vs/regress.out"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
		passed=$((passed + $(echo "$tests" | wc -w)))
		what="$(echo "$tests" | wc -w) pg_regress file(s)"
	else
		cat "$vs/regress/regression.diffs" >&2 || true
		local n
		# "N of M tests failed." (15), "# N of M tests failed." (16 on)
		n=$(sed -n 's/^#* *\([0-9]*\) of [0-9]* tests failed.*/\1/p' "$vs/regress.out" | head -n 1)
		n=${n:-$(echo "$tests" | wc -w)}
		failed=$((failed + n))
		passed=$((passed + $(echo "$tests" | wc -w) - n))
		what="pg_regress FAILED"
	fi

	# ---- TAP: servers over real sockets ----
	# WebgresHarness (test/t) writes each file's outcome to tap-summary:
	# passed, failed, or skipped (the file skipped all its tests).  A
	# skipped file is counted as such, never as passed.
	# WEBGRES_REQUIRE_ALL=1 (make test sets it, having installed every tool
	# a file may skip for) makes a skipped file fail the run: there it
	# means a missing tool or a broken setup, and nothing was tested.  Not
	# so on a version other than 15 for a file whose reason ends with
	# "(docs/versions.md)": that installation lacks a module the file
	# needs, a gap of the version that docs/versions.md lists.
	times="$times, pg_regress $((SECONDS - t)) s"
	t=$SECONDS
	echo "== TAP (Postgres $v)"
	local ntap tap_status=0 tap_summary=$vs/tap-summary tap_passed tap_failed tap_skipped gaps=0
	local tap_files f
	tap_files=$(cd "$vs/src/test" && ls ${WEBGRES_TAP:-t/*.pl})
	if [ "$v" != 15 ] && [ -n "${tap_15_only:-}" ]; then
		for f in $tap_15_only; do
			tap_files=$(echo "$tap_files" | grep -vxF "$f" || true)
		done
		what="$what, $(echo $tap_15_only | wc -w) TAP file left to 15"
	fi
	ntap=$(echo "$tap_files" | wc -w)
	# The files run $tap_jobs at a time, the slowest of the last run first
	# (its times are kept in build/tap-times-pgN of the checkout), then
	# those WebgresHarness lists as needing the machine to themselves, one
	# by one.  Each node's data directory is a copy of one initdb made for
	# the run (WebgresTest.pm).
	local tap_times=$src/build/tap-times-pg$v
	[ -f "$tap_times" ] && cp "$tap_times" "$vs/tap-times"
	[ "$(id -u)" -eq 0 ] && [ -f "$vs/tap-times" ] && chown "$os_user": "$vs/tap-times"
	(cd "$vs/src/test" && run env WEBGRES_SRC="$vs/src" TESTDIR="$vs/src/test" \
		PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
		PERL5LIB="$tap_perl:$vs/src/test/t" PG_TEST_PORT_DIR="$port_dir" \
		WEBGRES_TAP_SUMMARY="$tap_summary" WEBGRES_TAP_TIMES="$vs/tap-times" \
		WEBGRES_INITDB_TEMPLATE="$vs/initdb-template" \
		${WEBGRES_REQUIRE_ALL:+WEBGRES_REQUIRE_ALL="$WEBGRES_REQUIRE_ALL"} \
		prove --harness=WebgresHarness -j "$tap_jobs" ${PROVE_FLAGS:-} $tap_files) || tap_status=$?
	if [ -f "$vs/tap-times" ]; then
		mkdir -p "$src/build" && cp "$vs/tap-times" "$tap_times" || true
	fi
	tap_passed=$(tap_count "$tap_summary" passed)
	tap_skipped=$(tap_count "$tap_summary" skipped)
	# A file the harness never reported (prove itself broke) counts as failed.
	tap_failed=$(( ntap - tap_passed - tap_skipped ))
	if [ "$tap_skipped" -gt 0 ]; then
		echo "TAP files skipped (Postgres $v):"
		sed -n 's/^skipped \([^ ]*\) \(.*\)/  \1: \2/p' "$tap_summary"
		[ "$v" != 15 ] && gaps=$(grep -c '^skipped .*(docs/versions\.md)$' "$tap_summary" || true)
		if [ -n "${WEBGRES_REQUIRE_ALL:-}" ] && [ "$tap_skipped" -gt "$gaps" ]; then
			echo "webgres: WEBGRES_REQUIRE_ALL is set (make test installs every tool these files need): a skipped file fails the run, but for the version's gaps of docs/versions.md" >&2
			tap_failed=$(( tap_failed + tap_skipped - gaps ))
			tap_skipped=$gaps
		fi
	fi
	if [ "$tap_status" -ne 0 ] && [ "$tap_failed" -eq 0 ]; then
		tap_failed=1
	fi
	[ -f "$tap_summary" ] && sed -n 's/^failed /TAP file failed: /p' "$tap_summary" >&2
	passed=$((passed + tap_passed))
	failed=$((failed + tap_failed))
	skipped=$((skipped + tap_skipped))
	if [ "$tap_failed" -gt 0 ]; then
		what="$what, TAP FAILED ($tap_failed of $ntap file(s))"
	else
		what="$what, $tap_passed TAP file(s)"
	fi
	[ "$tap_skipped" -gt 0 ] && what="$what ($tap_skipped skipped, named above)"
	times="$times, TAP $((SECONDS - t)) s ($tap_jobs at a time)"
	t=$SECONDS

	# ---- fuzzing: each harness briefly; fails without clang (make test installs it) ----
	# The harnesses are always built with ASan and UBSan, so a sanitized run
	# has nothing to add to them; nor do they depend on the Postgres version.
	if [ "$fuzz" = fuzz ]; then
		echo "== fuzz"
		if [ "${SANITIZE:-}" = address ]; then
			echo "fuzz: skipped under SANITIZE=address (make test and make fuzz run the sanitized harnesses)"
		elif [ "${WEBGRES_FUZZ_SECONDS:-10}" = 0 ]; then
			echo "fuzz: skipped (WEBGRES_FUZZ_SECONDS=0)"
		elif "$src/scripts/fuzz.sh" "${WEBGRES_FUZZ_SECONDS:-10}"; then
			what="$what and the fuzzers"
		else
			failed=$((failed + 1))
			what="$what, fuzzers FAILED"
		fi
	fi
	[ "$fuzz" = fuzz ] && times="$times, fuzz $((SECONDS - t)) s"
	echo "Postgres $v took $((SECONDS - t0)) s: $times"
	echo "$passed $failed $skipped $((SECONDS - t0)) $what" > "$vs/result"
}

# The number of TAP files of outcome $2 in the summary $1 (WebgresHarness).
tap_count() {
	if [ -f "$1" ]; then grep -c "^$2 " "$1" || true; else echo 0; fi
}

# ---- SANITIZE=address: reports in files that must stay empty ----
# ASan writes its reports to files; UBSan (gcc's, next to ASan) ignores
# log_path and writes to stderr, which is the server's log: both count.
sanitize_check() {
	local vs=$scratch/pg$1 logs f
	logs=$(grep -rlE 'runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer|Sanitizer:DEADLYSIGNAL' \
		"$vs/regress" "$vs/src/test/tmp_check" 2>/dev/null || true)
	if ls "$vs/asan/reports/" 2>/dev/null | grep -q . || [ -n "$logs" ]; then
		echo "== sanitizer reports:" >&2
		for f in "$vs"/asan/reports/*; do [ -e "$f" ] && cat "$f" >&2; done
		for f in $logs; do
			echo "-- in $f:" >&2
			grep -E -A12 'runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer|Sanitizer:DEADLYSIGNAL' "$f" >&2
		done
		return 1
	fi
	echo "== sanitizers: no reports"
}

total_passed=0
total_failed=0
total_skipped=0
summary=()

# ---- the layering check: every include goes down the floors (docs/internals-modules.md) ----
echo "== layers"
if "$src/scripts/check-layers.sh"; then
	total_passed=$((total_passed + 1))
else
	total_failed=$((total_failed + 1))
fi

# ---- the module map and the phase table agree with src/ (docs/internals-modules.md) ----
echo "== module map"
if "$src/scripts/check-map.sh"; then
	total_passed=$((total_passed + 1))
else
	total_failed=$((total_failed + 1))
fi

# ---- docs/testing.md lists every TAP file, once, in order ----
echo "== TAP table"
if "$src/scripts/check-test-table.sh"; then
	total_passed=$((total_passed + 1))
else
	total_failed=$((total_failed + 1))
fi

# ---- the bench's report: it refuses figures that cannot be right ----
echo "== bench report"
if PYTHONDONTWRITEBYTECODE=1 python3 "$src/bench/test_report.py"; then
	total_passed=$((total_passed + 1))
else
	total_failed=$((total_failed + 1))
fi

# ---- the versions only built: the compatibility header compiles there too ----
for v in $built_only; do
	echo "== build for Postgres $v (not tested here: docs/versions.md)"
	t=$SECONDS
	if "$postgres" build "$v"; then
		total_passed=$((total_passed + 1))
		summary+=("Postgres $v: built with -Werror (not tested) ($((SECONDS - t)) s)")
	else
		total_failed=$((total_failed + 1))
		summary+=("Postgres $v: build FAILED")
	fi
done

# ---- each version tested, in turn ----
# A version's failure is counted and the next version still runs.  Each
# runs as a background subshell: under 'set -e' a function called from
# 'if' or '||' would run with errors ignored, while a job started with '&'
# keeps them fatal; 'wait' gives its status.
fuzz=fuzz
case " $versions " in *" 15 "*) ;; *) fuzz=nofuzz ;; esac
for v in $versions; do
	f=nofuzz
	[ "$fuzz" = fuzz ] && [ "$v" = 15 ] && f=fuzz
	test_version "$v" "$f" &
	status=0
	wait $! || status=$?
	result="0 1 0 0 did not finish (status $status)"
	[ -f "$scratch/pg$v/result" ] && result=$(cat "$scratch/pg$v/result")
	read -r p fl sk secs what <<<"$result"
	[ "$status" -ne 0 ] && [ "$fl" -eq 0 ] && fl=1
	if [ "${SANITIZE:-}" = address ] && ! sanitize_check "$v"; then
		fl=$((fl + 1))
		what="$what, sanitizer reports"
	fi
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + fl))
	total_skipped=$((total_skipped + sk))
	summary+=("Postgres $v: $what: $p passed, $fl failed, $sk skipped ($secs s)")
done

echo "webgres: the layering check, the TAP table check and the bench report's tests, then per version${SANITIZE:+ (SANITIZE=$SANITIZE)}:"
for line in "${summary[@]}"; do
	echo "  $line"
done
echo "$total_passed passed, $total_failed failed, $total_skipped skipped, in $SECONDS s"
[ "$total_failed" -eq 0 ]
