"""Runs a scenario on real Linux TCP inside network namespaces and writes fctlab results."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import pyarrow as pa

from .. import _core, api
from .. import kernel as K
from ..api import CWND_SCHEMA, FLOW_SCHEMA, LINK_SCHEMA
from ..kernel import parse_bytes
from ..rundir import read_summary, write_run
from .ecn import Marker
from .netns import Network, TestbedError, enter
from .feedback import PortPrograms, port_counters
from .assisted import PROTOCOLS as ASSISTED
from .assisted import feedback_params
from .hostprog import STATS as HOST_STATS
from .hostprog import HostPrograms
from .pias import Tagger, tagged
from ..plan import Flow, rows_for
from .scenario import FRAME, Sockopts, TestbedPlan, load_plan

PORT_BASE = 20000
SUBNET = "10.88"
SETUP_MARGIN_S = 0.3  # between "all receivers listening" and t = 0
#: Why the simulator's other protocols do not run on the testbed.
NOT_ON_THE_TESTBED = {
    "pfabric": ": its switch ports send the packet with the least remaining first and drop the one with the most, "
    "which no Linux qdisc here does",
    "homa": ": Homa is a transport of its own, not TCP; the testbed runs the kernel's TCP",
}
#: Congestion controls whose receiving side takes part (echoes CE marks or feedback): the
#: receivers' listening sockets run them too.
RECEIVER_CC = frozenset({K.DCTCP, *(a.congestion_control for a in ASSISTED.values())})
MAX_RUN_S = 120.0  # hard bound on one run's traffic phase
_BLOCK = bytes(range(256)) * 4096  # 1 MiB pattern

# struct tcp_info offsets (linux/tcp.h)
_TI_SND_MSS = 16
_TI_SND_SSTHRESH = 76
_TI_SND_CWND = 80
_TI_TOTAL_RETRANS = 100
_TI_BYTES_ACKED = 120
_TI_SEGS_OUT = 136
_TI_MIN_RTT = 148
_TI_INFINITE_SSTHRESH = 0x7FFFFFFF


def host_address(index: int) -> str:
    return f"{SUBNET}.{index // 250}.{index % 250 + 1}"


_TI_FIELDS = {  # name: (offset, struct format) in struct tcp_info (linux/tcp.h)
    "snd_mss": (_TI_SND_MSS, "<I"),
    "snd_ssthresh": (_TI_SND_SSTHRESH, "<I"),
    "snd_cwnd": (_TI_SND_CWND, "<I"),
    "total_retrans": (_TI_TOTAL_RETRANS, "<I"),
    "bytes_acked": (_TI_BYTES_ACKED, "<Q"),
    "segs_out": (_TI_SEGS_OUT, "<I"),
    "min_rtt": (_TI_MIN_RTT, "<I"),
}


def _tcp_info(sock: socket.socket) -> dict:
    """The TCP_INFO fields above that the kernel filled in (older kernels fill fewer);
    empty when the socket is closed."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    except OSError:
        return {}
    return {
        name: struct.unpack_from(fmt, raw, off)[0]
        for name, (off, fmt) in _TI_FIELDS.items()
        if len(raw) >= off + struct.calcsize(fmt)
    }


def _socket_counters(sock: socket.socket) -> tuple[Optional[int], Optional[int], Optional[float]]:
    """The socket's retransmissions, segments sent and smallest RTT (seconds; None when the
    kernel measured none)."""
    info = _tcp_info(sock)
    min_rtt = info.get("min_rtt")
    # (~0U: no sample yet)
    rtt = min_rtt / 1e6 if min_rtt not in (None, 0, 0xFFFFFFFF) else None
    return info.get("total_retrans"), info.get("segs_out"), rtt


# --------------------------------------------------------------------------------------
# congestion controls


#: CUBIC's parameters as the kernel's tcp_cubic module has them (its defaults: beta 717/1024,
#: bic_scale 41 for C = 0.4, fast convergence and TCP friendliness on); they are the module's,
#: for every socket of the machine, so a run can only use them.
KERNEL_CUBIC = {"cubic_beta": 0.7, "cubic_c": 0.4, "cubic_fast_convergence": True, "cubic_reno_friendly": True}


def _kernel_cubic(f: Flow, so: Sockopts) -> None:
    """A ``cubic`` flow runs the kernel's own CUBIC (tcp_cubic), whose parameters are the
    module's: a flow that sets others is refused, naming the key."""
    for key, value in f.params.items():
        if KERNEL_CUBIC.get(key) != value:
            raise TestbedError(
                f"flows[{f.flow_id}].cubic.{key}: the kernel's CUBIC runs with {key} = {KERNEL_CUBIC.get(key)!r} "
                f"(its module's parameters, for the whole machine), not {value!r}"
            )
    if "cubic" not in K.available_congestion_controls():
        raise TestbedError(
            'protocol "cubic" needs the kernel\'s tcp_cubic (not in net.ipv4.tcp_available_congestion_control)'
        )
    so.cc = "cubic"
    f.protocol = "cubic"


