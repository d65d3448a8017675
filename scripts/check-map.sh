#!/usr/bin/env bash
# The map check: docs/internals-modules.md is the one map of src/, and this
# keeps it from drifting.  It checks that
#  - every module (a .c file in src/) has a row in the map's tables,
#  - the phase table lists the phases of src/serve/phase.h's Phase enum, in
#    its order, and
#  - every module registered in a phase list (src/http/worker_phase_list.h,
#    src/serve/phase_list.h) defines its PhaseModule, and is named in the
#    row of each phase it hooks,
#  - every module of src/http/response_phase_list.h defines its
#    FilterModule (FILTER_MODULE) or LogModule (LOG_MODULE), and is named
#    in the row of PHASE_FILTER or PHASE_LOG, and
#  - every module listed in src/module/settings_list.h defines its
#    NAME_define_settings(), and
#  - no header but src/core/settings.h declares a setting's variable
#    (webgres_*): a module's settings are read through its own functions.
# Exits 1 and lists what disagrees; prints one line and exits 0 otherwise.
# Run by scripts/test.sh (so by make test), beside check-layers.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
map=$root/docs/internals-modules.md
cd "$root/src"
status=0

# Every module has a row: "| `name` |" in some table of the map.
for f in */*.c; do
	m=$(basename "$f" .c)
	if ! grep -q "^| \`$m\` |" "$map"; then
		echo "check-map: src/$f has no row in docs/internals-modules.md" >&2
		status=1
	fi
done

# The phases, in the enum's order and the table's.
enum=$(sed -n '/^typedef enum Phase$/,/^} Phase;/p' serve/phase.h | grep -o 'PHASE_[A-Z_]*' || true)
table=$(grep -o '^| `PHASE_[A-Z_]*`' "$map" | tr -d '|` ' || true)
if [ -z "$enum" ]; then
	echo "check-map: no Phase enum in src/serve/phase.h" >&2
	status=1
elif [ "$enum" != "$table" ]; then
	echo "check-map: the phase table of docs/internals-modules.md does not list serve/phase.h's phases in order" >&2
	diff <(echo "$enum") <(echo "$table") >&2 || true
	status=1
fi

# Each registered module: defined, and in the rows of the phases it hooks.
for list in http/worker_phase_list.h serve/phase_list.h; do
	for m in $(sed -n 's/^[A-Z_]*MODULE(\([a-z0-9_]*\))$/\1/p' "$list"); do
		def=$(grep -l "^const PhaseModule ${m}_module = {" */*.c || true)
		if [ -z "$def" ]; then
			echo "check-map: src/$list registers $m, but no file defines ${m}_module" >&2
			status=1
			continue
		fi
		hooked=$(sed -n "/^const PhaseModule ${m}_module = {/,/^};/p" $def | grep -o '\[PHASE_[A-Z_]*\]' | tr -d '[]')
		for p in $hooked; do
			if ! grep "^| \`$p\` |" "$map" | awk -F'|' '{print $4}' | grep -q "\`$m\`"; then
				echo "check-map: $m hooks $p (src/$def), but the phase table's row for it does not name \`$m\`" >&2
				status=1
			fi
		done
	done
done

# The response phases' modules: defined, and in the row of their phase.
list=http/response_phase_list.h
for kind in FILTER:FilterModule:filter:PHASE_FILTER LOG:LogModule:logger:PHASE_LOG; do
	IFS=: read -r macro type suffix phase <<<"$kind"
	for m in $(sed -n "s/^${macro}_MODULE(\([a-z0-9_]*\))\$/\1/p" "$list"); do
		if ! grep -q "^const $type ${m}_$suffix = {" */*.c; then
			echo "check-map: src/$list registers $m, but no file defines ${m}_$suffix" >&2
			status=1
		elif ! grep "^| \`$phase\` |" "$map" | awk -F'|' '{print $4}' | grep -q "\`$m\`"; then
			echo "check-map: $m is a module of $phase (src/$list), but the phase table's row for it does not name \`$m\`" >&2
			status=1
		fi
	done
done

# Each module that defines its own settings has the function its line calls.
for m in $(sed -n 's/^SETTINGS_MODULE(\([a-z0-9_]*\))$/\1/p' module/settings_list.h); do
	if ! grep -q "^${m}_define_settings(void)" */*.c; then
		echo "check-map: src/module/settings_list.h lists $m, but no file defines ${m}_define_settings()" >&2
		status=1
	fi
done

# A module's setting variables stay in its own file.
if exported=$(grep -Hn '^extern[^(]*\bwebgres_[a-z0-9_]*;' */*.h | grep -v '^core/settings\.h:'); then
	while IFS= read -r line; do
		echo "check-map: src/$line declares a setting's variable outside core/settings.h: give its module an accessor" >&2
	done <<<"$exported"
	status=1
fi

if [ $status -eq 0 ]; then
	echo "check-map: every module has a row; $(echo $enum | wc -w) phases in order, each registered module in its phases' rows"
fi
exit $status
