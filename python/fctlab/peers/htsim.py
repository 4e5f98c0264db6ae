"""htsim, built from its source for ``fctlab crosscheck --against htsim``: Broadcom's csg-htsim,
and the Ultra Ethernet Consortium's uet-htsim for DCQCN (``DCQCNSrc``/``DCQCNSink``, which
csg-htsim does not have) and NSCC (``UecSrc``).

The build copies the checkout's simulator directory (csg-htsim's ``sim/``, uet-htsim's
``htsim/sim/``) into a temporary directory, builds htsim's library there with htsim's own
build (csg-htsim: its Makefile, ``make libhtsim.a``; uet-htsim: its CMake project, the target
``htsim``) and compiles fctlab's driver (``htsim_driver.cpp`` beside this file: it wires htsim's
TcpSrc/DCTCPSrc, TcpSink, RoceSrc/RoceSink, HPCCSrc/HPCCSink, DCQCNSrc/DCQCNSink,
SwiftSrc/SwiftSink, NdpSrc/NdpSink/NdpPullPacer, Queue, ECNQueue, CompositeQueue,
LosslessOutputQueue, LosslessInputQueue, FairPriorityQueue, FairScheduler and Pipe together as
an input file says; and, on htsim's own fat-tree, EqdsSrc/EqdsSink/EqdsPullPacer/EqdsNIC and
UecSrc/UecSink/UecNIC) against it, with htsim's fat-tree (the simulator directory's
``datacenter/fat_tree_topology.cpp``, ``fat_tree_switch.cpp``, ``firstfit.cpp`` and
``connection_matrix.cpp``, compiled with the driver) and a
define for each difference of the code bases it reads (:data:`FEATURES`). The result goes to
``<cache>/peers/htsim/<commit>/``: the binary ``fctlab_htsim`` and ``peer.json`` (repository,
commit, build time, the defines and the protocols the build runs). Builds of different
commits sit side by side; the crosscheck takes, for a scenario, the newest build that runs all
its protocols (:func:`find`). The checkout is not modified.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from .cache import cache_dir

REPOSITORY = "https://github.com/Broadcom/csg-htsim"
#: The code base with DCQCN (htsim/sim/dcqcn.cpp).
DCQCN_REPOSITORY = "https://github.com/ultraethernet/uet-htsim"
DRIVER_SOURCE = Path(__file__).with_name("htsim_driver.cpp")
BINARY = "fctlab_htsim"

#: The protocols the driver runs with csg-htsim's classes (set-ups in scenarios/crosscheck/htsim).
BASE_PROTOCOLS = ("tcp", "dctcp", "roce", "hpcc", "swift", "ndp")
#: The protocol it runs with csg-htsim's EQDS on htsim's fat-tree (FCTLAB_HTSIM_EQDS and
#: FCTLAB_HTSIM_FATTREE).
EQDS_PROTOCOLS = ("eqds",)
#: The protocol it runs with uet-htsim's UecSrc on htsim's fat-tree (FCTLAB_HTSIM_UEC and
#: FCTLAB_HTSIM_FATTREE).
UEC_PROTOCOLS = ("nscc",)
#: The protocols it runs with a code base that has DCQCN. Only dcqcn: that code base's other
#: classes differ from csg-htsim's (its RoceSrc counts sequence numbers in packets, its
#: LosslessOutputQueue has one static ECN threshold), and the other protocols' set-ups are
#: made against csg-htsim.
DCQCN_PROTOCOLS = ("dcqcn",)

#: Differences of the code bases the driver is compiled for: define -> (file of the simulator
#: directory, the text that shows it; None: the file's presence).
FEATURES = {
    # DCQCNSrc and DCQCNSink (uet-htsim)
    "FCTLAB_HTSIM_DCQCN": ("dcqcn.h", None),
    # LosslessOutputQueue(rate, maxsize, eventlist, logger), ECN by its statics _ecn_enabled, _K
    "FCTLAB_HTSIM_LOSSLESS_STATIC_ECN": ("queue_lossless_output.h", "static int _K"),
    # RoceSrc's sequence numbers count packets: _highest_sent, _last_acked, ackno x _mss
    # against the flow size in bytes
    "FCTLAB_HTSIM_ROCE_PACKET_SEQNO": ("roce.cpp", "ackno * _mss >= _flow_size"),
    # htsim's fat-tree (FatTreeTopology, FatTreeSwitch), compiled in with the driver
    "FCTLAB_HTSIM_FATTREE": ("datacenter/fat_tree_topology.h", None),
    # FatTreeTopology built from a FatTreeTopologyCfg (uet-htsim)
    "FCTLAB_HTSIM_FATTREE_CFG": ("datacenter/fat_tree_topology.h", "class FatTreeTopologyCfg"),
    # csg-htsim's EQDS: EqdsNIC(eventlist, rate), EqdsSrc(logger, eventlist, nic)
    "FCTLAB_HTSIM_EQDS": ("eqds.h", "EqdsNIC(EventList &eventList, linkspeed_bps linkspeed)"),
    # uet-htsim's UecSrc, UecSink, UecNIC and UecMpReps
    "FCTLAB_HTSIM_UEC": ("uec.h", None),
    # CompositeQueue's constructor takes the trimmed size and whether to drop (uet-htsim)
    "FCTLAB_HTSIM_COMPOSITE_TRIM_SIZE": ("compositequeue.h", "uint16_t trim_size"),
}
#: htsim's fat-tree: the simulator directory's sources the driver is compiled with
#: (FCTLAB_HTSIM_FATTREE).
FATTREE_SOURCES = ("fat_tree_topology.cpp", "fat_tree_switch.cpp", "firstfit.cpp", "connection_matrix.cpp")


class BuildError(RuntimeError):
    """The build failed; the message says which step and why (one line)."""


@dataclass
class Peer:
    directory: Path
    binary: Path
    repository: str
    commit: str
    built: str
    protocols: tuple = field(default=BASE_PROTOCOLS)
    #: the other builds in the cache (set by :func:`find` without protocols, for `fctlab peers list`)
    others: tuple = field(default=())

    def describe(self) -> str:
        line = (
            f"{self.repository} at {self.commit[:12]}, built {self.built}, runs {', '.join(self.protocols)}, "
            f"in {self.directory}"
        )
        also = "; ".join(f"{o.repository} at {o.commit[:12]}, runs {', '.join(o.protocols)}" for o in self.others)
        return f"{line}; also built: {also}" if also else line

    __str__ = describe


#: `fctlab peers build htsim` needs --source.
NEEDS_SOURCE = True


def how_to_get(protocols: Iterable[str] = ()) -> str:
    """One line: what to build (for DCQCN and NSCC, uet-htsim)."""
    if "dcqcn" in set(protocols):
        return f"fctlab peers build htsim --source {DCQCN_REPOSITORY} (or --source a checkout of it: DCQCN is in uet-htsim)"
    if "nscc" in set(protocols):
        return (
            f"fctlab peers build htsim --source {DCQCN_REPOSITORY} (or --source a checkout of it: NSCC, UecSrc, is in "
            "uet-htsim)"
        )
    return (
        f"fctlab peers build htsim --source {REPOSITORY} (or --source a checkout of it); for DCQCN, "
        f"--source {DCQCN_REPOSITORY}"
    )


def _root() -> Path:
    return cache_dir() / "htsim"


def builds() -> list:
    """Every build in the cache, newest first."""
    out = []
    root = _root()
    if not root.is_dir():
        return out
    for meta in root.glob("*/peer.json"):
        try:
            m = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        binary = meta.parent / BINARY
        if not binary.is_file():
            continue
        # builds before the key: csg-htsim's, with a driver from before NDP
        protocols = tuple(m.get("protocols") or (p for p in BASE_PROTOCOLS if p != "ndp"))
        out.append(
            Peer(meta.parent, binary, m.get("repository", "?"), m.get("commit", "?"), m.get("built", "?"), protocols)
        )
    return sorted(out, key=lambda p: p.built, reverse=True)


def find(protocols: Iterable[str] = ()) -> Optional[Peer]:
    """The newest build that runs every one of `protocols` (any build when none is given), or None."""
    need = set(protocols)
    every = builds()
    for peer in every:
        if need <= set(peer.protocols):
            if not need:
                peer.others = tuple(b for b in every if b is not peer)
            return peer
    return None


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


#: Where each code base keeps the simulator, and how it is built: (directory, the file that
#: shows it). csg-htsim: sim/ with a Makefile; uet-htsim: htsim/sim/ with a CMake project.
LAYOUTS = (("sim", "Makefile"), ("htsim/sim", "CMakeLists.txt"))


def _layout(repo: Path) -> Optional[tuple]:
    for sub, marker in LAYOUTS:
        if (repo / sub / marker).is_file():
            return sub, marker
    return None


def features(sim: Path) -> dict:
    """The defines of :data:`FEATURES` that hold for the simulator directory `sim`."""
    out = {}
    for define, (name, text) in FEATURES.items():
        f = sim / name
        out[define] = f.is_file() and (text is None or text in f.read_text(errors="replace"))
    return out


def protocols_of(defines: dict) -> tuple:
    """The protocols a build with these defines runs: csg-htsim's, with EQDS where it has
    csg-htsim's EQDS and the fat-tree; a code base with DCQCN, DCQCN and, where it has the UEC
    transport and the fat-tree, NSCC."""
    tree = bool(defines.get("FCTLAB_HTSIM_FATTREE"))
    if defines.get("FCTLAB_HTSIM_DCQCN"):
        return DCQCN_PROTOCOLS + (UEC_PROTOCOLS if tree and defines.get("FCTLAB_HTSIM_UEC") else ())
    return BASE_PROTOCOLS + (EQDS_PROTOCOLS if tree and defines.get("FCTLAB_HTSIM_EQDS") else ())


def build(source: str, log=lambda msg: None) -> Peer:
    """Builds htsim from `source` (a checkout, or a git URL cloned into a temporary directory)."""
    if shutil.which("git") is None or shutil.which("make") is None or shutil.which("g++") is None:
        raise BuildError("building htsim needs git, make and g++ on PATH")
    with tempfile.TemporaryDirectory(prefix="fctlab-htsim-") as tmp:
        tmp = Path(tmp)
        src = Path(source)
        not_htsim = (
            f"{source}: not an htsim checkout (no sim/Makefile as in csg-htsim, no htsim/sim/CMakeLists.txt "
            "as in uet-htsim)"
        )
        if src.is_dir() and _layout(src) is None and not _is_git(src):
            raise BuildError(f"{not_htsim} nor a git repository")
        if _layout(src) is not None:
            repo = src
            try:
                url = _git(["remote", "get-url", "origin"], cwd=repo)
            except BuildError:
                url = str(src.resolve())
        else:
            log(f"cloning {source}")
            repo = tmp / "checkout"
            _git(["clone", "--quiet", "--depth", "1", "--no-checkout", source, str(repo)])
            sub = next(
                (
                    s
                    for s, m in LAYOUTS
                    if subprocess.run(
                        ["git", "-C", str(repo), "cat-file", "-e", f"HEAD:{s}/{m}"], capture_output=True
                    ).returncode
                    == 0
                ),
                None,
            )
            if sub is None:
                raise BuildError(not_htsim)
            _git(["checkout", "--quiet", "HEAD", "--", sub], cwd=repo)
            url = source
        layout = _layout(repo)
        if layout is None:
            raise BuildError(not_htsim)
        sub, marker = layout
        commit = _git(["rev-parse", "HEAD"], cwd=repo)
        work = tmp / "sim"
        # without objects or a build directory a build in the checkout left: htsim's Makefile
        # would take them as built
        shutil.copytree(repo / sub, work, ignore=shutil.ignore_patterns("*.o", "*.a", "build"))
        defines = features(work)
        t0 = time.perf_counter()
        if marker == "Makefile":
            _step(["make", "libhtsim.a"], work, "building htsim's library (make libhtsim.a, a few minutes)", log)
            library, std = work / "libhtsim.a", "-std=c++11"
        else:
            if shutil.which("cmake") is None:
                raise BuildError(
                    f"{source}: its htsim is built with CMake (htsim/sim/CMakeLists.txt): cmake is not on PATH"
                )
            _step(
                ["cmake", "-S", str(work), "-B", str(work / "build"), "-DCMAKE_BUILD_TYPE=Release"],
                work,
                "configuring htsim (cmake)",
                log,
            )
            _step(
                ["cmake", "--build", str(work / "build"), "--target", "htsim"],
                work,
                "building htsim's library (cmake --build --target htsim, several minutes)",
                log,
            )
            library, std = work / "build" / "libhtsim.a", "-std=c++17"
        out_dir = _root() / commit
        out_dir.mkdir(parents=True, exist_ok=True)
        binary = out_dir / BINARY
        flags = [f"-D{d}" for d, on in defines.items() if on]
        tree = []
        if defines.get("FCTLAB_HTSIM_FATTREE"):
            tree = [f"-I{work / 'datacenter'}", *(str(work / "datacenter" / f) for f in FATTREE_SOURCES)]
        _step(
            ["g++", std, "-O2", "-w", *flags, f"-I{work}", "-o", str(binary), str(DRIVER_SOURCE), *tree, str(library)],
            work,
            f"compiling {DRIVER_SOURCE.name} against it" + (" and htsim's fat-tree" if tree else ""),
            log,
        )
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        protocols = protocols_of(defines)
        meta = {
            "repository": url,
            "commit": commit,
            "built": built,
            "build_seconds": round(time.perf_counter() - t0, 1),
            "driver": DRIVER_SOURCE.name,
            "build": "make libhtsim.a" if marker == "Makefile" else "cmake --build --target htsim",
            "defines": sorted(d for d, on in defines.items() if on),
            "protocols": list(protocols),
        }
        (out_dir / "peer.json").write_text(json.dumps(meta, indent=2) + "\n")
    return Peer(out_dir, binary, url, commit, built, protocols)