def resolve_congestion_controls(plan: TestbedPlan, halving: Optional[str] = None) -> Optional[K.AtcpParams]:
    """Sets each flow's kernel congestion control; returns the ATCP parameters to load, or
    None when no flow uses ATCP. ``tcp`` (and its aliases) is the kernel's ``reno``. The
    kernel ATCP's halving rule is the ATCP flows' ``halving`` key (all alike; the simulator's
    default ``per-episode`` when absent), or ``halving`` when given."""
    fixed: list[float] = []
    fn_params: Optional[dict] = None
    halvings: set = set()
    for f in plan.flows:
        so = plan.sockopts[f.flow_id]
        p = f.protocol.lower()
        if p in ("tcp", "newreno", "reno"):
            so.cc = "reno"
            f.protocol = "tcp"
        elif p == "cubic":
            _kernel_cubic(f, so)
        elif p in ("dctcp", "pias"):
            # fctlab's DCTCP (kernel/dctcp.bpf.c): the receivers' sockets run it too, for its
            # echo of CE marks. PIAS is DCTCP whose senders' packets are tagged (pias.py).
            so.cc = K.DCTCP
            f.protocol = p
        elif p in ASSISTED:
            # a router-assisted protocol whose hosts and switch ports run BPF programs
            # (assisted.py: hostprog.py, feedback.py); its receivers run it too, to echo the feedback
            so.cc = ASSISTED[p].congestion_control
            f.protocol = p
        elif p == "atcp":
            wf = f.params.get("weight_function", "step")
            so.weight_function = wf
            halvings.add(f.params.get("halving") or "per-episode")
            if wf == "fixed":
                if "weight" not in f.params:
                    raise TestbedError(f'flows[{f.flow_id}]: weight_function "fixed" needs `weight`')
                w = float(f.params["weight"])
                if w not in fixed:
                    fixed.append(w)
                if len(fixed) > 3:
                    raise TestbedError("at most three distinct fixed ATCP weights per run (atcp_w1..atcp_w3)")
            elif wf in ("step", "linear"):
                mine = {k: f.params.get(k) for k in ("w_high", "w_low", "threshold", "threshold_low", "threshold_high")}
                mine["function"] = wf
                if fn_params is not None and fn_params != mine:
                    raise TestbedError(f"flows[{f.flow_id}]: all step/linear ATCP flows of a run must share parameters")
                fn_params = mine
                so.cc = "atcp"
            else:
                raise TestbedError(
                    f"flows[{f.flow_id}]: ATCP weight_function {wf!r} is not available in the kernel (step, linear, fixed)"
                )
        else:
            why = NOT_ON_THE_TESTBED.get(p, "")
            raise TestbedError(
                f"flows[{f.flow_id}]: protocol {f.protocol!r} is not supported by the testbed (tcp, cubic, dctcp, pias, atcp, rcp, racs, sdc){why}"
            )
    if not fixed and fn_params is None:
        return None
    if halving is None:
        if len(halvings) > 1:
            raise TestbedError(
                f"all ATCP flows of a run must share `halving` (the kernel object has one rule): {sorted(halvings)}"
            )
        halving = halvings.pop()
    w_fixed = (fixed + [1.0, 2.0, 3.0])[:3] if fixed else [1.0, 2.0, 3.0]
    # keep the default mapping (w -> atcp_w<w>) when the weights allow it
    if all(w in (1.0, 2.0, 3.0) for w in fixed):
        w_fixed = [1.0, 2.0, 3.0]
    for f in plan.flows:
        so = plan.sockopts[f.flow_id]
        if f.protocol == "atcp" and so.weight_function == "fixed":
            so.cc = f"atcp_w{w_fixed.index(float(f.params['weight'])) + 1}"
    fp = fn_params or {}

    def num(k, default):
        v = fp.get(k)
        return default if v is None else v

    def size(k, default):
        v = fp.get(k)
        return default if v is None else (int(v) if isinstance(v, (int, float)) else parse_bytes(str(v)))

    return K.AtcpParams(
        function=fp.get("function", "step"),
        w_high=float(num("w_high", 3.0)),
        w_low=float(num("w_low", 1.0)),
        threshold=size("threshold", 10_000_000),
        threshold_low=size("threshold_low", 1_000_000),
        threshold_high=size("threshold_high", 10_000_000),
        w_fixed=tuple(w_fixed),
        halving=halving,
    ).validate()


# --------------------------------------------------------------------------------------
# traffic


@dataclass
class Transfer:
    start: Optional[float] = None
    finish: Optional[float] = None
    received: int = 0
    completed: bool = False
    retransmits: Optional[int] = None
    segs_out: Optional[int] = None
    min_rtt_s: Optional[float] = None
    cc_used: str = ""
    error: str = ""
    sock: Optional[socket.socket] = None  # the sender's socket while it is open (cwnd samples)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _receiver(
    ns: str, port: int, f: Flow, so: Sockopts, res: Transfer, ready: threading.Barrier, stop_at: list, bound: float
):
    """Accepts one connection, counts bytes until EOF (sized flow, then a 1-byte ACK) or
    until the stop time (long-lived flow)."""
    try:
        enter(ns)
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except Exception as e:  # noqa: BLE001 - reported per flow
        res.error = f"receiver: {e}"
        ready.abort()
        return
    try:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if so.cc in RECEIVER_CC:  # the accepted socket inherits it: its receiver side echoes feedback
            srv.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, so.cc.encode())
        if so.tos:  # so does its band on priority ports: the flow's ACKs share it
            srv.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, so.tos)
        srv.bind(("0.0.0.0", port))
        srv.listen(1)
        ready.wait(timeout=30)
        srv.settimeout(max(0.1, bound - time.monotonic()))
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(0.2)
            n = 0
            while time.monotonic() < bound:
                if f.size_bytes is None and stop_at[0] is not None and time.monotonic() >= stop_at[0]:
                    break
                try:
                    b = conn.recv(1 << 20)
                except socket.timeout:
                    continue
                if not b:
                    break
                n += len(b)
                res.received = n
            if f.size_bytes is not None and n == f.size_bytes:
                conn.settimeout(5)
                conn.sendall(b"A")
    except threading.BrokenBarrierError:
        pass
    except OSError as e:
        res.error = res.error or f"receiver: {e}"
    finally:
        srv.close()


