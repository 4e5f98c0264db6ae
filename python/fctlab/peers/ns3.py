"""ns-3 as a peer simulator: the ``ns3`` wheel from PyPI (its C++ headers and shared libraries)
in a virtualenv of fctlab's cache, and one generic runner compiled against it
(``ns3_runner.cc``, shipped beside this module), which runs a plan written as text by
``fctlab.crosscheck.ns3``.

Layout under ``$FCTLAB_CACHE`` (default ``~/.cache/fctlab``)::

    peers/ns3/venv/                  the virtualenv holding ns3==3.44.post0 (pip --no-deps)
    peers/ns3/ns3_runner-<hash>      the runner, compiled once per source hash

The wheel's Python bindings (cppyy) are not used, so its dependencies are not installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from .cache import cache_dir as peers_cache

#: The pip requirement of ns-3 (``FCTLAB_NS3_PKG`` overrides it).
PACKAGE = "ns3==3.44.post0"
#: The runner's C++ source, package data of fctlab.
SOURCE = Path(__file__).with_name("ns3_runner.cc")
#: The wheel's libraries the runner links (prefix ``ns3.44-``).
LIBS = ("applications", "internet", "traffic-control", "point-to-point", "network", "core")
#: The preprocessor definitions the wheel's libraries were built with (its
#: ``lib64/cmake/ns3/ns3Targets.cmake``), so that inline header code matches.
DEFINES = ("-DNS3_BUILD_PROFILE_RELEASE", "-DNS3_LOG_ENABLE", "-DNS3_ASSERT_ENABLE")


#: Wall seconds of the last build's steps ("pip_s", "compile_s"), without lock waits.
TIMES: dict = {}


class BuildError(RuntimeError):
    """ns-3 could not be installed or the runner not compiled; the message says which (one line)."""


def how_to_get() -> str:
    return (
        f"fctlab installs {PACKAGE} from PyPI (pip --no-deps, about 70 MB) into its cache and compiles its runner "
        "with g++ on first use (or: fctlab peers build ns3); needs network access to PyPI and a C++20 g++"
    )


def cache_dir() -> Path:
    return peers_cache() / "ns3"


def source_hash(source: Optional[Path] = None) -> str:
    src = Path(source) if source else SOURCE
    h = hashlib.sha256(src.read_bytes())
    h.update(" ".join(DEFINES).encode())
    return h.hexdigest()[:16]


def runner_path(source: Optional[Path] = None) -> Path:
    return cache_dir() / f"ns3_runner-{source_hash(source)}"


def find() -> Optional[Path]:
    """The compiled runner of the current source, or None."""
    p = runner_path()
    return p if p.is_file() and os.access(p, os.X_OK) else None


def _venv_python() -> Path:
    return cache_dir() / "venv" / "bin" / "python"


def ns3_root() -> Optional[Path]:
    """``<site-packages>/ns3`` of the cache's virtualenv (with include/ns3), or None."""
    vpy = _venv_python()
    if not vpy.exists():
        return None
    code = (
        "import os, sysconfig\n"
        "for k in ('platlib', 'purelib'):\n"
        "    d = os.path.join(sysconfig.get_paths()[k], 'ns3')\n"
        "    if os.path.isdir(os.path.join(d, 'include', 'ns3')):\n"
        "        print(d); break\n"
    )
    out = subprocess.run([str(vpy), "-c", code], capture_output=True, text=True)
    d = out.stdout.strip()
    return Path(d) if d else None


def lib_dir(root: Path) -> tuple:
    """(directory of the wheel's libraries, their name prefix such as ``ns3.44``)."""
    for d in (root / "lib64", root / "lib"):
        cores = sorted(d.glob("libns3*-core*.so")) if d.is_dir() else []
        if cores:
            name = cores[0].name[len("lib") :]
            return d, name[: name.index("-core")]
    raise BuildError(f"no libns3*-core*.so under {root}/lib64 or {root}/lib (is the ns3 wheel complete?)")


