"""ECN threshold marking on testbed ports (the simulator's ``queue = "ecn"``), and the
shared buffer of strict-priority ports.

A marking port is the port's TBF (rate and buffer) plus ``kernel/ecn_mark.bpf.c`` as a tc
classifier on the same device's egress hook: a packet is marked CE when the TBF already
holds ``ecn_threshold`` packets (or bytes) as it arrives. On a strict-priority port (an HTB
with a class per band, ``priority.py``) the same program reads the HTB root, which counts
every band, and drops a packet that would take the port above its buffer. The program lives
as long as the device, so deleting the run's namespaces removes it. Each port gets its own
copy of the object with its parameters written into ``.rodata``.
"""

from __future__ import annotations

import json
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import kernel as K
from .shell import TEMP_PREFIX, TestbedError, run

#: Layout of ``struct ecn_params`` in kernel/ecn_mark.bpf.c (little endian, 16 bytes).
PARAMS_FORMAT = "<IIQ"
PARAMS_SYMBOL = "ecn_params"
SOURCE = "ecn_mark.bpf.c"
STATS = ("seen", "marked", "not_ect", "dropped")  # keys of the ecn_stats map, in order


@dataclass(frozen=True)
class Threshold:
    """Mark at ``pkts`` packets or ``bytes`` bytes queued (at most one is non-zero; neither:
    no marking); with ``limit_bytes``, drop a packet that would take the port's queue above
    it (the shared buffer of a strict-priority port)."""

    pkts: int = 0
    bytes: int = 0
    limit_bytes: int = 0

    def pack(self) -> bytes:
        return struct.pack(PARAMS_FORMAT, self.pkts, self.limit_bytes, self.bytes)

    @property
    def marks(self) -> bool:
        return bool(self.pkts or self.bytes)

    def __str__(self) -> str:
        mark = f"{self.pkts}pkt" if self.pkts else f"{self.bytes}B" if self.bytes else "none"
        return mark + (f"-limit{self.limit_bytes}B" if self.limit_bytes else "")


class Marker:
    """Builds the marker object once per run and attaches copies of it to ports."""

    def __init__(self) -> None:
        try:
            K.check_environment(need_root=False)
            self.obj = K.build(source=SOURCE)
        except K.KernelError as e:
            raise TestbedError(f"ECN marking needs the BPF marker: {e}") from None
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}ecn-")
        self._copies: dict[Threshold, Path] = {}

    def _object(self, t: Threshold) -> Path:
        if t not in self._copies:
            dst = Path(self._tmp.name) / f"ecn_mark_{t}.bpf.o"
            try:
                K.patch_symbol(self.obj, PARAMS_SYMBOL, t.pack(), dst)
            except K.KernelError as e:
                raise TestbedError(str(e)) from None
            self._copies[t] = dst
        return self._copies[t]

    def attach(self, ns: str, dev: str, t: Threshold) -> None:
        """Marks packets leaving ``dev`` (in namespace ``ns``) above threshold ``t``."""
        attach_egress(ns, dev, self._object(t), "the ECN marker", prio=2)

    def close(self) -> None:
        self._tmp.cleanup()


def attach_egress(ns: str, dev: str, obj: Path, what: str, *, prio: int) -> None:
    """Attaches the BPF object ``obj`` (section ``tc``) to the egress hook of ``dev`` in
    namespace ``ns``, as filter ``prio`` (lower runs first), adding the clsact qdisc the
    first time."""
    have = run(["tc", "-n", ns, "qdisc", "show", "dev", dev, "clsact"], check=False)
    if "clsact" not in (have.stdout or ""):
        run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "clsact"])
    cmd = ["tc", "-n", ns, "filter", "add", "dev", dev, "egress", "prio", str(prio)]
    p = run([*cmd, "bpf", "direct-action", "obj", str(obj), "sec", "tc"], check=False, timeout=60)
    if p.returncode != 0:
        lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
        hint = next(
            (l for l in reversed(lines) if "rror" in l or "denied" in l or "not" in l), lines[-1] if lines else ""
        )
        raise TestbedError(f"attaching {what} to {dev} in {ns} failed: {hint.strip()}")


def marks(ns: str, dev: str) -> Optional[dict]:
    """Counters of the marker on ``dev``: packets seen, marked, over the threshold but not
    ECN-capable, and dropped at the shared buffer. None when no marker is attached or its
    map cannot be read."""
    return program_counters(ns, dev, "ecn_stats", STATS)


def program_counters(ns: str, dev: str, map_name: str, keys: tuple) -> Optional[dict]:
    """The per-CPU array ``map_name`` of a BPF program on ``dev``'s egress hook, summed over
    CPUs, as ``{keys[i]: count}``. None when no such program is attached or the map cannot be
    read."""
    p = run(["tc", "-n", ns, "-j", "filter", "show", "dev", dev, "egress"], check=False)
    try:
        filters = json.loads(p.stdout or "[]")
    except ValueError:
        return None
    prog_ids = []
    for f in filters:
        prog = (f.get("options") or {}).get("prog") or {}
        if prog.get("id") is not None:
            prog_ids.append(prog["id"])
    try:
        for prog_id in prog_ids:
            out = prog_counters(prog_id, map_name, keys)
            if out is not None:
                return out
    except K.KernelError:
        return None
    return None


def prog_counters(prog_id: int, map_name: str, keys: tuple) -> Optional[dict]:
    """The per-CPU array ``map_name`` of BPF program ``prog_id``, summed over CPUs, as
    ``{keys[i]: count}``; None when the program has no such map."""
    info = K._bpftool_json("prog", "show", "id", str(prog_id))
    for mid in info.get("map_ids", []):
        m = K._bpftool_json("map", "show", "id", str(mid))
        if m.get("name") != map_name:
            continue
        out = dict.fromkeys(keys, 0)
        for entry in K._bpftool_json("map", "dump", "id", str(mid)) or []:
            key = entry.get("key")
            if isinstance(key, list):  # raw bytes as hex strings
                key = int.from_bytes(bytes(int(b, 16) for b in key), "little")
            total = 0
            for v in entry.get("values") or []:
                val = v.get("value")
                if isinstance(val, list):
                    val = int.from_bytes(bytes(int(b, 16) for b in val), "little")
                total += int(val)
            if isinstance(key, int) and 0 <= key < len(keys):
                out[keys[key]] = total
        return out
    return None