class Groups:
    """Completion of flow groups, for flows that start only after a group has completed
    (``after``: incast rounds, partition-aggregate responses, shuffle jobs), as in the
    simulator: such a flow starts ``start_s`` after the last flow of its group completes."""

    def __init__(self, flows: Sequence[Flow]):
        self._lock = threading.Lock()
        self._left: dict = {}
        self._done: dict = {}
        for f in flows:
            if f.group:
                self._left[f.group] = self._left.get(f.group, 0) + 1
                self._done.setdefault(f.group, threading.Event())
        self.completed_at: dict = {}

    def completed(self, f: Flow) -> None:
        if not f.group:
            return
        with self._lock:
            self._left[f.group] -= 1
            if self._left[f.group] == 0:
                self.completed_at[f.group] = time.monotonic()
                self._done[f.group].set()

    def wait(self, group: str, until: float) -> Optional[float]:
        """Waits (until the monotonic time ``until`` at most) for ``group`` to complete;
        returns the moment it did, or None."""
        ev = self._done.get(group)
        if ev is None or not ev.wait(max(0.0, until - time.monotonic())):
            return None
        return self.completed_at[group]


def _sender(
    ns: str,
    dst: str,
    port: int,
    f: Flow,
    so: Sockopts,
    res: Transfer,
    t0: float,
    stop_at: Optional[float],
    bound: float,
    groups: Optional[Groups] = None,
):
    try:
        enter(ns)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except Exception as e:  # noqa: BLE001
        res.error = f"sender: {e}"
        return
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, so.cc.encode())
        if so.tos:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, so.tos)
        if so.mark:  # RACS, SDC: the weight or size its host program reads (a u32)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, struct.pack("=I", so.mark))
        base = t0
        if f.after:
            limit = min(bound, stop_at) if stop_at is not None else bound
            base = groups.wait(f.after, limit) if groups is not None else None
            if base is None:
                return  # the group never completed: this flow never starts, as in the simulator
        wait = base + f.start_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        end = min(bound, stop_at) if stop_at is not None else bound
        if time.monotonic() >= end:
            return
        s.settimeout(max(0.1, end - time.monotonic()))
        res.start = time.monotonic()
        s.connect((dst, port))
        res.cc_used = K.socket_congestion(s)
        with res.lock:
            res.sock = s
        view = memoryview(_BLOCK)
        if f.size_bytes is not None:
            left = f.size_bytes
            while left > 0:
                k = min(left, len(view))
                s.sendall(view[:k])
                left -= k
            s.shutdown(socket.SHUT_WR)
            if s.recv(1) == b"A":
                res.finish = time.monotonic()
                res.completed = True
                if groups is not None:
                    groups.completed(f)
        else:
            s.settimeout(0.2)
            while time.monotonic() < end:
                try:
                    s.send(view[:65536])
                except socket.timeout:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    if time.monotonic() < end - STOP_RACE_S:
                        raise
                    break  # the receiver closed at the stop time, while this send waited
        res.retransmits, res.segs_out, res.min_rtt_s = _socket_counters(s)
    except OSError as e:
        if not res.completed:
            res.error = f"sender: {e}"
    finally:
        if res.retransmits is None:
            res.retransmits, res.segs_out, res.min_rtt_s = _socket_counters(s)
        with res.lock:
            res.sock = None
        s.close()


#: A long-lived flow's receiver closes at the stop time; a send refused this close to it is
#: the end of the flow, not an error.
STOP_RACE_S = 0.25

#: Ports of the scheduled pairs' receivers: after every flow's own port.
SCHED_PORT_BASE = PORT_BASE + 2000


def scheduled_pairs(plan: TestbedPlan) -> dict:
    """The sized flows of each host pair, when the plan has a scheduling layer."""
    pairs: dict = {}
    if plan.scheduler is not None:
        for f in plan.flows:
            if f.size_bytes is not None:
                pairs.setdefault((f.src, f.dst), []).append(f)
    return pairs


def _sched_receiver(ns: str, listen: str, expect: int, ready: threading.Barrier, timeout_s: float, out: list):
    """One scheduled pair's receiver (fctlab sched): every delivery or error, in order."""
    try:
        enter(ns)
        ready.wait(timeout=30)
        out.extend(_core.sched_recv(listen, expect, timeout_s, True)["rows"])
    except threading.BrokenBarrierError:
        pass
    except Exception as e:  # noqa: BLE001 - reported for the pair's flows
        out.append({"kind": "failed", "message": None, "size_bytes": 0, "error": f"receiver: {e}"})


def _sched_sender(ns: str, to: str, flows: list, sched: dict, t0: float, results: dict):
    """One scheduled pair's sender: the flows' messages at their start times, one report each."""
    try:
        enter(ns)
        wait = t0 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        call_mono, call_unix = time.monotonic(), time.time()
        from ..sched import classes as tag_classes  # lazy: fctlab.sched loads pandas (250 ms of start-up)

        classes = tag_classes([f.tag for f in flows], sched.get("priority_tags") or [])
        reports = _core.sched_send(
            to,
            [f.size_bytes for f in flows],
            [f.start_s for f in flows],
            classes,
            sched["policy"],
            sched.get("priority_then", "las"),
            16384,
            sched.get("send_buffer_bytes") or None,
            30.0,
        )
    except Exception as e:  # noqa: BLE001
        for f in flows:
            results[f.flow_id].error = f"scheduled sender: {e}"
        return
    for r in reports:
        f = flows[r["index"]]
        res = results[f.flow_id]
        res.start = call_mono + (r["start_unix_s"] - call_unix)
        if r["error"] is None:
            res.finish = res.start + r["transfer_s"]
            res.completed = True
            res.received = f.size_bytes
        else:
            res.error = r["error"]


def _socket_cc(sock: socket.socket) -> Optional[str]:
    """The congestion control the kernel runs on ``sock`` (TCP_CONGESTION), or None."""
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0", 1)[0].decode()
    except OSError:
        return None


