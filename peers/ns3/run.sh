#!/usr/bin/env bash
# Build and run the ns-3 reference benchmark (8-flow 10 Gbps dumbbell).
#
# Usage: peers/ns3/run.sh [extra program args, e.g. --verbose=1 --simTime=0.1]
#
# Environment:
#   NS3_VENV   virtualenv holding the ns3 wheel     (default /tmp/ns3venv)
#   NS3_PKG    pip requirement for ns-3             (default ns3==3.44.post0)
#   PYTHON     interpreter used to create the venv  (default python3)
#   BUILD_DIR  where the binary is built            (default peers/ns3/build)
#   RUNS       number of back-to-back runs          (default 1)
#   CXX        C++ compiler                         (default g++)
#
# Prints, per run, one line:
#   ns3 dumbbell8_10g: sim_s=1.0 wall_s=... data_pkts=... pkts_per_wall_s=...
#   goodput_gbps=... peak_rss_mb=...
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NS3_VENV="${NS3_VENV:-/tmp/ns3venv}"
NS3_PKG="${NS3_PKG:-ns3==3.44.post0}"
PYTHON="${PYTHON:-python3}"
BUILD_DIR="${BUILD_DIR:-$HERE/build}"
RUNS="${RUNS:-1}"
CXX="${CXX:-g++}"

die() {
    echo "run.sh: error: $*" >&2
    exit 1
}

command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found (set PYTHON=...)"
command -v "$CXX" >/dev/null 2>&1 || die "C++ compiler '$CXX' not found (set CXX=...)"

# 1. virtualenv
if [[ ! -x "$NS3_VENV/bin/python" ]]; then
    echo "run.sh: creating venv $NS3_VENV" >&2
    "$PYTHON" -m venv "$NS3_VENV" || die "could not create venv at $NS3_VENV"
fi
VPY="$NS3_VENV/bin/python"

# Directory the ns3 wheel unpacks into (<site-packages>/ns3 with include/ and lib64/).
ns3_root() {
    "$VPY" - <<'EOF'
import os, sysconfig
for key in ("platlib", "purelib"):
    d = os.path.join(sysconfig.get_paths()[key], "ns3")
    if os.path.isdir(os.path.join(d, "include", "ns3")):
        print(d)
        break
EOF
}

# 2. ns-3 from PyPI. Only the C++ headers and shared libraries in the wheel are
#    used, so its Python-binding dependencies (cppyy, built from source) are
#    skipped with --no-deps.
NS3_ROOT="$(ns3_root)"
if [[ -z "$NS3_ROOT" ]]; then
    echo "run.sh: installing $NS3_PKG into $NS3_VENV (about 70 MB download)" >&2
    PIP_LOG="$(mktemp /tmp/ns3-pip.XXXXXX.log)"
    if ! "$VPY" -m pip install --no-deps "$NS3_PKG" >"$PIP_LOG" 2>&1; then
        tail -n 30 "$PIP_LOG" >&2
        die "pip install $NS3_PKG failed (full log: $PIP_LOG)"
    fi
    rm -f "$PIP_LOG"
    NS3_ROOT="$(ns3_root)"
    [[ -n "$NS3_ROOT" ]] || die "ns3 installed but include/ns3 not found in the venv's site-packages"
fi

LIBDIR=""
for d in "$NS3_ROOT/lib64" "$NS3_ROOT/lib"; do
    if compgen -G "$d/libns3*-core*.so" >/dev/null; then
        LIBDIR="$d"
        break
    fi
done
[[ -n "$LIBDIR" ]] || die "no libns3*-core*.so under $NS3_ROOT/lib64 or $NS3_ROOT/lib"

# Library name prefix, e.g. ns3.44 from libns3.44-core.so
CORE_LIB="$(basename "$(compgen -G "$LIBDIR/libns3*-core*.so" | head -n 1)")"
PREFIX="${CORE_LIB#lib}"
PREFIX="${PREFIX%-core*}"

# 3. build (when missing, when the source changed, or when built against another venv)
mkdir -p "$BUILD_DIR"
BIN="$BUILD_DIR/dumbbell_8flow"
SRC="$HERE/dumbbell_8flow.cc"
STAMP="$BIN.libdir"
if [[ ! -x "$BIN" || "$SRC" -nt "$BIN" || "$0" -nt "$BIN" ]] ||
    [[ "$(cat "$STAMP" 2>/dev/null || true)" != "$LIBDIR" ]]; then
    echo "run.sh: compiling $SRC against $NS3_ROOT ($PREFIX)" >&2
    # The same preprocessor definitions the wheel's libraries were built with
    # (see lib64/cmake/ns3/ns3Targets.cmake), so inline header code matches.
    "$CXX" -std=c++20 -O2 \
        -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
        -I"$NS3_ROOT/include" \
        "$SRC" -o "$BIN.tmp" \
        -L"$LIBDIR" -Wl,-rpath,"$LIBDIR" \
        -l"$PREFIX-applications" -l"$PREFIX-internet" -l"$PREFIX-traffic-control" \
        -l"$PREFIX-point-to-point" -l"$PREFIX-network" -l"$PREFIX-core" \
        || die "compilation failed"
    mv "$BIN.tmp" "$BIN"
    echo "$LIBDIR" >"$STAMP"
fi

# 4. run
for ((i = 1; i <= RUNS; i++)); do
    "$BIN" "$@" || die "benchmark exited with status $?"
done
