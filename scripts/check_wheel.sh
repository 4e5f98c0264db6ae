#!/usr/bin/env bash
# Checks the wheel in dist/ (`make wheel`) as a user gets it: installs it into a fresh virtual
# environment in a temporary folder (its dependencies, numpy, pandas and pyarrow, from pip's
# usual sources), then, with neither cargo nor a C compiler on PATH, runs the demo scenario
# with the installed `fctlab` and checks that `import fctlab` loads none of the extras'
# libraries (matplotlib, duckdb, pyelftools, dask).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf '[wheel-check] %s\n' "$*" >&2; }
die() { printf 'wheel-check: error: %s\n' "$*" >&2; exit 1; }

shopt -s nullglob
wheels=(dist/fctlab-*.whl)
[ "${#wheels[@]}" -eq 1 ] || die "expected one wheel in dist/, found ${#wheels[@]} (make wheel builds it)"
wheel=$root/${wheels[0]}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fctlab-wheel-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}
say "installing $(basename "$wheel") into a fresh virtual environment"
"$PY" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"

# The only commands on PATH: the environment's and a few basic tools (no cargo, no cc).
mkdir "$tmp/bin" "$tmp/home"
for tool in sh env; do
    ln -s "$(command -v "$tool")" "$tmp/bin/$tool"
done
bare() { (cd "$tmp" && env -i HOME="$tmp/home" LANG=C.UTF-8 PATH="$tmp/venv/bin:$tmp/bin" "$@"); }
for tool in cargo rustc cc gcc clang; do
    if bare sh -c "command -v $tool" >/dev/null; then die "$tool is on the check's PATH"; fi
done

say "fctlab run scenarios/examples/demo.toml, from the installed wheel"
bare fctlab run "$root/scenarios/examples/demo.toml" --out "$tmp/demo"
for f in flows.parquet summary.json; do
    [ -s "$tmp/demo/$f" ] || die "fctlab run wrote no $f"
done
bare python - "$tmp/venv" <<'EOF'
import sys

import fctlab

venv = sys.argv[1]
assert fctlab.__file__.startswith(venv), f"fctlab imported from {fctlab.__file__}, not from the wheel"
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "duckdb", "elftools", "dask", "distributed"))
assert not loaded, f"import fctlab loads {loaded}"
EOF
say "ok: $(basename "$wheel") installs and runs without Rust or a C compiler"
