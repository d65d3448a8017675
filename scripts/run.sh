#!/usr/bin/env bash
# make run: serves the example and TechEmpower routes from an embedded local
# cluster until Ctrl-C or SIGTERM, then stops the cluster cleanly.
#
#   PORT    HTTP port (default 8080)
#   PGPORT  Postgres port (default 5432); the cluster listens on a Unix
#           socket in its data directory, and on 127.0.0.1
#   WEBGRES_DATA  data directory (default /var/tmp/webgres-run-$PGPORT, with
#              -pgN after it under make run PG=N: a cluster is one version's);
#           kept between runs, so data and routes persist
#   WORKERS webgres.workers (default: two per CPU)
#   EXECUTORS webgres.executors (default 4; see docs/execution.md)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
port=${PORT:-8080}
pgport=${PGPORT:-5432}
data=${WEBGRES_DATA:-/var/tmp/webgres-run-$pgport${PG:+-pg$PG}}
workers=${WORKERS:-$(( 2 * $(nproc) ))}
executors=${EXECUTORS:-4}
cluster=$src/scripts/cluster.sh
. "$src/scripts/serve-lib.sh"

# Another server on this data directory or these ports: say which and stop,
# before anything here could stop it or share its HTTP port.
"$cluster" check-free "$data" "$pgport" "$port"

if [ ! -f "$data/PG_VERSION" ]; then
	echo "webgres: creating a cluster in $data"
	"$cluster" init "$data" "$pgport" <<CONF
include_if_exists = 'webgres-run.conf'
CONF
fi

# pg_stat_statements (TechEmpower reads its query counts there) where the
# installation has it: the Postgres 16 of docs/versions.md does not.
pgss=
[ -f "$(${PG_CONFIG:-pg_config} --pkglibdir)/pg_stat_statements.so" ] && pgss=,pg_stat_statements

# Rewritten on every run, so PORT and PGPORT always take effect.  The
# workers start once hello_world exists (see below), so the first write says
# 0 of them.
write_conf() {
{
	echo "# written by scripts/run.sh: TechEmpower's settings (scripts/tfb-postgres.conf), then this run's"
	cat "$src/scripts/tfb-postgres.conf"
	cat <<CONF
port = $pgport
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'webgres$pgss'
webgres.listen = '127.0.0.1:$port'
webgres.database = 'hello_world'
# TFB requirement 7: each query with the semantics of its own round trip
webgres.share_read_transactions = off
webgres.workers = $1
webgres.executors = $2
max_worker_processes = $((workers + 8))
max_connections = 200
CONF
} | "$cluster" as-owner tee "$data/webgres-run.conf" >/dev/null
}
write_conf 0 0
# cluster.sh init wrote the port line before the include; keep them agreeing.
"$cluster" as-owner sed -i "s/^port = .*/port = $pgport/" "$data/postgresql.conf"

stop() {
	echo "webgres: stopping the cluster"
	"$cluster" stop "$data" fast || true
}
stop_on_exit stop

"$cluster" start "$data"

PGHOST=$data/socket PGPORT=$pgport "$src/scripts/tfb-db.sh"
"$cluster" psql "$data" -d hello_world -c 'SET ROLE benchmarkdbuser' -f "$src/sql/examples/hello.sql"

# webgres.workers follows a reload: start the pool now that its database is there.
write_conf "$workers" "$executors"
"$cluster" as-owner pg_ctl -D "$data" reload >/dev/null

# Wait for the first answer from the HTTP workers.
for _ in $(seq 1 100); do
	curl -fsS -o /dev/null "http://127.0.0.1:$port/plaintext" 2>/dev/null && break
	sleep 0.1
done

cat <<MSG

webgres is serving http://127.0.0.1:$port  ($workers workers, database hello_world)

  curl http://127.0.0.1:$port/hello/world
  curl http://127.0.0.1:$port/plaintext
  curl http://127.0.0.1:$port/json
  curl http://127.0.0.1:$port/db
  curl 'http://127.0.0.1:$port/queries?queries=5'
  curl http://127.0.0.1:$port/fortunes
  curl 'http://127.0.0.1:$port/updates?queries=5'
  curl 'http://127.0.0.1:$port/cached-queries?count=5'

psql (routes are rows of webgres.routes):
  psql -h $data/socket -p $pgport -U postgres hello_world
  psql 'postgresql://benchmarkdbuser:benchmarkdbpass@127.0.0.1:$pgport/hello_world'

Server log: $data/postgres.log.  Ctrl-C (or SIGTERM) stops it.
MSG

# Serve until told to stop, or until the postmaster goes away.
serve_until_stopped "$data"
echo "webgres: the cluster stopped" >&2
exit 1
