#!/usr/bin/env bash
# Sets up everything fctlab needs on a fresh machine: checks the toolchains, creates .venv,
# installs the Python build and test dependencies, and builds the Rust core in release mode
# into the virtual environment. Safe to run again: it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

apt_install() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing Debian packages: $*"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
    else
        return 1
    fi
}

PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || apt_install python3 python3-venv python3-pip || die "python3 not found; install Python 3.9 or newer"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' || die "Python 3.9 or newer is needed ($("$PY" --version))"

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    apt_install cargo rustc || die "cargo (Rust) not found; install Rust 1.74 or newer (https://rustup.rs)"
fi
# rustfmt and clippy for `make lint`, where rustup manages the toolchain
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        rustup component add rustfmt clippy >/dev/null 2>&1 || say "note: could not add rustfmt/clippy; \`make lint\` needs them"
    else
        say "note: rustfmt/clippy not found; \`make lint\` needs them (rustup component add rustfmt clippy)"
    fi
fi
command -v cc >/dev/null 2>&1 || apt_install build-essential || die "a C compiler (cc) is needed to link the Rust core"

# Kernel side (ATCP in BPF, the namespace testbed): compilers and tools from Debian. Only
# installed where we are root with apt; elsewhere those tests skip and say why.
for tool in clang bpftool tc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        apt_install clang llvm libbpf-dev bpftool iproute2 || say "note: clang/bpftool/iproute2 not installed (not root or no apt); kernel and testbed tests will skip"
        break
    fi
done
# ns-2.35, the papers' simulator, for `fctlab crosscheck --against ns2` and its tests.
if ! command -v ns >/dev/null 2>&1; then
    apt_install ns2 || say "note: ns2 (ns-2.35) not installed (not root or no apt); crosscheck tests will skip"
fi
if [ ! -f /usr/include/bpf/bpf_helpers.h ]; then
    apt_install libbpf-dev || true
fi

if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    "$PY" -m venv .venv 2>/dev/null || { apt_install python3-venv && "$PY" -m venv .venv; } || die "cannot create a virtual environment (python3 -m venv)"
fi
say "installing Python dependencies"
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt

say "building the Rust core (release) into .venv"
# maturin's own progress lines are left out; a failed build stops here (an older build in
# .venv must not pass for this one)
set +e
built=$(VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --release --quiet 2>&1)
rc=$?
set -e
printf '%s\n' "$built" | grep -v -E '^(📦|✏️|🛠|🔗|🍹|⚠️  Warning: You|Installed|Requirement already satisfied|Looking in links|Ignoring )' >&2 || true
[ "$rc" -eq 0 ] || die "building the Rust core failed (maturin exit status $rc; the messages are above)"
.venv/bin/python -c 'import fctlab' || die "the fctlab package did not build; see the messages above"
say "ready: .venv/bin/fctlab"
