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
#
# Postgres refuses to run as root: as root, everything runs as the 'postgres'
# system user (WEBGRES_OS_USER to choose another), which owns DIR.
# The Postgres programs come from pg_config --bindir, or WEBGRES_BINDIR
# (make test SANITIZE=address points it at its wrapped server).
set -euo pipefail

bindir=${WEBGRES_BINDIR:-$(pg_config --bindir)}
os_user=${WEBGRES_OS_USER:-postgres}

as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		# runuser keeps the environment we pass explicitly and needs no tty.
		runuser -u "$os_user" -- env PATH="$bindir:$PATH" "$@"
	else
		env PATH="$bindir:$PATH" "$@"
	fi
}

cmd=${1:?usage: cluster.sh init|start|stop|psql|as-owner DIR}
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
*)
	echo "cluster.sh: unknown command $cmd" >&2; exit 2
	;;
esac
