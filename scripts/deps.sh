#!/usr/bin/env bash
# Installs the Debian packages webgres needs to build, test and run, when any
# is missing. Quick when everything is present; safe to run again.
set -euo pipefail

# postgresql-15 carries the contrib modules (pg_stat_statements): Debian's
# postgresql-contrib-15 is only a name it provides, which dpkg never reports
# as installed, so listing it would run apt-get on every call. libkrb5-dev:
# the server's libpq/libpq.h (PqCommMethods, for LISTEN in src/events/events.c)
# includes gssapi.h. python3: make test checks the bench's report code;
# python3-venv: scripts/pydeps.sh keeps the tests' Python libraries apart.
# haproxy: the scale-out topology (scripts/haproxy, make cluster, its test).
# openssl, libio-socket-ssl-perl: the TLS tests make certificates and speak
# TLS; nghttp2-client: h2load for the TLS bench tier.  unzip: the wheels that
# carry Postgres 16, 17 and 18, bzip2: the Postgres source pgcrypto is built
# from for 18 (scripts/postgres.sh).  libwslay-dev: libh2o's h2o/websocket.h
# includes wslay/wslay.h, which libh2o-evloop-dev does not bring (WebSocket
# routes; the library itself, libwslay1, libh2o-evloop already links).
packages=(postgresql-15 postgresql-server-dev-15 unzip bzip2
          libh2o-evloop-dev libwslay-dev wrk libipc-run-perl gcc make pkg-config curl
          libkrb5-dev python3 python3-venv
          haproxy openssl libio-socket-ssl-perl nghttp2-client)
[ "${WEBGRES_DEPS_EXTRA:-}" ] && packages+=(${WEBGRES_DEPS_EXTRA})

# What only the tests need, installed when WEBGRES_DEPS_TESTS is set (make
# test sets it; the image and make run do without): the browser tests
# (test/browser) drive Debian's chromium through its chromium-driver, with
# selenium from test/requirements.txt (scripts/pydeps.sh).  Nothing
# downloads a browser build: the driver is named explicitly.  testssl.sh:
# t/037_security_headers.pl has it judge the TLS listener.
[ "${WEBGRES_DEPS_TESTS:-}" ] && packages+=(chromium chromium-driver testssl.sh)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "webgres: missing packages: ${missing[*]}" >&2
	echo "webgres: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "webgres: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The server package would create and start a default cluster; webgres runs
# its own clusters, so keep the packaged one from starting.
if [ ! -e /etc/postgresql-common/createcluster.d/webgres.conf ]; then
	mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/webgres.conf
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
