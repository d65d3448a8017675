#!/usr/bin/env bash
# Manages a throwaway Postgres cluster for webgres: run, bench and docker all
# go through it, so the steps they share are tested once.
#
#   cluster.sh init  DIR [PGPORT]   initdb into DIR; settings read from stdin
#                                   (postgresql.conf lines) are appended
#   cluster.sh start DIR            start it and wait until it accepts queries
#   cluster.sh stop  DIR [MODE]     stop it (pg_ctl -m MODE, default fast)
#   cluster.sh psql  DIR [ARGS...]  psql as the superuser on its socket
#   cluster.sh as-owner CMD...      run CMD as the cluster's OS user
#   cluster.sh check-free DIR [PGPORT] [HTTPPORT]
#                                   fail, naming what holds it, if DIR's
#                                   cluster is running or something listens
#                                   on TCP port PGPORT or HTTPPORT (empty:
#                                   not checked)
#
# Postgres refuses to run as root: as root, everything runs as the 'postgres'
# system user (WEBGRES_OS_USER to choose another), which owns DIR.
# The Postgres programs come from pg_config --bindir ($PG_CONFIG, which
# make PG=N sets), or WEBGRES_BINDIR
# (make test SANITIZE=address points it at its wrapped server).
set -euo pipefail

bindir=${WEBGRES_BINDIR:-$(${PG_CONFIG:-pg_config} --bindir)}
os_user=${WEBGRES_OS_USER:-postgres}

as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		# runuser keeps the environment we pass explicitly and needs no tty.
		runuser -u "$os_user" -- env PATH="$bindir:$PATH" "$@"
	else
		env PATH="$bindir:$PATH" "$@"
	fi
}

# Who listens on TCP port $1, as "NAME (PID n, data directory D)", or the
# empty string when nothing does.  ss names the process when it may (as root,
# or for the same user); otherwise a connect to 127.0.0.1 still finds it.
# The data directory is a Postgres process's working directory, and the
# postmaster is named rather than the worker holding the socket.
port_holder() {
	local port=$1 line pid name ppid dir
	line=$(ss -ltnpH "sport = :$port" 2>/dev/null | head -n 1 || true)
	if [ -z "$line" ]; then
		# Without ss (a minimal image), or for an address ss does not list.
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 0
		echo "another process"
		return 0
	fi
	pid=$(echo "$line" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true)
	if [ -z "$pid" ]; then
		echo "a process of another user"
		return 0
	fi
	name=$(cat "/proc/$pid/comm" 2>/dev/null || echo '?')
	if [ "$name" = postgres ]; then
		ppid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null || true)
		[ -n "$ppid" ] && [ "$(cat "/proc/$ppid/comm" 2>/dev/null)" = postgres ] && pid=$ppid
		dir=$(readlink "/proc/$pid/cwd" 2>/dev/null || true)
		echo "postgres (PID $pid${dir:+, data directory $dir})"
	else
		echo "$name (PID $pid)"
	fi
}

cmd=${1:?usage: cluster.sh init|start|stop|psql|as-owner|check-free DIR}
shift
case "$cmd" in
init)
	dir=${1:?DIR}; port=${2:-5432}
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown "$os_user": "$dir"
	chmod 700 "$dir"
	as_owner initdb -D "$dir" -U postgres --auth=trust --encoding=UTF8 \
		--locale=C.UTF-8 --no-instructions >/dev/null
	sockdir="$dir/socket"
	as_owner mkdir -p "$sockdir"
	{
		echo "# added by webgres scripts/cluster.sh"
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$sockdir'"
		echo "logging_collector = off"
		[ -t 0 ] || cat
	} | as_owner tee -a "$dir/postgresql.conf" >/dev/null
	;;
start)
	dir=${1:?DIR}
	as_owner pg_ctl -D "$dir" -l "$dir/postgres.log" -w -t 60 start >/dev/null || {
		echo "cluster.sh: postgres did not start; last lines of $dir/postgres.log:" >&2
		tail -n 20 "$dir/postgres.log" >&2
		exit 1
	}
	;;
stop)
	dir=${1:?DIR}; mode=${2:-fast}
	[ -f "$dir/postmaster.pid" ] || exit 0
	as_owner pg_ctl -D "$dir" -m "$mode" -w -t 60 stop >/dev/null
	;;
psql)
	dir=${1:?DIR}; shift
	port=$(sed -n 's/^port = \([0-9]*\)$/\1/p' "$dir/postgresql.conf" | tail -n 1)
	as_owner psql -X -q -v ON_ERROR_STOP=1 -h "$dir/socket" -p "$port" -U postgres "$@"
	;;
as-owner)
	as_owner "$@"
	;;
check-free)
	dir=${1:?DIR}; pgport=${2:-}; httpport=${3:-}
	if [ -f "$dir/postmaster.pid" ] && as_owner pg_ctl -D "$dir" status >/dev/null 2>&1; then
		pid=$(head -n 1 "$dir/postmaster.pid")
		port=$(sed -n 4p "$dir/postmaster.pid")
		echo "webgres: the cluster in $dir is already running (postmaster PID $pid, Postgres port $port)." >&2
		echo "webgres: refusing to take it over: stop that server first, or use another data directory (WEBGRES_DATA) and ports." >&2
		exit 1
	fi
	if [ -n "$pgport" ]; then
		holder=$(port_holder "$pgport")
		if [ -n "$holder" ]; then
			echo "webgres: Postgres port $pgport is already in use by $holder." >&2
			echo "webgres: stop that server first, or choose another port (PGPORT)." >&2
			exit 1
		fi
	fi
	if [ -n "$httpport" ]; then
		holder=$(port_holder "$httpport")
		if [ -n "$holder" ]; then
			# SO_REUSEPORT would let a second webgres bind it and take a
			# share of its connections instead of failing.
			echo "webgres: HTTP port $httpport is already in use by $holder." >&2
			echo "webgres: refusing to share it: stop that server first, or choose another port (PORT)." >&2
			exit 1
		fi
	fi
	;;
*)
	echo "cluster.sh: unknown command $cmd" >&2; exit 2
	;;
esac
