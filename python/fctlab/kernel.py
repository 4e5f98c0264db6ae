"""ATCP in the Linux kernel: build, load, inspect and unload the BPF congestion control.

    fctlab kernel load [--function step|linear] [--w-high 3] [--w-low 1] [--threshold 10MB]
                       [--threshold-low 1MB --threshold-high 10MB] [--w-fixed 1,2,3]
    fctlab kernel status [--json]
    fctlab kernel unload [--wait SECONDS]
    fctlab kernel build

``kernel/atcp.bpf.c`` registers four congestion controls from one object: ``atcp`` (weight
from the weight-size function of the bytes acked) and ``atcp_w1``, ``atcp_w2``, ``atcp_w3``
(fixed weights). A socket selects one with ``setsockopt(IPPROTO_TCP, TCP_CONGESTION, name)``.
The parameters are written into the object's ``.rodata`` before it is registered, so they
change without recompiling. See ``docs/kernel.md``.

Problems exit with status 2 and one line saying what is missing or refused.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence
from ._argparse import OneLineParser
from ._extras import extra
from .cli import main

#: Congestion controls registered by the object, in registration order.
INSTANCES = ("atcp", "atcp_w1", "atcp_w2", "atcp_w3")
#: DCTCP (kernel/dctcp.bpf.c), registered on its own, for kernels built without tcp_dctcp
DCTCP = "fctlab_dctcp"
DCTCP_SOURCE = "dctcp.bpf.c"

#: Fixed point of the weights in ``.rodata``: 1024 means one segment per round trip.
WEIGHT_ONE = 1024

#: Layout of ``struct atcp_params`` in kernel/atcp.bpf.c (little endian, 56 bytes).
PARAMS_FORMAT = "<6I3Q2I"
PARAMS_SYMBOL = "atcp_params"
FUNCTIONS = {"step": 0, "linear": 1}
#: ``per-episode``: one halving per congestion episode (a signal about data sent before the
#: previous reduction ended keeps the window); ``per-window``: as Linux's reno.
HALVING = {"per-window": 0, "per-episode": 1}

#: Debian/Ubuntu package providing each tool.
APT_PACKAGES = {"clang": "clang", "bpftool": "bpftool", "bpf_helpers.h": "libbpf-dev"}

AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")

_TIMEOUT_S = 60  # bound on any single external command


class KernelError(Exception):
    """A problem that stops a kernel operation; the message is one line for the user.
    ``log`` holds the full output behind it (the verifier log of a rejected program)."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


# --------------------------------------------------------------------------------------
# Parameters


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}


