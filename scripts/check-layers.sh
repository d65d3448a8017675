#!/usr/bin/env bash
# The layering check: every #include of a project header in src/ names its
# folder ("routes/routes.h", never "routes.h"), and goes to the including
# file's own folder or to a floor below it.  The floors, top first, are read
# from the line that starts with "Floors, top first:" in
# docs/internals-modules.md, the one place they are written down.
#
# Exits 1 and lists every include that breaks a rule; prints one line and
# exits 0 otherwise.  Run by scripts/test.sh (so by make test).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
map=$root/docs/internals-modules.md

floors=$(sed -n 's/^Floors, top first: *//p' "$map" | tr -d '`.' | tr ',' ' ')
if [ -z "$floors" ]; then
	echo "check-layers: no 'Floors, top first:' line in docs/internals-modules.md" >&2
	exit 1
fi

declare -A floor_of
n=0
for f in $floors; do
	floor_of[$f]=$n
	n=$((n + 1))
done

status=0
cd "$root/src"
for d in */; do
	d=${d%/}
	case "$d" in h2o_compat) continue ;; esac
	if [ -z "${floor_of[$d]+set}" ]; then
		echo "check-layers: src/$d/ is on no floor of docs/internals-modules.md" >&2
		status=1
	fi
done

while IFS=: read -r file line text; do
	inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$text")
	[ -n "$inc" ] || continue
	from=${file%%/*}
	case "$inc" in
	*/*)
		to=${inc%%/*}
		# Postgres has include folders of the same names (common/hashfn.h):
		# only a header this tree holds is the project's.
		[ -f "$inc" ] || continue
		[ -n "${floor_of[$from]+set}" ] && [ -n "${floor_of[$to]+set}" ] || continue
		if [ "$from" != "$to" ] && [ "${floor_of[$to]}" -lt "${floor_of[$from]}" ]; then
			echo "src/$file:$line: #include \"$inc\" reaches up from $from to $to" >&2
			status=1
		fi
		;;
	*)
		# A bare name is a project header if some folder holds it.
		for hit in */"$inc"; do
			if [ -f "$hit" ]; then
				echo "src/$file:$line: #include \"$inc\" must name its folder: \"$hit\"" >&2
				status=1
			fi
		done
		;;
	esac
done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- */*.c */*.h)

if [ $status -eq 0 ]; then
	echo "check-layers: every include in src/ goes down the floors ($(echo $floors | tr ' ' '>'))"
fi
exit $status
