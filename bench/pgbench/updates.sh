#!/usr/bin/env bash
# Prints the pgbench script for /updates?queries=N (N from 1 to 500): the
# form of bench/pgbench/updates.sql with N reads and one bulk UPDATE.
set -euo pipefail
n=${1:?usage: updates.sh N}
[ "$n" -ge 1 ] && [ "$n" -le 500 ] || { echo "updates.sh: N must be 1..500" >&2; exit 2; }
echo "-- /updates?queries=$n, written by bench/pgbench/updates.sh"
for i in $(seq 1 "$n"); do
	echo "\\set id$i random(1, 10000)"
	echo "\\set r$i random(1, 10000)"
done
echo "BEGIN;"
for i in $(seq 1 "$n"); do
	echo "SELECT id, randomnumber FROM world WHERE id = :id$i;"
done
cases=""; ids=""
for i in $(seq 1 "$n"); do
	cases+=" WHEN :id$i THEN :r$i"
	ids+="${ids:+, }:id$i"
done
echo "UPDATE world SET randomnumber = CASE id$cases ELSE randomnumber END WHERE id IN ($ids);"
echo "END;"
