#!/usr/bin/env bash
# make demo: serves the board (examples/board) over HTTPS with HTTP/2 from
# an embedded local cluster until Ctrl-C or SIGTERM, then stops it cleanly.
#
#   PORT       HTTPS port (default 8443)
#   HTTP_PORT  cleartext port, redirected to HTTPS (default 8081)
#   PGPORT     Postgres port (default 5433); Unix socket in the data directory
#   WEBGRES_DATA  data directory (default /var/tmp/webgres-demo-$PGPORT, with
#              -pgN after it under make demo PG=N: a cluster is one version's);
#              kept between runs, so accounts and items persist (remove it
#              to load examples/board/board.sql afresh)
#   DEMO_UP_ONLY=1  set up, print, and exit with the cluster running
#              (the browser test does this; 'demo.sh down' stops it)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
port=${PORT:-8443}
http_port=${HTTP_PORT:-8081}
pgport=${PGPORT:-5433}
data=${WEBGRES_DATA:-/var/tmp/webgres-demo-$pgport${PG:+-pg$PG}}
cluster=$src/scripts/cluster.sh
. "$src/scripts/serve-lib.sh"

if [ "${1:-}" = down ]; then
	"$cluster" stop "$data" fast
	exit 0
fi

# The board keeps its passwords with pgcrypto, which not every installation
# of docs/versions.md has (the Postgres 16 there does not).
if [ ! -f "$(${PG_CONFIG:-pg_config} --pkglibdir)/pgcrypto.so" ]; then
	echo "webgres: the board needs pgcrypto, which $(${PG_CONFIG:-pg_config} --version) here lacks (docs/versions.md)" >&2
	exit 1
fi
"$cluster" check-free "$data" "$pgport" "$port"
"$cluster" check-free "$data" "" "$http_port"

if [ ! -f "$data/PG_VERSION" ]; then
	echo "webgres: creating a cluster in $data"
	"$cluster" init "$data" "$pgport" <<CONF
include_if_exists = 'webgres-demo.conf'
CONF
fi

# A self-signed certificate for localhost, made once per cluster (the
# browser will ask to trust it); and the secret that signs the sessions,
# made once and kept out of the configuration files others may read.
if [ ! -f "$data/demo-cert.pem" ]; then
	"$cluster" as-owner openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -days 365 -subj '/CN=localhost' \
		-addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
		-keyout "$data/demo-key.pem" -out "$data/demo-cert.pem" 2>/dev/null
	"$cluster" as-owner chmod 600 "$data/demo-key.pem"
fi
if [ ! -f "$data/demo-jwt.secret" ]; then
	"$cluster" as-owner sh -c "umask 077; openssl rand -base64 48 > '$data/demo-jwt.secret'"
fi

# The front end is served from a copy inside the data directory: the
# checkout may sit where the server's OS user cannot read.
"$cluster" as-owner rm -rf "$data/board-static"
"$cluster" as-owner mkdir -p "$data/board-static"
tar -C "$src/examples/board/static" -cf - . | "$cluster" as-owner tar -C "$data/board-static" -xf -

"$cluster" as-owner tee "$data/webgres-demo.conf" >/dev/null <<CONF
# written by scripts/demo.sh
port = $pgport
listen_addresses = ''
shared_preload_libraries = 'webgres'
webgres.database = 'board'
webgres.listen = '127.0.0.1:$http_port'
webgres.tls_listen = '127.0.0.1:$port'
webgres.tls_cert_file = 'demo-cert.pem'
webgres.tls_key_file = 'demo-key.pem'
webgres.tls_redirect = on
webgres.jwt_cookie = '__Host-board_token'
webgres.anon_role = 'board_anon'
webgres.workers = ${WORKERS:-2}
webgres.executors = ${EXECUTORS:-2}
max_worker_processes = 16
webgres.jwt_secret_file = 'demo-jwt.secret'
# The board's attachments: 5 MB a file (its route's max_body_size).
webgres.max_body_size = '6MB'
CONF
"$cluster" as-owner sed -i "s/^port = .*/port = $pgport/" "$data/postgresql.conf"

stop() {
	echo "webgres: stopping the cluster"
	"$cluster" stop "$data" fast || true
}
[ -z "${DEMO_UP_ONLY:-}" ] && stop_on_exit stop

"$cluster" start "$data"
# The application is loaded into a new database only: board.sql starts
# its schema afresh, and the accounts and items of earlier runs are kept.
if ! "$cluster" psql "$data" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'board'" | grep -q 1; then
	"$cluster" psql "$data" -d postgres -c 'CREATE DATABASE board'
	"$cluster" psql "$data" -d board -v static_dir="$data/board-static" \
		-c 'SET client_min_messages = warning' -f "$src/examples/board/board.sql" >/dev/null
fi

# Wait for the first answer over HTTPS.
for _ in $(seq 1 100); do
	curl -ksf -o /dev/null "https://127.0.0.1:$port/" 2>/dev/null && break
	sleep 0.1
done

cat <<MSG

The board is serving https://localhost:$port/  (HTTP/2 over TLS; http://localhost:$http_port/ redirects there)

The certificate is self-signed: the browser asks once whether to trust it.
Sign up as two users in two browser windows (one private): each sees the
other's public items appear as they are added, and never their private ones.

  curl -k https://localhost:$port/api/me
  psql -h $data/socket -p $pgport -U postgres board

Server log: $data/postgres.log.  Ctrl-C (or SIGTERM) stops it.
MSG

[ -n "${DEMO_UP_ONLY:-}" ] && exit 0

# Serve until told to stop, or until the postmaster goes away.
serve_until_stopped "$data"
echo "webgres: the cluster stopped" >&2
exit 1