def _run(cmd: list, what: str, log: Path, locked: bool = True) -> float:
    """Runs `cmd`, a heavy one under the machine's build lock when there is one
    (``FCTLAB_BUILD_LOCK``: a file locked with flock(2), as the ``flock`` command does).
    Returns its wall time in seconds, not counting the wait for the lock."""
    lock = os.environ.get("FCTLAB_BUILD_LOCK") if locked else None
    lock_fh = open(lock, "a") if lock else None
    try:
        if lock_fh:
            fcntl.flock(lock_fh, fcntl.LOCK_EX)
        t0 = time.perf_counter()
        with open(log, "w") as fh:
            rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
        wall = time.perf_counter() - t0
    finally:
        if lock_fh:
            lock_fh.close()
    if rc != 0:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
        raise BuildError(f"{what} failed (exit {rc}; log {log}): {tail}")
    return wall


def install(say: Callable = lambda m: None) -> Path:
    """The ns3 wheel installed into the cache's virtualenv (once); returns its ``ns3`` directory."""
    root = ns3_root()
    if root:
        return root
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    vpy = _venv_python()
    if not vpy.exists():
        say(f"creating a virtualenv in {d / 'venv'}")
        _run([sys.executable, "-m", "venv", str(d / "venv")], "creating the virtualenv", d / "venv.log", locked=False)
    pkg = os.environ.get("FCTLAB_NS3_PKG", PACKAGE)
    say(f"installing {pkg} from PyPI (pip --no-deps, about 70 MB)")
    TIMES["pip_s"] = _run(
        [str(vpy), "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", pkg],
        f"pip install {pkg}",
        d / "pip.log",
    )
    root = ns3_root()
    if root is None:
        raise BuildError(f"{pkg} installed but include/ns3 is not in {d / 'venv'}'s site-packages")
    return root


def compile_runner(root: Path, source: Optional[Path] = None, say: Callable = lambda m: None) -> Path:
    src = Path(source) if source else SOURCE
    out = runner_path(src)
    libdir, prefix = lib_dir(root)
    cxx = os.environ.get("CXX", "g++")
    say(f"compiling {src.name} against {root} ({prefix}), about a minute")
    # the source as hashed, so that the runner's name always matches what it was built from
    copy = out.with_name(out.name + ".cc")
    copy.write_bytes(src.read_bytes())
    if runner_path(copy) != out:
        raise BuildError(f"{src} changed while it was being copied; build again")
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    cmd = [cxx, "-std=c++20", "-O2", *DEFINES, f"-I{root / 'include'}", str(copy), "-o", str(tmp)]
    cmd += [f"-L{libdir}", f"-Wl,-rpath,{libdir}"] + [f"-l{prefix}-{lib}" for lib in LIBS]
    try:
        TIMES["compile_s"] = _run(cmd, f"compiling {src.name}", out.with_name("compile.log"))
    except FileNotFoundError:
        raise BuildError(f"the C++ compiler {cxx!r} was not found (set CXX)") from None
    os.replace(tmp, out)
    return out


def build(source=None, log: Callable = lambda m: None) -> Path:
    """Installs the wheel (when missing) and compiles the runner (when its source changed);
    returns the runner. `source`: another runner source (default: the packaged one).
    Raises BuildError (one line)."""
    say = log
    src = Path(source) if source else SOURCE
    out = runner_path(src)
    if out.is_file():
        return out
    TIMES.clear()
    try:
        root = install(say)
    except FileNotFoundError as e:
        raise BuildError(f"cannot install ns-3: {e}") from None
    compile_runner(root, src, say)
    pip = f"pip {TIMES['pip_s']:.0f} s, " if "pip_s" in TIMES else ""
    say(f"ns-3 ready ({pip}compile {TIMES['compile_s']:.0f} s, not counting waits for the build lock): {out}")
    return out


def ensure(say: Callable = lambda m: None) -> Path:
    """The runner, built on first use."""
    return find() or build(log=say)


def _main() -> int:  # python -m fctlab.peers.ns3
    try:
        print(build(log=lambda m: print(f"[ns3] {m}", file=sys.stderr, flush=True)))
    except BuildError as e:
        print(f"ns3: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main())
