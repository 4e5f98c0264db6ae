"""The testbed's delay line (``delayline.c``): build and launch.

The kernels the testbed targets have no netem, so a link's propagation delay is emulated by
a small C program that forwards frames between two veths of a node in the middle of the
link, each one ``delay`` after it arrived (see the comment at the top of ``delayline.c``).
It is compiled on first use with the C compiler the BPF programs already need (clang; or
``$CC``) into the kernel build directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .. import kernel as K
from .shell import TestbedError

SOURCE = Path(__file__).with_name("delayline.c")
BINARY = "fctlab-delayline"


def compiler() -> str | None:
    for cc in (os.environ.get("CC"), "clang", "cc", "gcc"):
        if cc and shutil.which(cc):
            return cc
    return None


def binary() -> Path:
    """Path of the compiled delay line, compiling it when missing or older than the source."""
    return compiled(SOURCE, BINARY, what="emulating link delay")


def compiled(source: Path, name: str, *, what: str, libs: tuple = ()) -> Path:
    """Path of the program ``name`` compiled from the C file ``source`` (linked with
    ``libs``), compiling it into the kernel build directory when missing or older than the
    source. ``what`` names the feature that needs it, for the error."""
    try:
        out = K.build_dir() / name
    except K.KernelError:  # no kernel/ directory (an installed package): use the cache
        out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fctlab" / name
        out.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_file():
        raise TestbedError(f"{source} not found: the fctlab installation is incomplete (reinstall it)")
    if out.is_file() and out.stat().st_mtime >= source.stat().st_mtime:
        return out
    cc = compiler()
    if cc is None:
        raise TestbedError(f"{what} needs a C compiler for {source.name} (apt package clang)")
    tmp = out.with_name(f"{name}.{os.getpid()}.tmp")
    try:
        p = subprocess.run(
            [cc, "-O2", "-Wall", "-o", str(tmp), str(source), *libs], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        raise TestbedError(f"compiling {source.name} took over 120 s") from None
    if p.returncode != 0:
        lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
        raise TestbedError(f"compiling {source.name} failed: {lines[-1] if lines else 'exit ' + str(p.returncode)}")
    tmp.replace(out)
    return out
