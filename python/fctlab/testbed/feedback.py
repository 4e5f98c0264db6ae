"""The router feedback of RCP, RACS and SDC on the testbed: the TCP option that carries it
(``kernel/fb_option.h``, mirrored here) and the switch-port programs that stamp it
(``kernel/{rcp,racs,sdc}_port.bpf.c``: the rules of ``kernel/{rcp,racs,sdc}_rule.h`` on a tc
egress hook).
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import kernel as K
from .ecn import attach_egress, prog_counters, program_counters
from .shell import TEMP_PREFIX, TestbedError

KIND = 253
LENGTH = 20
EXID = 0xFC7A
PROTO = {"rcp": 1, "racs": 2, "sdc": 3}
FLAG_ECHO = 0x01
NO_RATE_YET = 0xFFFFFFFF
#: kind, length, experiment id, protocol, flags, aux, rtt_ns, rate_kbps, echo_kbps
OPTION_FORMAT = "!BBHBBHIII"
#: Offset of rate_kbps within the option.
RATE_OFFSET = 12

#: Layout of ``struct rcp_params`` in kernel/rcp_port.bpf.c (little endian, 32 bytes).
RCP_PARAMS_FORMAT = "<QIIQII"
#: Layout of ``struct racs_params`` in kernel/racs_port.bpf.c (little endian, 16 bytes).
RACS_PARAMS_FORMAT = "<QQ"
#: Layout of ``struct sdc_params`` in kernel/sdc_port.bpf.c (little endian, 24 bytes).
SDC_PARAMS_FORMAT = "<QQQ"
#: Keys of the ports' ``fb_port_stats`` map, in order.
PORT_STATS = (
    "seen",
    "data",
    "echo",
    "lowered",
    "no_option",
    "other_protocol",
    "malformed",
    "queue_pkts_sum",
    "intervals",
)
PPM = 1_000_000


def option(
    proto: str = "rcp",
    *,
    echo: bool = False,
    aux: int = 0,
    rtt_ns: int = 0,
    rate_kbps: int = NO_RATE_YET,
    echo_kbps: int = 0,
) -> bytes:
    """The 20 bytes of the feedback option."""
    flags = FLAG_ECHO if echo else 0
    return struct.pack(OPTION_FORMAT, KIND, LENGTH, EXID, PROTO[proto], flags, aux, rtt_ns, rate_kbps, echo_kbps)


def parse_option(options: bytes) -> Optional[dict]:
    """The feedback option among a segment's TCP option bytes, as a dict of its fields, or
    None when there is none (or it is malformed)."""
    i = 0
    while i < len(options):
        kind = options[i]
        if kind == 0:
            return None
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(options) or options[i + 1] < 2:
            return None
        n = options[i + 1]
        if kind == KIND and n == LENGTH and i + n <= len(options):
            f = struct.unpack(OPTION_FORMAT, options[i : i + n])
            if f[2] == EXID:
                names = ("kind", "length", "exid", "proto", "flags", "aux", "rtt_ns", "rate_kbps", "echo_kbps")
                return dict(zip(names, f)) | {"offset": i}
        i += n
    return None


def _check_rate(capacity_bps: int) -> None:
    if not 0 < capacity_bps < 1 << 38:
        raise TestbedError(f"port rate {capacity_bps} bps: the BPF rules take 1 bps to 275 Gbps")


@dataclass(frozen=True)
class RcpParams:
    """A port's RCP parameters, as the simulator's ``[transport.rcp]`` keys name them."""

    capacity_bps: int
    alpha: float = 0.1
    beta: float = 1.0
    initial_rtt_s: float = 1e-3
    initial_rate_fraction: float = 0.05

    SOURCE = "rcp_port.bpf.c"
    SYMBOL = "rcp_params"

    def pack(self) -> bytes:
        _check_rate(self.capacity_bps)
        return struct.pack(
            RCP_PARAMS_FORMAT,
            int(self.capacity_bps),
            round(self.alpha * PPM),
            round(self.beta * PPM),
            max(1, round(self.initial_rtt_s * 1e9)),
            round(self.initial_rate_fraction * PPM),
            0,
        )


@dataclass(frozen=True)
class RacsParams:
    """A port's RACS parameters."""

    capacity_bps: int
    initial_rtt_s: float = 1e-3

    SOURCE = "racs_port.bpf.c"
    SYMBOL = "racs_params"

    def pack(self) -> bytes:
        _check_rate(self.capacity_bps)
        return struct.pack(RACS_PARAMS_FORMAT, int(self.capacity_bps), max(1, round(self.initial_rtt_s * 1e9)))


