#!/usr/bin/env bash
# Runs every test against the installed extension: pg_regress for the SQL
# surface (test/regress) and TAP for running servers (test/t).
#
# Postgres will not run as root, and the checkout may sit where the
# 'postgres' user cannot read it, so the tests run as that user from a
# scratch copy.  WEBGRES_TAP=t/010_x.pl runs the named TAP files only;
# WEBGRES_KEEP=1 keeps the scratch directory for inspection.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bindir=$(pg_config --bindir)
pgxs=$(cd "$(dirname "$(pg_config --pgxs)")/../.." && pwd)
os_user=${WEBGRES_OS_USER:-postgres}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/webgres-test.XXXXXX")
cleanup() {
	status=$?
	if [ $status -ne 0 ] || [ -n "${WEBGRES_KEEP:-}" ]; then
		echo "test output kept in $scratch" >&2
	else
		rm -rf "$scratch"
	fi
	exit $status
}
trap cleanup EXIT

mkdir -p "$scratch/src"
cp -r "$src/test" "$src/sql" "$src/scripts" "$src/Makefile" "$scratch/src/"
[ -d "$src/docker" ] && cp -r "$src/docker" "$scratch/src/"
[ -d "$src/bench" ] && cp -r "$src/bench" "$scratch/src/" 2>/dev/null || true
if [ "$(id -u)" -eq 0 ]; then
	chown -R "$os_user": "$scratch"
	run() { runuser -u "$os_user" -- env PATH="$bindir:$PATH" ${LD_PRELOAD:+LD_PRELOAD="$LD_PRELOAD"} \
		${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} "$@"; }
else
	run() { env PATH="$bindir:$PATH" "$@"; }
fi

# SANITIZE=address: the extension was built with ASan and UBSan; Postgres
# was not, so the runtimes are preloaded into every process it starts.
# Leak checking is off (Postgres frees by memory context, at exit or never);
# reports go to files that must stay empty.
if [ "${SANITIZE:-}" = address ]; then
	mkdir -p "$scratch/asan"
	[ "$(id -u)" -eq 0 ] && chown "$os_user": "$scratch/asan"
	LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
	ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$scratch/asan/asan:detect_odr_violation=0"
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$scratch/asan/ubsan"
	sanitize_check() {
		if ls "$scratch/asan/" | grep -q .; then
			echo "== sanitizer reports:" >&2
			cat "$scratch"/asan/* >&2
			return 1
		fi
		echo "== sanitizers: no reports"
	}
	trap 'status=$?; [ $status -eq 0 ] && { sanitize_check || status=1; }; (exit $status); cleanup' EXIT
fi

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
echo "== TAP"
cd "$scratch/src/test"
run env WEBGRES_SRC="$scratch/src" TESTDIR="$scratch/src/test" \
	PG_REGRESS="$pgxs/src/test/regress/pg_regress" \
	PERL5LIB="$pgxs/src/test/perl:$scratch/src/test/t" \
	prove ${PROVE_FLAGS:-} ${WEBGRES_TAP:-t/*.pl}

# ---- fuzzing: each harness briefly; skipped with a message without clang ----
echo "== fuzz"
"$src/scripts/fuzz.sh" "${WEBGRES_FUZZ_SECONDS:-10}"

# Every stage above stops the script on a failure, so reaching here means all passed.
nregress=$(echo "$tests" | wc -w)
ntap=$(cd "$scratch/src/test" && ls ${WEBGRES_TAP:-t/*.pl} | wc -l)
echo "webgres: $nregress pg_regress file(s), $ntap TAP file(s) and the fuzzers passed"
echo "$((nregress + ntap)) passed, 0 failed"
