#!/usr/bin/env bash
# Runs webgres with the TechEmpower routes: Postgres 15 with webgres and
# pg_stat_statements preloaded, serving database hello_world over HTTP.
# Stays in the foreground; SIGTERM or SIGINT stops Postgres cleanly.
#
#   docker/start.sh              init on first use, load TFB, serve
#   docker/start.sh --init-only  init and load TFB, then stop (image build)
#
# Settings (environment):
#   WEBGRES_DATA       cluster directory      (default /var/lib/webgres/data)
#   WEBGRES_LISTEN     HTTP address:port      (default 0.0.0.0:8080)
#   WEBGRES_WORKERS    HTTP workers           (default: two per CPU)
#   PGPORT             Postgres port          (default 5432)
#   WEBGRES_PG_LISTEN  Postgres listen_addresses, e.g. '*' to let TFB's
#                      verifier read pg_stat_statements (default: socket only)
#
# Settings are written when the cluster is created; WEBGRES_LISTEN,
# WEBGRES_WORKERS and WEBGRES_PG_LISTEN are applied again on every start.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/scripts/cluster.sh
data=${WEBGRES_DATA:-/var/lib/webgres/data}
listen=${WEBGRES_LISTEN:-0.0.0.0:8080}
workers=${WEBGRES_WORKERS:-$(( 2 * $(nproc) ))}
pgport=${PGPORT:-5432}
pg_listen=${WEBGRES_PG_LISTEN:-}
init_only=false
[ "${1:-}" = --init-only ] && init_only=true

log() { echo "webgres: $*" >&2; }

# Per-start settings go to their own file, included last, so they win.
# $1: the number of HTTP workers (0 while the database is being loaded, so
# that nothing answers from a half-made hello_world).
write_runtime_conf() {
	{
		echo "# written by docker/start.sh on every start"
		echo "webgres.listen = '$listen'"
		echo "webgres.workers = $1"
		# TFB requirement 7: each query with the semantics of its own round
		# trip, so no read transaction shared between requests.
		echo "webgres.share_read_transactions = off"
		echo "max_worker_processes = $((workers + 8))"
		echo "listen_addresses = '$pg_listen'"
	} | "$cluster" as-owner tee "$data/webgres.runtime.conf" >/dev/null
}

# Another server on this data directory or these ports: say which and stop
# (a second webgres would share the HTTP port through SO_REUSEPORT).
http_port=${listen##*:}
$init_only && http_port=
"$cluster" check-free "$data" "${pg_listen:+$pgport}" "$http_port"

# Installed before anything starts: the workers answer before pg_ctl's wait
# for the start returns, and a signal that came then used to kill this
# script and leave Postgres running.  Bash runs the trap once the command in
# the foreground returns.
stopping=false
stop() {
	$stopping && return
	stopping=true
	log "stopping"
	"$cluster" stop "$data" fast || true
	exit 0
}
trap stop TERM INT

if [ ! -f "$data/PG_VERSION" ]; then
	log "creating cluster in $data"
	mkdir -p "$(dirname "$data")"
	# TFB's own Postgres settings (scripts/tfb-postgres.conf, the copy make
	# run and the benches use too).
	{
		cat "$here/scripts/tfb-postgres.conf"
		cat <<-CONF
		shared_preload_libraries = 'webgres,pg_stat_statements'
		webgres.database = 'hello_world'
		ssl = off
		include_if_exists = 'webgres.runtime.conf'
		CONF
	} | "$cluster" init "$data" "$pgport"
	# Clients from outside the container (TFB's verifier reading the counts)
	# log in with a password; the socket stays trust for the scripts.
	echo "host all all all scram-sha-256" | "$cluster" as-owner tee -a "$data/pg_hba.conf" >/dev/null
	write_runtime_conf 0
	"$cluster" start "$data"
	PGHOST=$data/socket PGPORT=$pgport "$here/scripts/tfb-db.sh"
	"$cluster" stop "$data"
	log "cluster ready"
fi
$init_only && exit 0

write_runtime_conf "$workers"
"$cluster" start "$data"
pid=$(head -n 1 "$data/postmaster.pid")

log "serving http://$listen/ (database hello_world, $workers workers)"
# Sleep in the background and wait for it, so a signal is handled at once.
while kill -0 "$pid" 2>/dev/null; do
	sleep 1 &
	wait $! || true
done
log "postgres exited; see $data/postgres.log"
exit 1
