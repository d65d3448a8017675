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

# tree_ticks PID: CPU ticks of a process tree: the root's own and its reaped
# children's time, plus the children alive now (a Postgres backend that
# exits lands in the postmaster's cutime/cstime).
tree_ticks() {
	local root=$1 total c
	[ -d "/proc/$root" ] || { echo 0; return; }
	total=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$root/stat")
	for c in $(pgrep -P "$root"); do
		total=$(( total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$c/stat" 2>/dev/null || echo 0) ))
	done
	echo "$total"
}
# CLK_TCK: ticks per second, for tree_ticks
CLK_TCK=$(getconf CLK_TCK)

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

# pg_install_copy DIR: mirrors the Postgres installation (pg_config's, or
# PG_CONFIG's) under DIR: its bindir, pkglibdir and sharedir at the same
# paths below DIR, without webgres.  The Postgres programs find their
# libraries and extension files relative to their own directory, so the
# copy loads whatever webgres build_into_copy puts in it, and two builds of
# the extension can run side by side.  Prints the copy's bindir.
pg_install_copy() {
	local dir=$1 pgc=${PG_CONFIG:-pg_config} bindir pkglibdir sharedir d
	bindir=$("$pgc" --bindir); pkglibdir=$("$pgc" --pkglibdir); sharedir=$("$pgc" --sharedir)
	for d in "$bindir" "$pkglibdir" "$sharedir"; do
		mkdir -p "$dir$(dirname "$d")"
		[ -d "$dir$d" ] || cp -a "$d" "$dir$d"
	done
	rm -f "$dir$pkglibdir"/webgres.* "$dir$sharedir"/extension/webgres*
	if [ "$("$dir$bindir/pg_config" --pkglibdir)" != "$dir$pkglibdir" ]; then
		log "error: the copy of Postgres in $dir does not look for its libraries in its own directory"
		return 1
	fi
	echo "$dir$bindir"
}

# build_into_copy TREE DIR LOGFILE: builds the webgres source tree TREE and
# installs it into the copy of Postgres that pg_install_copy made in DIR;
# on failure, prints the log's last lines and returns 1.
build_into_copy() {
	local tree=$1 dir=$2 logfile=$3
	# PGXS reads PROFILE as compiler flags; the bench's PROFILE=1 is not one
	if ! { env -u PROFILE make -C "$tree" -s all > "$logfile" 2>&1 &&
		env -u PROFILE make -C "$tree" -s install DESTDIR="$dir" >> "$logfile" 2>&1; }; then
		tail -n 20 "$logfile" >&2
		return 1
	fi
	[ -f "$dir$("${PG_CONFIG:-pg_config}" --pkglibdir)/webgres.so" ] ||
		{ log "error: the build of $tree did not install into $dir"; return 1; }
}

# commit_tree REPO COMMIT DIR: a detached worktree of REPO at COMMIT in DIR,
# readable by the user Postgres runs as (it reads the TFB SQL files there);
# remove it with git worktree remove --force DIR.
commit_tree() {
	git -C "$1" worktree add --detach "$3" "$2" >/dev/null 2>&1 ||
		{ log "error: could not check $2 out into $3"; return 1; }
	chmod -R a+rX "$3"
}

# nginx_conf_head DIR WORKERS: the top of a tier's nginx.conf: the user its
# workers drop to when started as root, WORKERS worker processes, the pid
# file and error log in DIR, and the events block.
nginx_conf_head() {
	if [ "$(id -u)" -eq 0 ]; then echo "user www-data;"; fi
	cat <<EOF
worker_processes $2;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
EOF
}
