"""ECN threshold marking on testbed ports (the simulator's ``queue = "ecn"``).

A marking port is the port's TBF (rate and buffer) plus ``kernel/ecn_mark.bpf.c`` as a tc
classifier on the same device's egress hook: a packet is marked CE when the TBF already
holds ``ecn_threshold`` packets (or bytes) as it arrives. The program lives as long as the
device, so deleting the run's namespaces removes it. Each port gets its own copy of the
object with its threshold written into ``.rodata``.
"""

from __future__ import annotations

import json
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import kernel as K
from .shell import TestbedError, run

#: Layout of ``struct ecn_params`` in kernel/ecn_mark.bpf.c (little endian, 16 bytes).
PARAMS_FORMAT = "<IIQ"
PARAMS_SYMBOL = "ecn_params"
SOURCE = "ecn_mark.bpf.c"
STATS = ("seen", "marked", "not_ect")  # keys of the ecn_stats map, in order


@dataclass(frozen=True)
class Threshold:
    """Mark at ``pkts`` packets or ``bytes`` bytes queued (exactly one is non-zero)."""

    pkts: int = 0
    bytes: int = 0

    def pack(self) -> bytes:
        return struct.pack(PARAMS_FORMAT, self.pkts, 0, self.bytes)

    def __str__(self) -> str:
        return f"{self.pkts}pkt" if self.pkts else f"{self.bytes}B"


class Marker:
    """Builds the marker object once per run and attaches copies of it to ports."""

    def __init__(self) -> None:
        try:
            K.check_environment(need_root=False)
            self.obj = K.build(source=SOURCE)
        except K.KernelError as e:
            raise TestbedError(f"ECN marking needs the BPF marker: {e}") from None
        self._tmp = tempfile.TemporaryDirectory(prefix="fctlab-ecn-")
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
        run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "clsact"])
        p = run(
            [
                "tc",
                "-n",
                ns,
                "filter",
                "add",
                "dev",
                dev,
                "egress",
                "bpf",
                "direct-action",
                "obj",
                str(self._object(t)),
                "sec",
                "tc",
            ],
            check=False,
            timeout=60,
        )
        if p.returncode != 0:
            lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
            hint = next(
                (l for l in reversed(lines) if "rror" in l or "denied" in l or "not" in l), lines[-1] if lines else ""
            )
            raise TestbedError(f"attaching the ECN marker to {dev} in {ns} failed: {hint.strip()}")

    def close(self) -> None:
        self._tmp.cleanup()


def marks(ns: str, dev: str) -> Optional[dict]:
    """Counters of the marker on ``dev``: packets seen, marked, and over the threshold but
    not ECN-capable. None when no marker is attached or its map cannot be read."""
    p = run(["tc", "-n", ns, "-j", "filter", "show", "dev", dev, "egress"], check=False)
    try:
        filters = json.loads(p.stdout or "[]")
    except ValueError:
        return None
    prog_id = None
    for f in filters:
        prog = (f.get("options") or {}).get("prog") or {}
        if prog.get("id") is not None:
            prog_id = prog["id"]
    if prog_id is None:
        return None
    try:
        info = K._bpftool_json("prog", "show", "id", str(prog_id))
        for mid in info.get("map_ids", []):
            m = K._bpftool_json("map", "show", "id", str(mid))
            if m.get("name") != "ecn_stats":
                continue
            out = dict.fromkeys(STATS, 0)
            for entry in K._bpftool_json("map", "dump", "id", str(mid)) or []:
                key = entry.get("key")
                if isinstance(key, list):  # raw bytes as hex strings
                    key = int.from_bytes(bytes(int(b, 16) for b in key), "little")
                vals = entry.get("values") or []
                total = 0
                for v in vals:
                    val = v.get("value")
                    if isinstance(val, list):
                        val = int.from_bytes(bytes(int(b, 16) for b in val), "little")
                    total += int(val)
                if isinstance(key, int) and 0 <= key < len(STATS):
                    out[STATS[key]] = total
            return out
    except K.KernelError:
        return None
    return None
