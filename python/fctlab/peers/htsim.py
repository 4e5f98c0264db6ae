"""htsim (Broadcom/csg-htsim), built from its source for ``fctlab crosscheck --against htsim``.

The build copies the checkout's ``sim/`` directory into a temporary directory, builds htsim's
library there (``make libhtsim.a``, htsim's own Makefile) and compiles fctlab's driver
(``htsim_driver.cpp`` beside this file: it wires htsim's TcpSrc/DCTCPSrc, TcpSink,
RoceSrc/RoceSink, HPCCSrc/HPCCSink, SwiftSrc/SwiftSink, Queue, ECNQueue, LosslessOutputQueue,
LosslessInputQueue, FairPriorityQueue, FairScheduler and Pipe together as an input file says)
against it. The result goes to
``<cache>/peers/htsim/<commit>/``: the binary ``fctlab_htsim`` and ``peer.json`` (repository,
commit, build time). The checkout is not modified.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .cache import cache_dir

REPOSITORY = "https://github.com/Broadcom/csg-htsim"
DRIVER_SOURCE = Path(__file__).with_name("htsim_driver.cpp")
BINARY = "fctlab_htsim"


class BuildError(RuntimeError):
    """The build failed; the message says which step and why (one line)."""


@dataclass
class Peer:
    directory: Path
    binary: Path
    repository: str
    commit: str
    built: str

    def describe(self) -> str:
        return f"{self.repository} at {self.commit[:12]}, built {self.built}, in {self.directory}"

    __str__ = describe


#: `fctlab peers build htsim` needs --source.
NEEDS_SOURCE = True


def how_to_get() -> str:
    return f"fctlab peers build htsim --source {REPOSITORY} (or --source a checkout of it)"


def _root() -> Path:
    return cache_dir() / "htsim"


def find() -> Optional[Peer]:
    """The most recently built htsim, or None."""
    best = None
    root = _root()
    if not root.is_dir():
        return None
    for meta in root.glob("*/peer.json"):
        try:
            m = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        binary = meta.parent / BINARY
        if not binary.is_file():
            continue
        peer = Peer(meta.parent, binary, m.get("repository", "?"), m.get("commit", "?"), m.get("built", "?"))
        if best is None or peer.built > best.built:
            best = peer
    return best


def _git(args: list, cwd=None) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise BuildError(f"git {' '.join(args)}: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return p.stdout.strip()


def _is_git(path: Path) -> bool:
    p = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, text=True)
    return p.returncode == 0


def _step(cmd: list, cwd: Path, what: str, log) -> None:
    log(what)
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
        raise BuildError(f"{what} failed (status {p.returncode}): {tail}")


def build(source: str, log=lambda msg: None) -> Peer:
    """Builds htsim from `source` (a checkout, or a git URL cloned into a temporary directory)."""
    if shutil.which("git") is None or shutil.which("make") is None or shutil.which("g++") is None:
        raise BuildError("building htsim needs git, make and g++ on PATH")
    with tempfile.TemporaryDirectory(prefix="fctlab-htsim-") as tmp:
        tmp = Path(tmp)
        src = Path(source)
        if src.is_dir() and not (src / "sim" / "Makefile").is_file() and not _is_git(src):
            raise BuildError(f"{source}: not a csg-htsim checkout (no sim/Makefile) nor a git repository")
        if (src / "sim" / "Makefile").is_file():
            repo = src
            try:
                url = _git(["remote", "get-url", "origin"], cwd=repo)
            except BuildError:
                url = str(src.resolve())
        else:
            log(f"cloning {source}")
            repo = tmp / "checkout"
            _git(["clone", "--quiet", "--depth", "1", "--no-checkout", source, str(repo)])
            _git(["checkout", "--quiet", "HEAD", "--", "sim"], cwd=repo)
            url = source
        if not (repo / "sim" / "Makefile").is_file():
            raise BuildError(f"{source}: not a csg-htsim checkout (no sim/Makefile)")
        commit = _git(["rev-parse", "HEAD"], cwd=repo)
        work = tmp / "sim"
        # without objects a build in the checkout left: htsim's Makefile would take them as built
        shutil.copytree(repo / "sim", work, ignore=shutil.ignore_patterns("*.o", "*.a"))
        t0 = time.perf_counter()
        _step(["make", "libhtsim.a"], work, "building htsim's library (make libhtsim.a, a few minutes)", log)
        out_dir = _root() / commit
        out_dir.mkdir(parents=True, exist_ok=True)
        binary = out_dir / BINARY
        _step(
            [
                "g++",
                "-std=c++11",
                "-O2",
                "-w",
                f"-I{work}",
                "-o",
                str(binary),
                str(DRIVER_SOURCE),
                str(work / "libhtsim.a"),
            ],
            work,
            f"compiling {DRIVER_SOURCE.name} against it",
            log,
        )
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        meta = {
            "repository": url,
            "commit": commit,
            "built": built,
            "build_seconds": round(time.perf_counter() - t0, 1),
            "driver": DRIVER_SOURCE.name,
        }
        (out_dir / "peer.json").write_text(json.dumps(meta, indent=2) + "\n")
    return Peer(out_dir, binary, url, commit, built)