def _kernel_weight(cc: Optional[str], kernel_params: Optional[K.AtcpParams], acked: int) -> Optional[float]:
    """The weight the kernel's ATCP applies to a socket, from what the kernel reports: the
    socket's congestion control (``cc``), the loaded object's parameters (read back from its
    .rodata map) and the bytes TCP_INFO says were acked, combined as atcp.bpf.c's weight_of
    does (``AtcpParams.weight_at`` is its mirror). None for other congestion controls."""
    if kernel_params is None or cc not in K.INSTANCES:
        return None
    if cc == "atcp":
        return kernel_params.weight_at(acked)
    return float(kernel_params.w_fixed[K.INSTANCES.index(cc) - 1])


def _sample_cwnd(
    plan: TestbedPlan,
    results: dict,
    kernel_params: Optional[K.AtcpParams],
    t0: float,
    end: float,
    done: threading.Event,
    out: dict,
) -> None:
    """Samples the traced senders' TCP_INFO every ``plan.cwnd_interval_s`` from t0 until
    every sender is done (or ``end``), appending rows (dicts of the cwnd columns it measures) to ``out``."""
    interval = plan.cwnd_interval_s
    traced = [f for f in plan.flows if plan.cwnd_flows is None or f.flow_id in plan.cwnd_flows]
    last = {}  # flow_id -> (time, bytes_acked)
    ccs = {}  # flow_id -> the socket's congestion control, as the kernel reports it
    k = 0
    while not done.is_set():
        at = t0 + k * interval
        now = time.monotonic()
        if at > end:
            break
        if at > now:
            done.wait(at - now)
            continue
        k = max(k + 1, int((now - t0) / interval) + 1)  # skip samples missed while busy
        for f in traced:
            r = results[f.flow_id]
            with r.lock:
                if r.sock is None or r.completed:
                    continue
                info = _tcp_info(r.sock)
                if f.flow_id not in ccs:
                    ccs[f.flow_id] = _socket_cc(r.sock)
            if "bytes_acked" not in info:
                continue
            mss, ssth, cwnd, acked = (info[k] for k in ("snd_mss", "snd_ssthresh", "snd_cwnd", "bytes_acked"))
            t_prev, a_prev = last.get(f.flow_id, (r.start or now, 0))
            last[f.flow_id] = (now, acked)
            # pacing_bps stays null: the kernel's protocols here are window-based
            out.append(
                dict(
                    time_s=now - t0,
                    flow_id=f.flow_id,
                    cwnd_bytes=cwnd * mss,
                    ssthresh_bytes=None if ssth >= _TI_INFINITE_SSTHRESH else ssth * mss,
                    rate_bps=(acked - a_prev) * 8 / (now - t_prev) if now > t_prev else 0.0,
                    weight=_kernel_weight(ccs[f.flow_id], kernel_params, acked),
                )
            )


