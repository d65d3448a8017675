#!/usr/bin/env bash
# make cluster: a primary, two streaming standbys and HAProxy in front, on
# this machine, with a small example, until Ctrl-C or SIGTERM; then stops
# everything cleanly.  The HAProxy configuration is
# scripts/haproxy/webgres.cfg, the one docs/scale-out.md tells users to copy.
#
#   PORT     HAProxy's front address port (default 8080); PORT+1 is its
#            primary address, which every node's webgres.primary_url names
#   PGPORT   the primary's Postgres port (default 5440); the standbys take
#            the next two.  The nodes' HTTP ports are PORT+10, +11, +12.
#   WEBGRES_DATA  parent directory of the three data directories (default
#            /var/tmp/webgres-topology); made anew on every run
#   WORKERS, EXECUTORS  per node (default 1 and 1)
#   TOPOLOGY_UP_ONLY=1  set everything up, print, and exit without waiting
#            or stopping (bench/scaleout.sh stops it with 'topology.sh down')
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
cluster=$src/scripts/cluster.sh
. "$src/scripts/serve-lib.sh"
port=${PORT:-8080}
writes=$((port + 1))
pgport=${PGPORT:-5440}
top=${WEBGRES_DATA:-/var/tmp/webgres-topology}
workers=${WORKERS:-1}
executors=${EXECUTORS:-1}
names=(primary standby1 standby2)
haproxy_pid=$top/haproxy.pid

# Stops HAProxy and the three nodes, standbys first.
down() {
	if [ -f "$haproxy_pid" ]; then
		kill "$(cat "$haproxy_pid")" 2>/dev/null || true
		rm -f "$haproxy_pid"
	fi
	for name in standby2 standby1 primary; do
		[ -d "$top/$name" ] && "$cluster" stop "$top/$name" fast || true
	done
}

if [ "${1:-}" = down ]; then
	down
	exit 0
fi

for i in 0 1 2; do
	"$cluster" check-free "$top/${names[$i]}" $((pgport + i)) $((port + 10 + i))
done
"$cluster" check-free "$top/haproxy" "" "$port"
"$cluster" check-free "$top/haproxy" "" "$writes"
rm -rf "$top"
mkdir -p "$top"
[ "$(id -u)" -eq 0 ] && chown "${WEBGRES_OS_USER:-postgres}": "$top"

# The settings every node shares; each node adds its own ports.
node_conf() {
	cat <<CONF
shared_preload_libraries = 'webgres'
webgres.workers = $workers
webgres.executors = $executors
max_worker_processes = $((workers + executors + 8))
webgres.readiness_path = '/readyz'
webgres.liveness_path = '/livez'
webgres.primary_path = '/primary'
webgres.primary_url = 'http://127.0.0.1:$writes'
wal_level = replica
max_wal_senders = 10
hot_standby = on
listen_addresses = '127.0.0.1'
CONF
}

echo "webgres: creating the primary in $top/primary"
{ node_conf; echo "webgres.listen = '127.0.0.1:$((port + 10))'"; } |
	"$cluster" init "$top/primary" "$pgport"
"$cluster" as-owner sh -c "echo 'host replication all 127.0.0.1/32 trust' >> '$top/primary/pg_hba.conf'"

stop() {
	echo "webgres: stopping HAProxy and the three nodes"
	down
}
[ -z "${TOPOLOGY_UP_ONLY:-}" ] && stop_on_exit stop

"$cluster" start "$top/primary"
"$cluster" psql "$top/primary" <<'SQL'
CREATE EXTENSION webgres;
CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL);
-- Which node answered: each has its own Postgres port.
INSERT INTO webgres.routes (method, path, handler) VALUES
 ('GET', '/whoami', $$SELECT current_setting('port') || CASE WHEN pg_is_in_recovery() THEN ' standby' ELSE ' primary' END AS body FROM request$$),
 ('GET', '/notes', $$SELECT 'application/json' AS content_type, coalesce(json_agg(n ORDER BY id), '[]')::text AS body FROM notes n, request$$),
 ('POST', '/notes', $$INSERT INTO notes (body) SELECT convert_from(request.body, 'UTF8') FROM request RETURNING 201 AS status, id::text AS body$$);
SQL

for i in 1 2; do
	name=${names[$i]}
	echo "webgres: creating $name from a base backup of the primary"
	"$cluster" as-owner pg_basebackup -h 127.0.0.1 -p "$pgport" -U postgres \
		-D "$top/$name" -R -X stream --checkpoint=fast
	# The primary's socket directory came along, perhaps with its lock file.
	"$cluster" as-owner sh -c "mkdir -p '$top/$name/socket' && rm -f '$top/$name/socket/'.s.PGSQL.*"
	"$cluster" as-owner sh -c "cat >> '$top/$name/postgresql.conf'" <<CONF
# the standby's own ports (scripts/topology.sh)
port = $((pgport + i))
unix_socket_directories = '$top/$name/socket'
webgres.listen = '127.0.0.1:$((port + 10 + i))'
CONF
	"$cluster" start "$top/$name"
done

"$cluster" as-owner env \
	WEBGRES_NODE1="127.0.0.1:$((port + 10))" \
	WEBGRES_NODE2="127.0.0.1:$((port + 11))" \
	WEBGRES_NODE3="127.0.0.1:$((port + 12))" \
	WEBGRES_FRONT="127.0.0.1:$port" WEBGRES_WRITES="127.0.0.1:$writes" \
	haproxy -D -p "$haproxy_pid" -f "$src/scripts/haproxy/webgres.cfg"

# Ready when HAProxy's primary address has settled on the primary.
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$writes/whoami" 2>/dev/null | grep -q primary && break
	sleep 0.1
done

cat <<MSG

webgres is serving through HAProxy on http://127.0.0.1:$port
  primary   HTTP 127.0.0.1:$((port + 10))  Postgres $pgport  ($top/primary)
  standby1  HTTP 127.0.0.1:$((port + 11))  Postgres $((pgport + 1))  ($top/standby1)
  standby2  HTTP 127.0.0.1:$((port + 12))  Postgres $((pgport + 2))  ($top/standby2)
  HAProxy's primary address (every node's webgres.primary_url): http://127.0.0.1:$writes

  curl http://127.0.0.1:$port/whoami                      # again and again: every node answers in turn
  curl -d 'hello' http://127.0.0.1:$port/notes            # POST goes to the primary
  curl http://127.0.0.1:$port/notes                       # read back from any node
  curl -i -d 'x' http://127.0.0.1:$((port + 11))/notes          # a standby directly: 307 to the primary
  curl http://127.0.0.1:$((port + 11))/readyz                   # readiness, with the replay lag

Try a failover:
  $cluster stop $top/primary
  $cluster psql $top/standby1 -c 'SELECT pg_promote()'
  curl -d 'after' http://127.0.0.1:$port/notes            # writes go to standby1 now

Ctrl-C (or SIGTERM) stops everything.
MSG

[ -n "${TOPOLOGY_UP_ONLY:-}" ] && exit 0

# Serve until told to stop, or until every node has gone.
serve_until_stopped "${names[@]/#/$top/}"
echo "webgres: every node stopped" >&2
exit 1
