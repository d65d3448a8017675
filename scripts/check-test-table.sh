#!/usr/bin/env bash
# The TAP table check: docs/testing.md's table "What each TAP file covers"
# has one row for every test/t/*.pl, none for a file that is gone, in
# file name order, so that the table cannot drift from the suite.
#
# Exits 1 and names every file missing from the table, every row without
# its file and a row out of order; prints one line and exits 0 otherwise.
# Run by scripts/test.sh (so by make test).
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "$0")/.." && pwd)
doc=$root/docs/testing.md

# The rows' file names, in the order the table lists them.
rows=$(sed -n 's/^| `\([0-9][0-9][0-9]_[A-Za-z0-9_]*\.pl\)` |.*/\1/p' "$doc")
files=$(cd "$root/test/t" && ls -- *.pl)

status=0
for f in $files; do
	if ! grep -qxF "$f" <<<"$rows"; then
		echo "check-test-table: test/t/$f has no row in docs/testing.md's table of TAP files" >&2
		status=1
	fi
done
for r in $rows; do
	if [ ! -e "$root/test/t/$r" ]; then
		echo "check-test-table: docs/testing.md has a row for $r, which test/t does not hold" >&2
		status=1
	fi
done
if [ "$(sort <<<"$rows" | uniq)" != "$rows" ]; then
	echo "check-test-table: docs/testing.md's table of TAP files is not in file name order, or names a file twice" >&2
	status=1
fi
[ $status -eq 0 ] && echo "check-test-table: $(wc -w <<<"$files") TAP files, one row each"
exit $status