@dataclass(frozen=True)
class SdcParams:
    """A port's SDC parameters (``t_p_s`` 0: the interval is the average RTT)."""

    capacity_bps: int
    initial_rtt_s: float = 1e-3
    t_p_s: float = 0.0

    SOURCE = "sdc_port.bpf.c"
    SYMBOL = "sdc_params"

    def pack(self) -> bytes:
        _check_rate(self.capacity_bps)
        return struct.pack(
            SDC_PARAMS_FORMAT,
            int(self.capacity_bps),
            max(1, round(self.initial_rtt_s * 1e9)),
            max(0, round(self.t_p_s * 1e9)),
        )


class PortPrograms:
    """Builds a protocol's port program once and attaches a copy with each port's parameters
    (``params``: the protocol's parameters class, RcpParams, RacsParams or SdcParams)."""

    def __init__(self, params: type) -> None:
        self.params = params
        name = params.SOURCE.split(".")[0]
        try:
            K.check_environment(need_root=False)
            self.obj = K.build(source=params.SOURCE)
        except K.KernelError as e:
            raise TestbedError(f"the switch ports need their BPF program {params.SOURCE}: {e}") from None
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{name}-")
        self._copies: dict = {}

    def object(self, p) -> Path:
        """The program with ``p`` written into its .rodata."""
        if p not in self._copies:
            dst = Path(self._tmp.name) / f"port_{len(self._copies)}.bpf.o"
            try:
                K.patch_symbol(self.obj, p.SYMBOL, p.pack(), dst)
            except K.KernelError as e:
                raise TestbedError(str(e)) from None
            self._copies[p] = dst
        return self._copies[p]

    def attach(self, ns: str, dev: str, p) -> None:
        attach_egress(ns, dev, self.object(p), "the feedback port", prio=1)

    def close(self) -> None:
        self._tmp.cleanup()


def port_counters(ns: str, dev: str) -> Optional[dict]:
    """The feedback port's counters on ``dev``: packets seen, with the option (forward,
    echoes), fields lowered, without the option, of another protocol, malformed; and
    ``mean_queue_pkts``, the mean queue an arriving packet with the option found."""
    c = program_counters(ns, dev, "fb_port_stats", PORT_STATS)
    if c is not None:
        n = c["data"] + c["echo"]
        c["mean_queue_pkts"] = c.pop("queue_pkts_sum") / n if n else None
    return c


class LoadedProgram:
    """A tc program loaded and pinned on its own (not attached), to run packets through it
    with BPF_PROG_TEST_RUN (``bpftool prog run``): ``run(frame)`` returns the frame as the
    program left it. Use as a context manager; the pin, and with it the program and its
    maps, is removed on exit. A verifier rejection raises :class:`fctlab.kernel.KernelError`
    with the verifier's log."""

    BPFFS = Path("/sys/fs/bpf")

    def __init__(self, obj: Path) -> None:
        self.pin = self.BPFFS / f"fctlab-{os.getpid()}-{id(self):x}"
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}prog-")
        p = K._run(["bpftool", "prog", "load", str(obj), str(self.pin), "type", "classifier"], check=False, timeout=120)
        if p.returncode != 0:
            self._tmp.cleanup()
            raise K.KernelError(f"loading {obj.name} failed: {K._last_line(p.stderr or p.stdout)}", log=p.stderr)

    def run(self, frame: bytes) -> bytes:
        src, dst = Path(self._tmp.name) / "in", Path(self._tmp.name) / "out"
        src.write_bytes(frame)
        K._run(["bpftool", "prog", "run", "pinned", str(self.pin), "data_in", str(src), "data_out", str(dst)])
        return dst.read_bytes()

    def counters(self, map_name: str, keys: tuple) -> Optional[dict]:
        """The per-CPU array ``map_name`` summed over CPUs, as ``{keys[i]: count}``."""
        info = K._bpftool_json("prog", "show", "pinned", str(self.pin))
        return prog_counters(info["id"], map_name, keys)

    def close(self) -> None:
        self.pin.unlink(missing_ok=True)
        self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Mangler:
    """A test tool: ``kernel/fb_mangle.bpf.c`` on a port corrupts the feedback option of the
    packets through it (their protocol byte), to check that hosts count a malformed option
    and keep their flows going."""

    SOURCE = "fb_mangle.bpf.c"

    def __init__(self) -> None:
        try:
            self.obj = K.build(source=self.SOURCE)
        except K.KernelError as e:
            raise TestbedError(f"the option mangler: {e}") from None

    def attach(self, ns: str, dev: str) -> None:
        """After the port's own programs (filter 3)."""
        attach_egress(ns, dev, self.obj, "the option mangler", prio=3)
