"""PIAS's senders on the testbed: ``kernel/pias_tag.bpf.c`` on each sending host's
interface tags every data segment's DSCP with its band, by the bytes its connection has sent
before it (the simulator's ``protocol = "pias"``, crates/transport/src/cc/pias.rs). The
switch ports are strict-priority ports (``priority.py``); the window is DCTCP's
(``fctlab_dctcp``, kernel/dctcp.bpf.c).
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .. import kernel as K
from .ecn import attach_egress, program_counters
from .shell import TEMP_PREFIX, TestbedError

SOURCE = "pias_tag.bpf.c"
PARAMS_SYMBOL = "pias_params"
MAX_THRESHOLDS = 7
#: Layout of ``struct pias_params`` in kernel/pias_tag.bpf.c (little endian, 64 bytes).
PARAMS_FORMAT = "<II7Q"
#: Keys of the ``pias_stats`` map, in order.
STATS = tuple(f"band{b}" for b in range(MAX_THRESHOLDS + 1)) + ("no_payload", "skipped")


def pack(thresholds: Sequence[int]) -> bytes:
    """``struct pias_params`` for ascending demotion thresholds in bytes."""
    t = [int(x) for x in thresholds]
    if len(t) > MAX_THRESHOLDS:
        raise TestbedError(f"{len(t)} PIAS thresholds: the tagger takes at most {MAX_THRESHOLDS}")
    if any(b <= a for a, b in zip(t, t[1:])):
        raise TestbedError(f"PIAS thresholds must rise: {t}")
    return struct.pack(PARAMS_FORMAT, len(t), 0, *(t + [0] * (MAX_THRESHOLDS - len(t))))


class Tagger:
    """Builds the tagger with a run's thresholds and attaches it to senders' interfaces."""

    def __init__(self, thresholds: Sequence[int]) -> None:
        blob = pack(thresholds)
        try:
            K.check_environment(need_root=False)
            obj = K.build(source=SOURCE)
        except K.KernelError as e:
            raise TestbedError(f"PIAS needs its BPF tagger: {e}") from None
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}pias-")
        self.obj = Path(self._tmp.name) / "pias_tag.bpf.o"
        try:
            K.patch_symbol(obj, PARAMS_SYMBOL, blob, self.obj)
        except K.KernelError as e:
            raise TestbedError(str(e)) from None

    def attach(self, ns: str, dev: str) -> None:
        """Tags the data segments leaving ``dev`` in namespace ``ns``. It runs before the
        port's own program (filter 1), so a priority NIC classifies the tagged packet."""
        attach_egress(ns, dev, self.obj, "the PIAS tagger", prio=1)

    def close(self) -> None:
        self._tmp.cleanup()


def tagged(ns: str, dev: str) -> Optional[dict]:
    """The tagger's counters on ``dev``: data segments sent in each band, segments without
    payload, packets left alone. None when no tagger is attached."""
    return program_counters(ns, dev, "pias_stats", STATS)