def parse_bytes(text: str) -> int:
    """``"10MB"`` -> 10_000_000 (decimal units, as the scenario files; KiB/MiB are binary)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"expected a size such as 10MB or 500KB, got {text!r}")
    return int(round(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]))


def _weight_fp(name: str, w: float) -> int:
    if not (w > 0 and w < 1000):
        raise ValueError(f"`{name}` must be a weight in (0, 1000), got {w}")
    return max(1, int(round(w * WEIGHT_ONE)))


@dataclass
class AtcpParams:
    """Load-time parameters of the ATCP object (weights in segments per RTT, sizes in bytes)."""

    function: str = "step"
    w_high: float = 3.0
    w_low: float = 1.0
    threshold: int = 10_000_000
    threshold_low: int = 1_000_000
    threshold_high: int = 10_000_000
    w_fixed: tuple = (1.0, 2.0, 3.0)
    halving: str = "per-episode"

    def validate(self) -> "AtcpParams":
        if self.function not in FUNCTIONS:
            raise ValueError(f"unknown weight function {self.function!r} (known: {', '.join(FUNCTIONS)})")
        if self.halving not in HALVING:
            raise ValueError(f"unknown halving rule {self.halving!r} (known: {', '.join(HALVING)})")
        _weight_fp("w_high", self.w_high)
        _weight_fp("w_low", self.w_low)
        if len(self.w_fixed) != 3:
            raise ValueError(f"`w_fixed` needs three weights (atcp_w1, atcp_w2, atcp_w3), got {len(self.w_fixed)}")
        for i, w in enumerate(self.w_fixed):
            _weight_fp(f"w_fixed[{i}]", w)
        for k in ("threshold", "threshold_low", "threshold_high"):
            v = getattr(self, k)
            if not (0 <= v < 2**44):
                raise ValueError(f"`{k}` must be between 0 and 16 TB, got {v}")
        if self.function == "linear" and self.threshold_high <= self.threshold_low:
            raise ValueError(
                f"`threshold_high` ({self.threshold_high} B) must be above `threshold_low` ({self.threshold_low} B)"
            )
        return self

    def pack(self) -> bytes:
        self.validate()
        return struct.pack(
            PARAMS_FORMAT,
            FUNCTIONS[self.function],
            _weight_fp("w_high", self.w_high),
            _weight_fp("w_low", self.w_low),
            *(_weight_fp("w_fixed", w) for w in self.w_fixed),
            self.threshold,
            self.threshold_low,
            self.threshold_high,
            HALVING[self.halving],
            0,
        )

    @classmethod
    def unpack(cls, raw: bytes) -> "AtcpParams":
        f, wh, wl, f1, f2, f3, t, t1, t2, h, _ = struct.unpack(PARAMS_FORMAT, raw)
        names = {v: k for k, v in FUNCTIONS.items()}
        halvings = {v: k for k, v in HALVING.items()}
        return cls(
            function=names.get(f, f"unknown({f})"),
            w_high=wh / WEIGHT_ONE,
            w_low=wl / WEIGHT_ONE,
            threshold=t,
            threshold_low=t1,
            threshold_high=t2,
            w_fixed=(f1 / WEIGHT_ONE, f2 / WEIGHT_ONE, f3 / WEIGHT_ONE),
            halving=halvings.get(h, f"unknown({h})"),
        )

    def weight_at(self, acked_bytes: int) -> float:
        """The weight of instance ``atcp`` after ``acked_bytes`` bytes were acknowledged
        (weight_of() in atcp.bpf.c, without its fixed-point rounding)."""
        if self.function == "step":
            return self.w_high if acked_bytes <= self.threshold else self.w_low
        lo, hi = self.threshold_low, self.threshold_high
        if acked_bytes <= lo:
            return self.w_high
        if acked_bytes >= hi or hi <= lo:
            return self.w_low
        return self.w_high + (self.w_low - self.w_high) * (acked_bytes - lo) / (hi - lo)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["w_fixed"] = list(self.w_fixed)
        return d


# --------------------------------------------------------------------------------------
# Tools and build


def kernel_dir() -> Path:
    """The directory holding ``atcp.bpf.c`` (``$FCTLAB_KERNEL_DIR`` or the repository's ``kernel/``)."""
    env = os.environ.get("FCTLAB_KERNEL_DIR")
    d = Path(env) if env else Path(__file__).resolve().parents[2] / "kernel"
    if not (d / "atcp.bpf.c").is_file():
        raise KernelError(f"{d / 'atcp.bpf.c'} not found (set FCTLAB_KERNEL_DIR to the fctlab kernel/ directory)")
    return d


def build_dir() -> Path:
    """``kernel/build/`` when writable, else ``~/.cache/fctlab/kernel``."""
    d = kernel_dir() / "build"
    try:
        d.mkdir(exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    d = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fctlab" / "kernel"
    d.mkdir(parents=True, exist_ok=True)
    return d


def missing_tools() -> list[str]:
    """Names of missing build/load tools, each with its apt package: ``["bpftool (apt package bpftool)"]``."""
    out = []
    for tool in ("clang", "bpftool"):
        if shutil.which(tool) is None:
            out.append(f"{tool} (apt package {APT_PACKAGES[tool]})")
    if (
        not Path("/usr/include/bpf/bpf_helpers.h").is_file()
        and not Path("/usr/local/include/bpf/bpf_helpers.h").is_file()
    ):
        out.append("bpf/bpf_helpers.h (apt package libbpf-dev)")
    return out


def check_environment(*, need_root: bool = True) -> None:
    """Raises KernelError naming the first thing that stops loading on this machine."""
    if need_root and os.geteuid() != 0:
        raise KernelError("loading a congestion control needs root (CAP_BPF and CAP_NET_ADMIN); run as root")
    miss = missing_tools()
    if miss:
        raise KernelError(
            "missing " + ", ".join(miss) + "; install with: apt-get install -y clang llvm libbpf-dev bpftool"
        )
    if not VMLINUX_BTF.is_file():
        raise KernelError(
            f"{VMLINUX_BTF} not found: the kernel was built without BTF (CONFIG_DEBUG_INFO_BTF=y is needed)"
        )


#: bpf(2) syscall numbers by machine, for the permission probe.
_SYS_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351}


def _may_create_bpf_objects() -> Optional[str]:
    """Asks the kernel directly whether this process may create BPF objects: creates and
    closes a one-entry array map with bpf(BPF_MAP_CREATE). Returns why not, or None."""
    nr = _SYS_BPF.get(os.uname().machine)
    if nr is None:
        return None  # no probe for this machine; loading will tell
    libc = ctypes.CDLL(None, use_errno=True)
    # union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries (+ zeros)
    attr = struct.pack("<IIII", 2, 4, 4, 1) + bytes(112)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(nr, 0, buf, len(attr))
    if fd >= 0:
        os.close(fd)
        return None
    err = ctypes.get_errno()
    return f"the kernel does not let this process create BPF objects ({os.strerror(err)}): check CAP_BPF, kernel.unprivileged_bpf_disabled, lockdown and seccomp"


def bpf_unavailable() -> Optional[str]:
    """Why this machine cannot register a BPF congestion control, found by asking it (None
    when it can): not root, a missing tool, no kernel BTF, no struct_ops for TCP congestion
    control in this kernel, or no permission to create BPF objects. Once this returns None, a
    failing registration is the kernel rejecting the program (see ``KernelError.log``)."""
    try:
        check_environment()
    except KernelError as e:
        return str(e)
    p = _run(["bpftool", "btf", "dump", "file", str(VMLINUX_BTF), "format", "raw"], check=False, timeout=60)
    if p.returncode != 0:
        return f"cannot read the kernel's BTF: {_last_line(p.stderr or p.stdout)}"
    if "'bpf_struct_ops_tcp_congestion_ops'" not in p.stdout:
        return "this kernel does not support struct_ops tcp_congestion_ops (Linux >= 5.13 with CONFIG_BPF_JIT and BTF is needed)"
    return _may_create_bpf_objects()


def _run(cmd: Sequence[str], *, timeout: float = _TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        tool = cmd[0]
        raise KernelError(f"{tool} not found (apt package {APT_PACKAGES.get(tool, tool)})") from None
    except subprocess.TimeoutExpired:
        raise KernelError(f"`{' '.join(cmd)}` did not finish within {timeout:.0f}s") from None
    if check and p.returncode != 0:
        raise KernelError(f"`{' '.join(cmd)}` failed: {_last_line(p.stderr or p.stdout)}")
    return p


def _last_line(text: str) -> str:
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    # libbpf prints the verifier log first; its error summary is the informative part
    for l in reversed(lines):
        if l.lower().startswith(("error", "libbpf: failed", "libbpf: struct_ops")):
            return l
    return lines[-1] if lines else "(no output)"


def _target_arch() -> str:
    m = os.uname().machine
    return {"x86_64": "x86", "aarch64": "arm64", "ppc64le": "powerpc", "riscv64": "riscv", "s390x": "s390"}.get(m, m)


def build(*, force: bool = False, source: str = "atcp.bpf.c") -> Path:
    """Compiles ``kernel/<source>`` (one of its ``*.bpf.c``) when the object is missing or
    older than the source or a header beside it; returns the object's path. ``vmlinux.h`` is generated
    from the running kernel's BTF."""
    check_environment(need_root=False)
    src = kernel_dir() / source
    if not src.is_file():
        raise KernelError(f"{src} not found")
    out = build_dir()
    vmlinux_h = out / "vmlinux.h"
    obj = out / source.replace(".c", ".o")
    if force or not vmlinux_h.is_file() or vmlinux_h.stat().st_size == 0:
        p = _run(["bpftool", "btf", "dump", "file", str(VMLINUX_BTF), "format", "c"])
        tmp = vmlinux_h.with_suffix(".h.tmp")
        tmp.write_text(p.stdout)
        tmp.replace(vmlinux_h)
    # the object depends on its source, the headers beside it (the shared rules) and vmlinux.h
    newest = max(p.stat().st_mtime for p in [src, vmlinux_h, *src.parent.glob("*.h")])
    if force or not obj.is_file() or obj.stat().st_mtime < newest:
        tmp = obj.with_suffix(f".{os.getpid()}.tmp")
        _run(
            [
                "clang",
                "-target",
                "bpf",
                "-O2",
                "-g",
                "-Wall",
                "-Werror",
                f"-D__TARGET_ARCH_{_target_arch()}",
                f"-I{out}",
                "-c",
                str(src),
                "-o",
                str(tmp),
            ],
            timeout=180,
        )
        tmp.replace(obj)
    return obj


# --------------------------------------------------------------------------------------
# .rodata patching: the parameters are written into a copy of the object before it is
# loaded, found through the object's symbol table (read with pyelftools).


def patch_params(obj: Path, params: AtcpParams, dst: Path) -> None:
    """Writes ``params`` into the ``atcp_params`` symbol of ``obj``'s .rodata, saving to ``dst``."""
    patch_symbol(obj, PARAMS_SYMBOL, params.pack(), dst)


def patch_symbol(obj: Path, symbol: str, blob: bytes, dst: Path) -> None:
    """Writes ``blob`` over the .rodata variable ``symbol`` of the BPF object ``obj``, saving
    the result to ``dst``. The variable must be exactly ``len(blob)`` bytes long."""
    with extra("kernel"):
        from elftools.common.exceptions import ELFError  # lazy: pyelftools costs 25 ms, only for patching objects
        from elftools.elf.elffile import ELFFile

    data = bytearray(obj.read_bytes())
    try:
        elf = ELFFile(io.BytesIO(bytes(data)))
        if elf.elfclass != 64 or not elf.little_endian:
            raise KernelError(f"{obj}: not a little-endian ELF64 object")
        symtab = elf.get_section_by_name(".symtab")
        if symtab is None:
            raise KernelError(f"{obj}: no symbol table")
        found = symtab.get_symbol_by_name(symbol)
        if not found:
            raise KernelError(f"{obj}: symbol {symbol} not found")
        sym = found[0]
        shndx = sym["st_shndx"]
        sec = elf.get_section(shndx) if isinstance(shndx, int) else None
        size = sym["st_size"]
        if sec is None or sec.name != ".rodata" or size != len(blob):
            where = sec.name if sec is not None else str(shndx)
            raise KernelError(
                f"{obj}: {symbol} is {size} bytes in {where}, expected {len(blob)} in .rodata "
                f"(the BPF source and its Python mirror disagree; rebuild)"
            )
        at = sec["sh_offset"] + sym["st_value"]
    except ELFError as e:
        raise KernelError(f"{obj}: not a valid ELF object ({e})") from None
    data[at : at + size] = blob
    dst.write_bytes(bytes(data))


# --------------------------------------------------------------------------------------
# Registration


def available_congestion_controls() -> list[str]:
    return AVAILABLE_CC.read_text().split()


def registered() -> list[str]:
    """The fctlab instances currently selectable by sockets."""
    avail = set(available_congestion_controls())
    return [n for n in INSTANCES if n in avail]


def _bpftool_json(*args: str):
    p = _run(["bpftool", "-j", *args], check=False)
    if p.returncode != 0:
        err = _last_line(p.stderr or p.stdout)
        if "not permitted" in err.lower() or "permission" in err.lower():
            raise KernelError(f"BPF refused by the kernel ({err}); run as root with BPF enabled")
        raise KernelError(f"`bpftool {' '.join(args)}` failed: {err}")
    try:
        return json.loads(p.stdout or "null")
    except json.JSONDecodeError:
        raise KernelError(f"`bpftool {' '.join(args)}` printed no JSON") from None


def struct_ops_maps() -> list[dict]:
    """fctlab struct_ops maps the kernel still holds: ``[{"id": 28, "name": "atcp"}, ...]``:
    ATCP's instances and every ``fctlab_*`` (DCTCP, and the testbed's RCP, RACS and SDC). An
    unregistered map stays here while sockets (TIME_WAIT included) still use it."""
    maps = _bpftool_json("struct_ops", "show") or []
    return [m for m in maps if m.get("name") in INSTANCES or str(m.get("name", "")).startswith("fctlab_")]


def loaded_params() -> Optional[AtcpParams]:
    """Parameters of the most recently loaded object, read back from its .rodata map."""
    progs = _bpftool_json("prog", "show") or []
    cands = [p for p in progs if p.get("name") == "atcp_cong_avoid" and p.get("type") == "struct_ops"]
    for prog in sorted(cands, key=lambda p: -p["id"]):
        for mid in prog.get("map_ids", []):
            info = _bpftool_json("map", "show", "id", str(mid))
            if not str(info.get("name", "")).endswith(".rodata"):
                continue
            dump = _bpftool_json("map", "dump", "id", str(mid))
            if not dump:
                continue
            raw = bytes(int(b, 16) for b in dump[0]["value"])
            return AtcpParams.unpack(raw[: struct.calcsize(PARAMS_FORMAT)])
    return None


def _bpf_refusal(text: str) -> Optional[str]:
    m = re.search(r"prog '([^']+)': BPF program load failed: ([^\n]+)", text)
    if m:
        # The verifier's verdict is the last line of its log before libbpf's summary.
        log = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("libbpf:")]
        verdict = next((l for l in reversed(log) if not l.startswith(("processed ", "-- END", "Error:"))), "")
        return f"the kernel's verifier rejected program '{m.group(1)}' ({m.group(2)}): {verdict}; `bpftool struct_ops register` on the object prints the whole log"
    low = text.lower()
    if "operation not permitted" in low or "eperm" in low or "permission denied" in low:
        return "the kernel refused BPF (Operation not permitted): run as root; check kernel.unprivileged_bpf_disabled, lockdown and seccomp"
    if "invalid argument" in low and "struct_ops" in low and "not found" in low:
        return "this kernel does not support struct_ops tcp_congestion_ops (Linux >= 5.13 with CONFIG_BPF_JIT and BTF is needed)"
    return None


def load(params: Optional[AtcpParams] = None, *, replace: bool = True) -> list[str]:
    """Builds if needed, writes ``params`` into the object and registers all instances.
    Already registered fctlab instances are unregistered first (``replace=True``) or make it
    fail. Returns the registered names."""
    params = (params or AtcpParams()).validate()
    check_environment()
    obj = build()
    present = registered()
    if present:
        if not replace:
            raise KernelError(f"already registered: {', '.join(present)} (run `fctlab kernel unload` first)")
        unload(wait_s=0)
    with tempfile.TemporaryDirectory(prefix="fctlab-kernel-") as td:
        patched = Path(td) / "atcp.bpf.o"
        patch_params(obj, params, patched)
        p = _run(["bpftool", "struct_ops", "register", str(patched)], check=False, timeout=120)
    now = registered()
    if p.returncode != 0 or len(now) != len(INSTANCES):
        text = (p.stderr or "") + (p.stdout or "")
        if now:  # partial registration: do not leave half of it behind
            try:
                unload(wait_s=0)
            except KernelError:
                pass
        why = _bpf_refusal(text) or _last_line(text)
        raise KernelError(f"registering {', '.join(INSTANCES)} failed: {why}", log=text)
    return now


def dctcp_registered() -> bool:
    """Whether fctlab's DCTCP is selectable by sockets."""
    return DCTCP in available_congestion_controls()


def load_dctcp() -> None:
    """Builds if needed and registers fctlab's DCTCP (``fctlab_dctcp``); `unload` removes it
    with the ATCP instances."""
    check_environment()
    obj = build(source=DCTCP_SOURCE)
    if dctcp_registered():
        return
    p = _run(["bpftool", "struct_ops", "register", str(obj)], check=False, timeout=120)
    if p.returncode != 0 or not dctcp_registered():
        text = (p.stderr or "") + (p.stdout or "")
        raise KernelError(f"registering {DCTCP} failed: {_bpf_refusal(text) or _last_line(text)}", log=text)


def unload_dctcp() -> None:
    """Unregisters fctlab's DCTCP only (the ATCP instances stay)."""
    for m in struct_ops_maps():
        if m["name"] == DCTCP and dctcp_registered():
            p = _run(["bpftool", "struct_ops", "unregister", "id", str(m["id"])], check=False)
            if p.returncode != 0:
                raise KernelError(f"unregistering {DCTCP} (id {m['id']}): {_last_line(p.stderr or p.stdout)}")


def unload(*, wait_s: float = 0.0) -> list[str]:
    """Unregisters every fctlab instance. The names leave tcp_available_congestion_control at
    once; with ``wait_s > 0`` it also waits (bounded) until the kernel has freed the maps,
    which happens when the last socket using them closes. Returns the names unregistered."""
    done = []
    errors = []
    for m in struct_ops_maps():
        if m["name"] not in available_congestion_controls():
            continue  # already unregistered, waiting for its sockets to close
        p = _run(["bpftool", "struct_ops", "unregister", "id", str(m["id"])], check=False)
        if p.returncode == 0:
            done.append(m["name"])
        else:
            errors.append(f"{m['name']} (id {m['id']}): {_last_line(p.stderr or p.stdout)}")
    still = registered()
    if still:
        why = "; ".join(errors) or "still listed"
        raise KernelError(f"could not unregister {', '.join(still)}: {_bpf_refusal(why) or why}")
    if wait_s > 0:
        wait_freed(wait_s)
    return done


def wait_freed(timeout_s: float, ignore: Sequence[int] = ()) -> bool:
    """Polls (bounded) until no fctlab struct_ops map remains (other than the map ids in
    ``ignore``); returns True when none does."""
    deadline = time.monotonic() + timeout_s

    def held() -> list:
        return [m for m in struct_ops_maps() if m.get("id") not in ignore]

    for _ in range(int(timeout_s / 0.1) + 2):
        if not held():
            return True
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return not held()


def status() -> dict:
    """What is registered, maps still held by sockets, and the loaded parameters."""
    check_environment(need_root=False)
    maps = struct_ops_maps() if os.geteuid() == 0 else None
    reg = registered()
    params = loaded_params() if (reg and os.geteuid() == 0) else None
    # fctlab_dctcp, and the testbed's fctlab_rcp, fctlab_racs and fctlab_sdc while a run holds them
    reg += [n for n in available_congestion_controls() if n.startswith("fctlab_") and n not in reg]
    lingering = None
    if maps is not None:
        lingering = [m for m in maps if m["name"] not in reg or sum(x["name"] == m["name"] for x in maps) > 1]
    return {
        "registered": reg,
        "maps": maps,
        "lingering": lingering,
        "params": params.to_dict() if params else None,
        "programs": testbed_programs() if os.geteuid() == 0 else None,
        "kernel": os.uname().release,
    }


#: Names of the testbed's tc and sock_ops programs (the kernel keeps 15 characters).
TESTBED_PROGRAMS = ("ecn_mark", "pias_tag", "rcp_port_egress", "racs_port_egres", "sdc_port_egress", "fb_sockops")


def testbed_programs() -> list[dict]:
    """The testbed's BPF programs loaded now (on switch ports and hosts of running testbed
    runs): ``[{"id": 41, "name": "rcp_port_egress"}, ...]``."""
    progs = _bpftool_json("prog", "show") or []
    return [{"id": p["id"], "name": p["name"]} for p in progs if p.get("name") in TESTBED_PROGRAMS]


def socket_congestion(sock: socket.socket) -> str:
    """The congestion control a TCP socket uses (``getsockopt(TCP_CONGESTION)``)."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()


# --------------------------------------------------------------------------------------
# Command line


def configure(p) -> None:
    """The arguments of ``fctlab kernel build|load|unload|status``."""
    p.description = (
        "ATCP (and fctlab's DCTCP, which the testbed registers when a flow needs it) as Linux BPF congestion controls."
    )
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    ld = sub.add_parser("load", help="build if needed and register atcp, atcp_w1, atcp_w2, atcp_w3")
    ld.add_argument("--function", choices=sorted(FUNCTIONS), default="step", help="weight-size function of `atcp`")
    ld.add_argument("--w-high", type=float, default=3.0, help="W_H, segments per RTT (default 3)")
    ld.add_argument("--w-low", type=float, default=1.0, help="W_L, segments per RTT (default 1)")
    ld.add_argument("--threshold", default="10MB", help="step: T, bytes acked (default 10MB)")
    ld.add_argument("--threshold-low", default="1MB", help="linear: T1 (default 1MB)")
    ld.add_argument("--threshold-high", default="10MB", help="linear: T2 (default 10MB)")
    ld.add_argument("--w-fixed", default="1,2,3", help="weights of atcp_w1,atcp_w2,atcp_w3 (default 1,2,3)")
    ld.add_argument(
        "--halving",
        choices=sorted(HALVING),
        default="per-episode",
        help="per-episode (default): one halving per congestion episode; per-window: as Linux's reno",
    )
    ld.add_argument("--no-replace", action="store_true", help="fail instead of replacing loaded instances")
    ul = sub.add_parser("unload", help="unregister all fctlab instances")
    ul.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also wait up to SECONDS for sockets still using them to close",
    )
    st = sub.add_parser("status", help="show what is registered and its parameters")
    st.add_argument("--json", action="store_true")
    bd = sub.add_parser("build", help="compile every kernel/*.bpf.c only")
    bd.add_argument("--force", action="store_true")


def _params_from_args(a) -> AtcpParams:
    try:
        w_fixed = tuple(float(x) for x in a.w_fixed.split(","))
        return AtcpParams(
            function=a.function,
            w_high=a.w_high,
            w_low=a.w_low,
            threshold=parse_bytes(a.threshold),
            threshold_low=parse_bytes(a.threshold_low),
            threshold_high=parse_bytes(a.threshold_high),
            w_fixed=w_fixed,
            halving=a.halving,
        ).validate()
    except ValueError as e:
        raise KernelError(str(e)) from None


def _describe(params: AtcpParams) -> str:
    if params.function == "step":
        fn = f"step W_H={params.w_high:g} W_L={params.w_low:g} T={params.threshold} B"
    else:
        fn = (
            f"linear W_H={params.w_high:g} W_L={params.w_low:g} "
            f"T1={params.threshold_low} B T2={params.threshold_high} B"
        )
    fixed = ", ".join(f"atcp_w{i + 1}: w={w:g}" for i, w in enumerate(params.w_fixed))
    return f"atcp: {fn}; {fixed}; halving {params.halving}"


def main_kernel(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab kernel`` with the arguments after ``kernel``; returns the exit status."""
    return main(["kernel", *(sys.argv[1:] if argv is None else argv)])


def run(a) -> int:
    """Runs ``fctlab kernel``."""
    try:
        if a.cmd == "build":
            for src in sorted(p.name for p in kernel_dir().glob("*.bpf.c")):
                print(build(force=a.force, source=src))
        elif a.cmd == "load":
            params = _params_from_args(a)
            names = load(params, replace=not a.no_replace)
            print(f"registered {', '.join(names)}")
            print(f"  {_describe(params)}")
        elif a.cmd == "unload":
            check_environment()
            names = unload(wait_s=a.wait)
            print(f"unregistered {', '.join(names)}" if names else "nothing registered")
            left = struct_ops_maps()
            if left:
                print(
                    f"  {len(left)} map(s) kept until their sockets close: "
                    + ", ".join(f"{m['name']} (id {m['id']})" for m in left)
                )
        elif a.cmd == "status":
            s = status()
            if a.json:
                print(json.dumps(s, indent=2))
            else:
                print(f"registered: {', '.join(s['registered']) or 'none'} (kernel {s['kernel']})")
                if s["params"]:
                    print(f"  {_describe(AtcpParams(**{**s['params'], 'w_fixed': tuple(s['params']['w_fixed'])}))}")
                if s["maps"] is None:
                    print("  (run as root to list BPF maps and parameters)")
                elif s["lingering"]:
                    print(
                        "  unregistered, kept until their sockets close: "
                        + ", ".join(f"{m['name']} (id {m['id']})" for m in s["lingering"])
                    )
                if s["programs"]:
                    names = sorted({p["name"] for p in s["programs"]})
                    print(
                        f"testbed programs loaded: {len(s['programs'])} "
                        f"({', '.join(names)}), removed with their run's namespaces and loader"
                    )
    except KernelError as e:
        print(f"fctlab kernel {a.cmd}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main_kernel())
