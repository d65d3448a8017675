#!/usr/bin/env bash
# Builds the axum reference (bench/reference/axum) from crates.io alone and
# prints the path of its binary on its last line.  Cargo's home (the
# downloaded crates) and the target directory stay in a cache directory of
# the project, AXUM_CACHE (default .cache/axum at the top of the tree), so
# that nothing lands in the user's ~/.cargo and a second build is quick.
#
#   bench/reference/axum/build.sh
#
# --locked: the committed Cargo.lock decides every version; the sparse
# protocol reads the index from index.crates.io, not from a git clone.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cache=${AXUM_CACHE:-$root/.cache/axum}
mkdir -p "$cache"
command -v cargo >/dev/null || { echo "axum reference: cargo is not installed (rustup, or Debian's cargo)" >&2; exit 1; }
export CARGO_HOME=$cache/cargo CARGO_TARGET_DIR=$cache/target
export CARGO_REGISTRIES_CRATES_IO_PROTOCOL=sparse CARGO_TERM_COLOR=never
# rustup's cargo finds its toolchain through RUSTUP_HOME, which a changed
# CARGO_HOME does not move
[ -n "${RUSTUP_HOME:-}" ] || [ ! -d "$HOME/.rustup" ] || export RUSTUP_HOME=$HOME/.rustup
cargo build --release --locked --quiet --manifest-path "$here/Cargo.toml" >&2
echo "$CARGO_TARGET_DIR/release/axum-pg"