def _base_rtt(net: Network, src: str, dst: str, port: int) -> float:
    """Minimum of a few TCP handshakes between two hosts (SYN to SYN-ACK), in seconds."""
    best = [float("inf")]

    def srv():
        try:
            enter(net.ns(dst))
            with socket.socket() as l:
                l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                l.bind(("0.0.0.0", port))
                l.listen(8)
                l.settimeout(3)
                for _ in range(5):
                    c, _ = l.accept()
                    c.close()
        except OSError:
            pass

    def cli():
        try:
            enter(net.ns(src))
            time.sleep(0.05)
            for _ in range(5):
                with socket.socket() as c:
                    c.settimeout(2)
                    t = time.monotonic()
                    c.connect((net.addresses[dst], port))
                    best[0] = min(best[0], time.monotonic() - t)
        except OSError:
            pass

    ts = [threading.Thread(target=srv, daemon=True), threading.Thread(target=cli, daemon=True)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(6)
    return best[0] if best[0] != float("inf") else float("nan")


# --------------------------------------------------------------------------------------
# one run


def build_network(plan: TestbedPlan, net: Network, marker=None, tagger=None, port_program=None) -> None:
    """The plan's namespaces, links, ports and addresses; ``tagger`` (a pias.Tagger) goes on
    the interface of every host that sends PIAS flows, and ``port_program(ns, dev, rate_bps)``
    runs for every switch port."""
    for sw in plan.switches:
        net.add_node(sw, switch=True)
    for h in plan.hosts:
        net.add_node(h, switch=False)
    port_no = {sw: 0 for sw in plan.switches}

    def dev(node):
        if node in port_no:
            port_no[node] += 1
            return f"p{port_no[node]}"
        return "eth0"

    ports = dict(
        marker=marker,
        ecn_threshold=plan.ecn_threshold,
        bands=plan.bands,
        nic_bands=plan.nic_bands,
        port_program=port_program,
    )
    for l in plan.links:
        if l.level == "bottleneck" and plan.delay_s > 0:
            # left -> [TBF] -> dl (delay line) -> right, and back through right's TBF
            net.add_node("dl", switch=False)
            net.add_link(
                l.a,
                "dl",
                dev(l.a),
                "a0",
                a_switch=True,
                b_switch=False,
                rate_a_bps=l.rate_a,
                limit_a=l.buf_a,
                rate_b_bps=None,
                limit_b=0,
                **ports,
            )
            net.add_link(
                "dl",
                l.b,
                "a1",
                dev(l.b),
                a_switch=False,
                b_switch=True,
                rate_a_bps=None,
                limit_a=0,
                rate_b_bps=l.rate_b,
                limit_b=l.buf_b,
                **ports,
            )
            net.relabel_ports("dl", l.a, l.b)
            net.add_delay_line("dl", "a0", "a1", plan.delay_s)
            continue
        da, db = dev(l.a), dev(l.b)
        net.add_link(
            l.a,
            l.b,
            da,
            db,
            a_switch=l.a in port_no,
            b_switch=l.b in port_no,
            rate_a_bps=l.rate_a,
            limit_a=l.buf_a,
            rate_b_bps=l.rate_b,
            limit_b=l.buf_b,
            **ports,
        )
    for i, h in enumerate(plan.hosts):
        net.add_address(h, "eth0", host_address(i), 16)
    if tagger is not None:
        for h in sorted({f.src for f in plan.flows if f.protocol == "pias"}):
            tagger.attach(net.ns(h), "eth0")
    # Every flow starts as a fresh connection, as in the simulator: Linux would otherwise
    # start a connection with the ssthresh and RTT it remembers for that destination.
    ecn_hosts = {f.src for f in plan.flows if f.ecn}
    for h in sorted({f.src for f in plan.flows} | {f.dst for f in plan.flows}):
        net.set_sysctls(
            h, {"net.ipv4.tcp_no_metrics_save": "1", **({"net.ipv4.tcp_ecn": "1"} if h in ecn_hosts else {})}
        )


def set_bands(plan: TestbedPlan) -> None:
    """On strict-priority ports, each flow's band as the simulator gives it: a PIAS flow's
    packets are tagged as they leave (DSCP 0 until then: its handshake and ACKs in band 0);
    any other flow's packets and ACKs all take the band of its tag, the first of
    `priority_tags` band 0 and so on, other tags the last band. The band is the sockets'
    DSCP (``IP_TOS``), which the ports classify."""
    if plan.bands < 2:
        return
    for f in plan.flows:
        if f.protocol == "pias":
            continue
        tags = plan.priority_tags
        band = tags.index(f.tag) if f.tag in tags else plan.bands - 1
        plan.sockopts[f.flow_id].tos = min(band, plan.bands - 1) << 2


def pias_thresholds(plan: TestbedPlan) -> Optional[list]:
    """The demotion thresholds (bytes) of the plan's PIAS flows, or None when it has none.
    The tagger has one set per run and tags every connection of a host, so the PIAS flows
    must share their thresholds, their hosts must send nothing else, and the ports must have
    the bands to serve them."""
    pias = [f for f in plan.flows if f.protocol == "pias"]
    if not pias:
        return None
    ts = [int(x) for x in pias[0].params.get("pias_thresholds", [])]
    for f in pias:
        if [int(x) for x in f.params.get("pias_thresholds", [])] != ts:
            raise TestbedError(f"flows[{f.flow_id}]: all PIAS flows of a testbed run must share pias_thresholds")
    senders = {f.src for f in pias}
    other = next((f for f in plan.flows if f.src in senders and f.protocol != "pias"), None)
    if other is not None:
        raise TestbedError(
            f"flows[{other.flow_id}]: host {other.src} sends PIAS flows and a {other.protocol} flow; on the "
            "testbed the PIAS tagger tags every connection of its host"
        )
    if plan.bands < 2:
        raise TestbedError('protocol "pias" needs strict-priority ports: network.queue = "priority"')
    return ts


def path_rate(plan: TestbedPlan, f: Flow) -> float:
    """Slowest rate on the flow's path (the testbed's topologies have one path per pair)."""
    return min(l.rate_a if l.a == a else l.rate_b for l, a in plan.path(f.src, f.dst))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While a run holds namespaces, SIGTERM raises KeyboardInterrupt, so that the cleanup
    runs when the process is terminated (a test runner or a service manager stopping it), not
    only on Ctrl-C. Only the main thread can set signal handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_plan(
    plan: TestbedPlan,
    *,
    scenario_file: str = "",
    overrides: Sequence[str] = (),
    sha256: str = "",
    max_run_s: float = MAX_RUN_S,
    atcp_halving: Optional[str] = None,
    progress=None,
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    """Runs ``plan``; returns the flows and links tables, the summary, and the cwnd table
    (None unless ``[monitor] cwnd_interval`` is set). ``progress(elapsed_s, flows_done,
    flows_total)`` is called about every 0.5 s while the traffic runs. SIGTERM interrupts it
    as Ctrl-C does (KeyboardInterrupt, after the namespaces are removed)."""
    with _sigterm_as_interrupt(), _one_run_at_a_time():
        return _run_plan(plan, scenario_file, overrides, sha256, max_run_s, atcp_halving, progress)


#: Testbed runs on one machine take turns (a lock on this file): they share the CPUs that
#: time their traffic, and the kernel's names of the programs they load (one fctlab_rcp).
LOCK_FILE = Path("/run/lock/fctlab-testbed.lock")


@contextlib.contextmanager
def _one_run_at_a_time():
    """Holds the testbed's lock for a run, waiting (and saying so) while another run holds it."""
    path = LOCK_FILE if LOCK_FILE.parent.is_dir() else Path(tempfile.gettempdir()) / LOCK_FILE.name
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"fctlab testbed: waiting for another testbed run on this machine ({path})", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _load_dctcp(plan: TestbedPlan) -> bool:
    """Registers fctlab's DCTCP when a flow needs it and it is not registered yet; returns
    whether this call registered it (and must unregister it)."""
    if not any(so.cc == K.DCTCP for so in plan.sockopts.values()) or K.dctcp_registered():
        return False
    try:
        K.load_dctcp()
    except K.KernelError as e:
        raise TestbedError(f"loading DCTCP: {e}") from None
    return True


def _load_atcp(atcp) -> bool:
    """Loads the kernel ATCP with `atcp`'s parameters unless it is registered with the same
    ones already; returns whether this call loaded it (and must unload it)."""
    try:
        if K.registered():
            have = K.loaded_params()
            if have is None or have.pack() != atcp.pack():
                raise TestbedError("ATCP is already registered with other parameters; run `fctlab kernel unload` first")
            return False
        K.load(atcp)
        return True
    except K.KernelError as e:
        raise TestbedError(f"loading ATCP: {e}") from None


class _Programs:
    """What a run loads besides its namespaces, and unloads after them: the port marker, the
    PIAS tagger, and the kernel ATCP and DCTCP when this run registered them."""

    def __init__(self) -> None:
        self.marker = self.tagger = self.ports = self.hosts = None
        self.port_params: dict = {}
        self.stamping: list = []  # (ns, dev) of the ports running the protocol's program
        self.atcp_here = self.dctcp_here = False

    def load(self, plan: TestbedPlan, atcp) -> None:
        thresholds = pias_thresholds(plan)
        set_bands(plan)
        if plan.ecn_threshold is not None or max(plan.bands, plan.nic_bands) > 1:
            self.marker = Marker()
        if thresholds is not None:
            self.tagger = Tagger(thresholds)
        if atcp is not None:
            self.atcp_here = _load_atcp(atcp)
        self.dctcp_here = _load_dctcp(plan)
        assisted = sorted({f.protocol for f in plan.flows if f.protocol in ASSISTED})
        if assisted:
            proto = assisted[0]
            if any(f.protocol != proto for f in plan.flows):
                raise TestbedError(
                    f"a testbed run with {proto} flows runs {proto} only (its switch ports stamp every flow)"
                )
            self.port_params, host_params = feedback_params(plan)
            self.ports = PortPrograms(ASSISTED[proto].port)
            self.hosts = HostPrograms(proto, host_params)

    def port_program(self, ns: str, dev: str, rate_bps: float) -> None:
        """Attaches the protocol's switch-port program, if the run has one."""
        if self.ports is not None:
            self.ports.attach(ns, dev, self.ports.params(capacity_bps=int(rate_bps), **self.port_params))
            self.stamping.append((ns, dev))

    def port_counters(self, net: Network) -> Optional[dict]:
        """The stamping ports' counters, by link (None: the run has none)."""
        if self.ports is None:
            return None
        links = {(p.ns, p.dev): p.link for p in net.ports}
        return {links.get(k, f"{k[0]}:{k[1]}"): port_counters(*k) for k in self.stamping}

    def host_counters(self) -> Optional[dict]:
        """The host programs' counters, once ``close`` has unloaded them."""
        if self.hosts is None:
            return None
        return dict(zip(HOST_STATS, self.hosts.counters.get("fb_host_stats", [])))

    def close(self) -> None:
        for prog in (self.marker, self.tagger, self.ports, self.hosts):
            if prog is not None:
                prog.close()
        for here, unload in ((self.atcp_here, K.unload), (self.dctcp_here, K.unload_dctcp)):
            if here:
                try:
                    unload()
                except K.KernelError:
                    pass


def _start_receivers(
    net, plan: TestbedPlan, pairs: dict, plain: list, results: dict, ready, stop_at: list, bound: float, horizon: float
):
    """A receiver thread per scheduled pair and per plain flow, each in its host's namespace;
    returns the threads and, per scheduled pair, the list its receiver fills with deliveries."""
    threads, deliveries = [], {}
    for k, ((src, dst), fl) in enumerate(pairs.items()):
        deliveries[(src, dst)] = []
        args = (
            net.ns(dst),
            f"{net.addresses[dst]}:{SCHED_PORT_BASE + k}",
            len(fl),
            ready,
            horizon + 30,
            deliveries[(src, dst)],
        )
        threads.append(threading.Thread(target=_sched_receiver, daemon=True, args=args))
    for f in plain:
        args = (
            net.ns(f.dst),
            PORT_BASE + f.flow_id,
            f,
            plan.sockopts[f.flow_id],
            results[f.flow_id],
            ready,
            stop_at,
            bound,
        )
        threads.append(threading.Thread(target=_receiver, daemon=True, args=args))
    for t in threads:
        t.start()
    return threads, deliveries


def _start_senders(
    net, plan: TestbedPlan, pairs: dict, plain: list, results: dict, t0: float, stop_abs, end_abs
) -> list:
    """A sender thread per scheduled pair and per plain flow, started at `t0`."""
    threads = []
    groups = Groups(plan.flows)
    for k, ((src, dst), fl) in enumerate(pairs.items()):
        args = (net.ns(src), f"{net.addresses[dst]}:{SCHED_PORT_BASE + k}", fl, plan.scheduler, t0, results)
        threads.append(threading.Thread(target=_sched_sender, daemon=True, args=args))
    for f in plain:
        args = (
            net.ns(f.src),
            net.addresses[f.dst],
            PORT_BASE + f.flow_id,
            f,
            plan.sockopts[f.flow_id],
            results[f.flow_id],
            t0,
            stop_abs,
            end_abs,
            groups,
        )
        threads.append(threading.Thread(target=_sender, daemon=True, args=args))
    for t in threads:
        t.start()
    return threads


def _apply_deliveries(pairs: dict, deliveries: dict, results: dict) -> None:
    """The receivers' word on each scheduled message: a message that arrived with other bytes
    than were sent, or not at all, is not complete whatever the sender heard. (Each pair's
    receiver serves that pair's one session, so a message's id is its index.)"""
    for (src, dst), fl in pairs.items():
        for d in deliveries[(src, dst)]:
            if d["kind"] == "refused" or d["error"] is None:
                continue
            if d["message"] is None:
                for f in fl:
                    results[f.flow_id].error = results[f.flow_id].error or d["error"]
                continue
            i = d["message"]
            if 0 <= i < len(fl):
                r = results[fl[i].flow_id]
                r.error, r.completed, r.finish = d["error"], False, None


def _run_plan(
    plan: TestbedPlan,
    scenario_file: str,
    overrides: Sequence[str],
    sha256: str,
    max_run_s: float,
    atcp_halving: Optional[str],
    progress,
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    wall0 = time.monotonic()
    atcp = resolve_congestion_controls(plan, atcp_halving)
    interrupted = False
    results = {f.flow_id: Transfer() for f in plan.flows}
    scheduled: set = set()
    stats, base_rtts, duration = {}, {}, 0.0
    cwnd_rows = None
    net = Network()
    progs = _Programs()
    pias_counts = feedback = None
    try:
        progs.load(plan, atcp)
        build_network(plan, net, progs.marker, progs.tagger, progs.port_program)
        for f in plan.flows:
            key = (f.src, f.dst)
            if key not in base_rtts:
                base_rtts[key] = _base_rtt(net, f.src, f.dst, PORT_BASE - 1 - len(base_rtts))
        last_start = max(f.start_s for f in plan.flows)
        horizon = plan.stop_time_s if plan.stop_time_s is not None else last_start + max_run_s
        horizon = min(horizon, max_run_s)
        pairs = scheduled_pairs(plan)
        scheduled = {f.flow_id for fl in pairs.values() for f in fl}
        plain = [f for f in plan.flows if f.flow_id not in scheduled]
        ready = threading.Barrier(len(plain) + len(pairs) + 1)
        stop_at: list = [None]
        bound = time.monotonic() + horizon + 30  # sockets never block past this
        threads, deliveries = _start_receivers(net, plan, pairs, plain, results, ready, stop_at, bound, horizon)
        try:
            ready.wait(timeout=30)
        except threading.BrokenBarrierError:
            errs = [r.error for r in results.values() if r.error]
            raise TestbedError(f"receivers did not start: {errs[0] if errs else 'timeout'}") from None
        t0 = time.monotonic() + SETUP_MARGIN_S
        stop_abs = t0 + plan.stop_time_s if plan.stop_time_s is not None else None
        stop_at[0] = stop_abs
        end_abs = t0 + horizon
        threads += _start_senders(net, plan, pairs, plain, results, t0, stop_abs, end_abs)
        sampler, sampling_done = None, threading.Event()
        if plan.cwnd_interval_s is not None:
            cwnd_rows = []
            kernel_params = K.loaded_params() if atcp is not None else None
            sampler = threading.Thread(
                target=_sample_cwnd,
                daemon=True,
                args=(plan, results, kernel_params, t0, end_abs, sampling_done, cwnd_rows),
            )
            sampler.start()
        # bounded: every socket operation ends by `bound`
        while any(t.is_alive() for t in threads) and time.monotonic() < bound + 1:
            for t in threads:
                t.join(0.5)
                if t.is_alive():
                    break
            if progress is not None:
                progress(time.monotonic() - t0, sum(r.completed for r in results.values()), len(plan.flows))
        if sampler is not None:
            sampling_done.set()
            sampler.join(5)
        duration = (stop_abs if stop_abs is not None else time.monotonic()) - t0
        if plan.stop_time_s is None:
            ends = [r.finish for r in results.values() if r.finish is not None]
            duration = (
                (max(ends) - t0) if ends and all(r.completed for r in results.values()) else time.monotonic() - t0
            )
        stats = net.port_stats()
        feedback = progs.port_counters(net)
        if progs.tagger is not None:
            pias_counts = {h: tagged(net.ns(h), "eth0") for h in sorted({f.src for f in plan.flows})}
        _apply_deliveries(pairs, deliveries, results)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        left = net.destroy()
        progs.close()
        if left:
            raise TestbedError(f"could not delete namespaces {', '.join(left)}")

    measured = Measured(
        results=results,
        stats=stats,
        base_rtts=base_rtts,
        scheduled=scheduled,
        t0=t0,
        duration=duration,
        wall_s=time.monotonic() - wall0,
        interrupted=interrupted,
        atcp=atcp,
        delay_line=net.delay_stats.get("dl"),
        cwnd_rows=cwnd_rows,
        pias_tagged=pias_counts,
        feedback=None if feedback is None else {"ports": feedback, "hosts": progs.host_counters()},
    )
    return collect(plan, measured, scenario_file=scenario_file, overrides=overrides, sha256=sha256)


@dataclass
class Measured:
    """What a testbed run measured, the input of :func:`collect` (times are
    ``time.monotonic()`` seconds; ``t0`` is the run's time zero)."""

    results: dict  # flow_id -> Transfer
    stats: dict  # "a->b" -> the port's counters and its plan ("port")
    base_rtts: dict  # (src, dst) -> seconds
    scheduled: set  # flow ids carried by the scheduling library
    t0: float
    duration: float
    wall_s: float
    interrupted: bool
    atcp: Optional[K.AtcpParams]
    delay_line: Optional[dict]
    cwnd_rows: Optional[list]  # rows of the cwnd table (dicts)
    pias_tagged: Optional[dict] = None  # sending host -> the PIAS tagger's counters
    feedback: Optional[dict] = None  # router feedback programs' counters (ports by link, hosts)


def collect(
    plan: TestbedPlan, m: Measured, *, scenario_file: str = "", overrides: Sequence[str] = (), sha256: str = ""
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    """The flows and links tables, the summary and the cwnd table of a run from what it
    measured (no network needed: recorded measurements give the same tables)."""
    cwnd = None
    if m.cwnd_rows is not None:
        cwnd = pa.Table.from_pylist(rows_for(CWND_SCHEMA, m.cwnd_rows, where="testbed cwnd"), schema=CWND_SCHEMA)
    summary = _summary(plan, m, scenario_file=scenario_file, overrides=overrides, sha256=sha256)
    return _flow_table(plan, m), _link_table(plan, m), summary, cwnd


def _flow_table(plan: TestbedPlan, m: Measured) -> pa.Table:
    """What the testbed measured per flow; every other column is null (``rows_for``): the
    kernel does not count timeouts per kind, loss probes or per-flow drops (the qdiscs count
    drops per port), and keeps a smoothed RTT, not a mean."""
    measured = []
    for f in plan.flows:
        r = m.results[f.flow_id]
        start = (r.start - m.t0) if r.start is not None else None
        finish = (r.finish - m.t0) if r.finish is not None else None
        fct = (finish - start) if (finish is not None and start is not None) else None
        rtt = m.base_rtts.get((f.src, f.dst), float("nan"))
        ideal = (
            (f.size_bytes * 8 / path_rate(plan, f) + (0.0 if rtt != rtt else rtt)) if f.size_bytes is not None else None
        )
        row = dict(
            flow_id=f.flow_id,
            src=f.src,
            dst=f.dst,
            size_bytes=f.size_bytes,
            bytes_delivered=r.received,
            start_s=start,
            finish_s=finish,
            fct_s=fct,
            ideal_fct_s=ideal,
            slowdown=fct / ideal if (fct is not None and ideal) else None,
            completed=bool(r.completed),
            protocol=f.protocol,
            deadline_s=f.deadline_s,
            tag=f.tag,
            group=f.group,
        )
        if f.flow_id in m.scheduled:
            # the scheduling library neither reads TCP_INFO nor times its connections
            row["scheduler"] = plan.scheduler["policy"]
        else:
            row.update(
                scheduler="none",
                conn_finish_s=finish,
                retransmits=r.retransmits if r.retransmits is not None else 0,
                packets_sent=r.segs_out if r.segs_out is not None else 0,
                rtt_min_s=r.min_rtt_s,
            )
        measured.append(row)
    return pa.Table.from_pylist(rows_for(FLOW_SCHEMA, measured, where="testbed flows"), schema=FLOW_SCHEMA)


def _link_table(plan: TestbedPlan, m: Measured) -> pa.Table:
    """What the qdiscs counted per port; queue maxima and means are null (``rows_for``): the
    testbed does not sample its queues."""
    measured = []
    for i, (name, st) in enumerate(m.stats.items()):
        p = st["port"]
        a, b = name.split("->")
        level = next((l.level for l in plan.links if {l.a, l.b} == {a, b}), "")
        if level == "host" and a in plan.hosts:
            level = "nic"
        vals = dict(
            link_id=i,
            src=a,
            dst=b,
            level=level,
            rate_bps=p.rate_bps,
            delay_s=0.0,
            buffer_pkts=p.limit_bytes // FRAME,
            buffer_bytes=p.limit_bytes,
            tx_packets=st["packets"],
            tx_bytes=st["bytes"],
            drops=st["drops"],
            ecn_marks=st.get("ecn_marks") or 0,
            utilization=(st["bytes"] * 8 / (p.rate_bps * m.duration)) if m.duration > 0 else 0.0,
        )
        measured.append(vals)
    return pa.Table.from_pylist(rows_for(LINK_SCHEMA, measured, where="testbed links"), schema=LINK_SCHEMA)


def _summary(plan: TestbedPlan, m: Measured, *, scenario_file: str, overrides: Sequence[str], sha256: str) -> dict:
    errors = {f.flow_id: m.results[f.flow_id].error for f in plan.flows if m.results[f.flow_id].error}
    summary = {
        "scenario_name": plan.name,
        "scenario_sha256": sha256,
        "scenario_file": scenario_file,
        "overrides": list(overrides),
        "seed": plan.seed,
        "sim_time_s": m.duration,
        "wall_time_s": m.wall_s,
        "flows_total": len(plan.flows),
        "flows_started": sum(r.start is not None for r in m.results.values()),
        "flows_completed": sum(r.completed for r in m.results.values()),
        "payload_bytes_delivered": sum(r.received for r in m.results.values()),
        "drops": sum(st["drops"] for st in m.stats.values()),
        "ecn_marks": sum(st.get("ecn_marks") or 0 for st in m.stats.values()),
        "ecn_threshold": str(plan.ecn_threshold) if plan.ecn_threshold is not None else None,
        "priority_bands": plan.bands if plan.bands > 1 else None,
        "pias_tagged": m.pias_tagged,
        "feedback": m.feedback,
        "interrupted": m.interrupted,
        "kernel": os.uname().release,
        "congestion_controls": {str(f.flow_id): plan.sockopts[f.flow_id].cc for f in plan.flows},
        "atcp_params": m.atcp.to_dict() if m.atcp is not None else None,
        "base_rtt_s": {f"{a}->{b}": v for (a, b), v in m.base_rtts.items()},
        "emulated_delay_s": plan.delay_s,
        "delay_line": m.delay_line,
        "notes": plan.notes + ['protocol "tcp" runs as the kernel\'s reno (NewReno with SACK)'],
        "flow_errors": {str(k): v for k, v in errors.items()},
    }
    return summary


def run_testbed(
    scenario: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    set: Sequence[str] = (),
    max_run_s: float = MAX_RUN_S,
    atcp_halving: Optional[str] = None,
    progress=None,
) -> dict:
    """Validates ``scenario`` with the simulator's checker, runs it in namespaces and writes
    ``flows.parquet``, ``links.parquet`` and ``summary.json`` into ``out_dir``. Returns the summary.
    ``atcp_halving`` overrides the ATCP flows' ``halving`` key for the kernel ATCP."""
    try:
        desc = api.validate(scenario, set=list(set))
    except api.ScenarioError as e:
        raise TestbedError(str(e)) from None
    plan = load_plan(Path(scenario), set)
    flows, links, summary, cwnd = run_plan(
        plan,
        scenario_file=str(scenario),
        overrides=set,
        sha256=desc.get("scenario_sha256", ""),
        max_run_s=max_run_s,
        atcp_halving=atcp_halving,
        progress=progress,
    )
    write_run(out_dir, "testbed", summary, flows, links, cwnd=cwnd)
    return read_summary(out_dir)
