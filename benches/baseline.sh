#!/usr/bin/env bash
# Builds fctlab-sim (the Rust core alone) as it was at a git revision and prints the binary's
# path, for a before-and-after in one benchmark run:
#
#   .venv/bin/fctlab bench --against "$(benches/baseline.sh REV)"
#
# The build is kept under $FCTLAB_BASELINE_DIR (default: $TMPDIR/fctlab-baseline) by commit.
set -euo pipefail
rev=${1:?usage: benches/baseline.sh REV}
root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
if ! sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}"); then
  echo "baseline.sh: error: '$rev' is not a revision of $root" >&2
  exit 2
fi
out=${FCTLAB_BASELINE_DIR:-${TMPDIR:-/tmp}/fctlab-baseline}/$sha
bin=$out/target/release/fctlab-sim
if [ ! -x "$bin" ]; then
  rm -rf "$out/src"
  mkdir -p "$out/src"
  trap 'rm -rf "$out/src"' EXIT
  git -C "$root" archive "$sha" | tar -x -C "$out/src"
  echo "baseline.sh: building fctlab-sim at ${sha:0:12} (a minute or two)" >&2
  CARGO_TARGET_DIR=$out/target cargo build --release --quiet -p fctlab-sim --manifest-path "$out/src/Cargo.toml" >&2
fi
echo "$bin"
