#!/usr/bin/env bash
# Builds and installs webgres into the system's Postgres 15, installing the
# Debian packages it needs first. The image runs this at build time; it works
# the same on any Debian 12 machine as root.
#
#   docker/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
make -s clean >/dev/null 2>&1 || true
make -s -j"$(nproc)"
make -s install
