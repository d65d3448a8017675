#!/usr/bin/env bash
# Makes the TechEmpower framework directory for webgres: a copy of this
# repository's tracked files with webgres.dockerfile and
# benchmark_config.json at its top.
#
#   docker/tfb/export.sh FrameworkBenchmarks/frameworks/C/webgres
set -euo pipefail
dest=${1:?usage: export.sh DEST_DIR}
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$dest"
git -C "$top" archive --format=tar HEAD | tar -x -C "$dest"
cp "$top/docker/tfb/webgres.dockerfile" "$top/docker/tfb/benchmark_config.json" "$dest/"
echo "exported to $dest"
