# Shell functions the bench's tier scripts share (sourced, not run).

# tier_script NAME OUTDIR: how a tier script (bench/NAME.sh OUTDIR) starts:
# log() lines prefixed with NAME, BENCH and CLUSTER set, and OUT the output
# directory, made and absolute.  Needs ROOT.
tier_script() {
	TIER=$1
	[ -n "${2:-}" ] || { echo "usage: bench/$1.sh OUTDIR" >&2; exit 2; }
	BENCH=$ROOT/bench
	CLUSTER=$ROOT/scripts/cluster.sh
	mkdir -p "$2"
	OUT=$(cd "$2" && pwd)
}

# log MESSAGE...: a line on stderr, with the tier's name and the time
log() { printf '[%s %s] %s\n' "${TIER:-bench}" "$(date -u +%H:%M:%S)" "$*" >&2; }

# free_port: prints a TCP port free on 127.0.0.1 now
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# throwaway_cluster NAME: a cluster directory of its own in /tmp, owned by the
# user Postgres runs as, and free ports; sets and exports PGDIR, PGPORT,
# PGHOST and WG_PORT, and stops and removes the cluster when the script
# exits.  Needs CLUSTER (scripts/cluster.sh).
throwaway_cluster() {
	PGDIR=$(mktemp -d "/tmp/webgres-$1.XXXXXX")
	[ "$(id -u)" -eq 0 ] && chown postgres: "$PGDIR"
	PGPORT=$(free_port); WG_PORT=$(free_port)
	PGHOST=$PGDIR/socket
	export PGDIR PGPORT PGHOST WG_PORT
	trap '"$CLUSTER" stop "$PGDIR" immediate >/dev/null 2>&1 || true; rm -rf "$PGDIR"' EXIT
}
