"""The testbed's traffic: a receiver and a sender thread per flow (the scheduling library's
per host pair), each in its host's namespace, the sockets' TCP_INFO, window samples and the
base RTT of a path."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence


from .. import _core
from .. import kernel as K
from ..plan import Flow
from .assisted import PROTOCOLS as ASSISTED
from .netns import Network, enter
from .scenario import Sockopts, TestbedPlan


PORT_BASE = 20000


#: Congestion controls whose receiving side takes part (echoes CE marks or feedback): the
#: receivers' listening sockets run them too.
RECEIVER_CC = frozenset({K.DCTCP, *(a.congestion_control for a in ASSISTED.values())})


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


def socket_counters(sock: socket.socket) -> tuple[Optional[int], Optional[int], Optional[float]]:
    """The socket's retransmissions, segments sent and smallest RTT (seconds; None when the
    kernel measured none)."""
    info = _tcp_info(sock)
    min_rtt = info.get("min_rtt")
    # (~0U: no sample yet)
    rtt = min_rtt / 1e6 if min_rtt not in (None, 0, 0xFFFFFFFF) else None
    return info.get("total_retrans"), info.get("segs_out"), rtt


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
        res.retransmits, res.segs_out, res.min_rtt_s = socket_counters(s)
    except OSError as e:
        if not res.completed:
            res.error = f"sender: {e}"
    finally:
        if res.retransmits is None:
            res.retransmits, res.segs_out, res.min_rtt_s = socket_counters(s)
        with res.lock:
            res.sock = None
        s.close()


#: A long-lived flow's receiver closes at the stop time; a send refused this close to it is
#: the end of the flow, not an error.
STOP_RACE_S = 0.25


#: Ports of the scheduled pairs' receivers: after every flow's own port.
SCHED_PORT_BASE = PORT_BASE + 2000

#: The key the scheduled pairs' senders and receivers (threads of this process) share: the
#: receivers listen on the namespaces' addresses, which a receiver without a key refuses.
SCHED_KEY = os.urandom(32).hex().encode()


def scheduled_pairs(plan: TestbedPlan) -> dict:
    """The sized flows of each host pair, when the plan has a scheduling layer."""
    pairs: dict = {}
    if plan.scheduler is not None:
        for f in plan.flows:
            if f.size_bytes is not None:
                pairs.setdefault((f.src, f.dst), []).append(f)
    return pairs


def _sched_receiver(
    ns: str, listen: str, expect: int, largest: int, ready: threading.Barrier, timeout_s: float, out: list
):
    """One scheduled pair's receiver (fctlab sched): every delivery or error, in order. Its
    budget holds the pair's largest message (a message may have half of it, which holds its
    bookkeeping too)."""
    budget = max(64 << 20, 3 * largest)
    try:
        enter(ns)
        ready.wait(timeout=30)
        got = _core.sched_recv(
            listen, expect, timeout_s, True, 10.0, budget, 1024, SCHED_KEY, max(512 << 20, budget), 8
        )
        out.extend(got["rows"])
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
            SCHED_KEY,
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


def sample_cwnd(
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


def base_rtt(net: Network, src: str, dst: str, port: int) -> float:
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


def start_receivers(
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
            max(f.size_bytes for f in fl),
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


def start_senders(
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


def apply_deliveries(pairs: dict, deliveries: dict, results: dict) -> None:
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
            # A failed row may cover a run of messages that never started.
            for i in range(d["message"], d.get("last_message", d["message"]) + 1):
                if 0 <= i < len(fl):
                    r = results[fl[i].flow_id]
                    r.error, r.completed, r.finish = d["error"], False, None
