#!/usr/bin/env bash
# Installs the Python libraries the tests need (test/requirements.txt) into
# a virtual environment of their own, made with Debian's python3 and
# readable by every user: the tests run as the unprivileged 'postgres'
# user, who cannot see root's Python.  Quick when nothing changed: a stamp
# beside the environment holds the requirements it was made from.
#
#   scripts/pydeps.sh        prints the environment's python on its last line
#
# WEBGRES_VENV names another place (default /opt/webgres-test-venv).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
venv=${WEBGRES_VENV:-/opt/webgres-test-venv}
req=$src/test/requirements.txt
stamp=$venv/.requirements

if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
	echo "webgres: installing the tests' Python libraries into $venv" >&2
	/usr/bin/python3 -m venv "$venv"
	"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
	cp "$req" "$stamp"
	chmod -R a+rX "$venv"
fi
echo "$venv/bin/python"
