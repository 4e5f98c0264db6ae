"""ns-3 (3.44, the PyPI wheel) as a crosscheck target: a plan (``plan.py``) as the text file of
fctlab's generic ns-3 runner (``fctlab/peers/ns3_runner.cc``, compiled once by
``fctlab.peers.ns3``), the file run, and the runner's output as fctlab's result tables.

What the plan file holds, and why (docs/crosscheck_ns3.md has the full list):

- every node an ns-3 node with the IPv4 stack, every link a point-to-point link, routes from
  global routing (shortest paths; a plan with equal-cost paths is refused, as ns-3.44's global
  routing either takes one of them or sprays packets at random);
- every output port a queue disc of its own (``FifoQueueDisc``, or ``RedQueueDisc`` as DCTCP's
  step marker) in front of a one-packet device queue: fctlab's ``buffer = "Npkt"`` (N waiting
  packets) is N - 1 in the queue disc plus the one the device holds, and the ECN threshold K
  (an arrival that finds K or more waiting is marked) is RED's MinTh = MaxTh = K - 1 on the
  queue disc's length;
- TCP (``TcpSocketBase``) with the scenario's resolved settings as ``Config::SetDefault``
  lines, loss recovery as ``TcpClassicRecovery`` (fctlab's: the window is ssthresh at once),
  and per flow its congestion control on both its sockets: ``TcpLinuxReno`` (halves the window
  as fctlab does; ``TcpNewReno`` halves the pipe), ``TcpCubic``, or ``TcpDctcp`` with Linux's
  two-segment floor (a subclass in the runner);
- per flow, the completion is the sender's cumulative ACK reaching the last byte (fctlab's
  ``finish_s``); retransmitted segments from the ``Retransmission`` trace, timeouts from the
  RTO doubling of ``ReTxTimeout`` and SYNs sent again; per port the queue disc's counters.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from ..peers import ns3 as peer
from ..plan import Plan, Unsupported, single_paths
from .program import run_program
from .rows import flow_row, port_rows
from .rows import summary as run_summary

#: fctlab protocol -> the runner's congestion control (ns-3's TcpLinuxReno, TcpCubic, TcpDctcp).
#: fctlab's `tcp` cuts to half the window on a loss (Linux's tcp_reno_ssthresh, with the
#: window capped at the data outstanding): ns-3's TcpLinuxReno does the same, where its
#: TcpNewReno halves the RFC 6675 pipe, which excludes the segments already judged lost.
#: fctlab's `dctcp` never cuts below two segments (Linux's dctcp_ssthresh); ns-3's TcpDctcp
#: has no floor, so the runner's TcpDctcp subclass adds it (``FCTLAB_NS3_DCTCP=stock``: ns-3's
#: own TcpDctcp, for comparison).
PROTOCOLS = {"tcp": "linuxreno", "cubic": "cubic", "dctcp": "dctcp-floor"}


def _cc(protocol: str) -> str:
    """The runner's congestion control of a protocol; ``FCTLAB_NS3_TCP=newreno`` and
    ``FCTLAB_NS3_DCTCP=stock`` run ns-3's TcpNewReno and its own TcpDctcp instead (to measure
    what the choice changes; the report notes it)."""
    cc = PROTOCOLS[protocol]
    if cc == "dctcp-floor" and os.environ.get("FCTLAB_NS3_DCTCP") == "stock":
        return "dctcp"
    if cc == "linuxreno" and os.environ.get("FCTLAB_NS3_TCP") == "newreno":
        return "newreno"
    return cc


#: Per-protocol parameters and ns-3's attribute for each (the same value for every flow).
PARAMS = {
    "cubic": {
        "cubic_beta": "ns3::TcpCubic::Beta",
        "cubic_c": "ns3::TcpCubic::C",
        "cubic_fast_convergence": "ns3::TcpCubic::FastConvergence",
        "cubic_reno_friendly": "ns3::TcpCubic::TcpFriendliness",
    },
    "dctcp": {"dctcp_g": "ns3::TcpDctcp::DctcpShiftG", "dctcp_alpha_init": "ns3::TcpDctcp::DctcpAlphaOnInit"},
}

#: ns-3's loss recovery by the name FCTLAB_NS3_RECOVERY takes (default classic: see `recovery`).
RECOVERY = {"classic": "ns3::TcpClassicRecovery", "prr": "ns3::TcpPrrRecovery"}

#: ns-3's point-to-point frame header (PPP), added to every packet on the wire.
PPP_BYTES = 2


class Ns3Error(RuntimeError):
    """ns-3 could not be installed or run, or failed; the message says which and how."""


def check(plan: Plan) -> None:
    """Raises Unsupported, naming the key, for what ns-3 cannot run as fctlab does; adds to
    ``plan.notes`` what it runs differently."""
    t = plan.tcp
    if plan.scheduler:
        raise Unsupported("transport.scheduler: ns-3 has no flow scheduling layer; remove the key to crosscheck")
    if t.get("rack"):
        raise Unsupported(
            "transport.rack = true: ns-3.44's TCP finds losses by duplicate ACKs and SACK counts only; set it to false"
        )
    for f in plan.flows:
        if f.protocol not in PROTOCOLS:
            raise Unsupported(
                f"flows[{f.flow_id}].protocol: {f.protocol!r} is not in ns-3.44 as the crosscheck runs it "
                f"(it runs {', '.join(PROTOCOLS)} as TcpLinuxReno, TcpCubic, TcpDctcp)"
            )
    params_of(plan)
    if plan.buffer_model != "waiting":
        raise Unsupported(
            f"network.buffer_model: {plan.buffer_model!r} is not translated (ns-3's queues are set to "
            'fctlab\'s "waiting" semantics)'
        )
    if t["header_bytes"] not in (40, 52):
        raise Unsupported(
            f"transport.header_bytes: {t['header_bytes']} B; ns-3's TCP/IP header is 40 B, or 52 B with timestamps"
        )
    try:
        single_paths(plan)
    except Unsupported:
        raise Unsupported(
            f"network.topology: {plan.topology} has equal-cost paths between some flow's hosts; fctlab "
            "spreads flows over them by a per-flow hash, ns-3.44's global routing takes one route or, with "
            "RandomEcmpRouting, sprays packets over them at random (reordering every flow). Use a single-path "
            "topology (star, dumbbell, chain, tree, leafspine with one spine, or a custom tree)"
        ) from None
    # switch ports first: a NIC's buffer follows the switches' unless nic_buffer is given
    for p in sorted(plan.ports, key=lambda p: p.nic):
        _port_queue(p)
    _notes(plan)


def params_of(plan: Plan) -> dict:
    """ns-3 attribute -> value of the per-protocol parameters; Unsupported when flows of one
    protocol differ (ns-3 takes them per algorithm here)."""
    out: dict = {}
    for f in plan.flows:
        for key, attr in PARAMS.get(f.protocol, {}).items():
            if key not in f.params:
                continue
            v = f.params[key]
            if attr in out and out[attr] != v:
                raise Unsupported(
                    f"flows[{f.flow_id}].{key}: {v!r} differs from another {f.protocol} flow's {out[attr]!r}; the "
                    "ns-3 runner sets it once per protocol"
                )
            out[attr] = v
    return out


def _port_queue(p) -> tuple:
    """(kind, limit in waiting packets or -1, ECN threshold) of a port; Unsupported otherwise."""
    q = p.queue
    if q["kind"] not in ("droptail", "ecn"):
        raise Unsupported(
            f"network.queue = {q['kind']!r}: not translated to ns-3 (droptail and ecn are; ns-3's RED differs from "
            "fctlab's classic RED in its idle decay and count, and it has no pFabric or fctlab priority queue)"
        )
    key = "network.nic_buffer" if p.nic else "network.buffer"
    if p.buffer is None:
        limit = -1
    elif p.buffer[0] != "pkts":
        raise Unsupported(f"{key}: a byte buffer ({p.src}->{p.dst}) is not translated; give it in packets")
    elif p.buffer[1] < 2:
        raise Unsupported(
            f"{key}: {p.buffer[1]} packets ({p.src}->{p.dst}); ns-3's port is a queue disc behind a one-packet "
            "device queue, so it holds at least 2 waiting packets"
        )
    else:
        limit = int(p.buffer[1])
    if q["kind"] == "ecn":
        th = q["threshold"]
        if th is None or th[0] != "pkts":
            raise Unsupported("network.ecn_threshold: a byte threshold is not translated; give it in packets")
        if th[1] < 3:
            raise Unsupported(
                f"network.ecn_threshold: {th[1]} packets; ns-3's RED marks only while its queue disc holds more "
                "than one packet (RedQueueDisc::DoEnqueue), and the device queue holds one more, so thresholds "
                "below 3 packets would mark later than fctlab's"
            )
        return "red", limit, int(th[1])
    return "fifo", limit, 0


def recovery() -> str:
    """ns-3's loss recovery: ``classic`` (TcpClassicRecovery: the window is ssthresh at once, as
    fctlab's RFC 6675 / RFC 6582 recovery sets it) unless ``FCTLAB_NS3_RECOVERY=prr`` asks for
    ns-3's default TcpPrrRecovery. ns-3 runs one recovery algorithm per socket, for losses and
    for its CWR state alike."""
    name = os.environ.get("FCTLAB_NS3_RECOVERY", "classic")
    if name not in RECOVERY:
        raise Ns3Error(f"FCTLAB_NS3_RECOVERY={name!r}: not one of {', '.join(RECOVERY)}")
    return name


def _notes(plan: Plan) -> None:
    t = plan.tcp
    n = plan.notes
    if not t["handshake"]:
        n.append(
            "transport.handshake = false: ns-3's TCP always opens with a three-way handshake, so each of its FCTs "
            "holds one more round trip (set handshake = true to compare like with like)"
        )
    if t["tail_loss_probe"]:
        n.append(
            "transport.tail_loss_probe = true: ns-3.44 has no tail loss probe (nor RACK); a lost tail waits for "
            "the retransmission timeout"
        )
    if t["sack"]:
        n.append(
            "lost retransmissions: ns-3.44 retransmits each hole once per recovery (TcpTxBuffer::NextSeg), so a "
            "lost retransmission waits for the retransmission timeout, where fctlab judges it lost when data sent "
            "after it is SACKed dupthresh segments beyond (as Linux does) and sends it again"
        )
    if recovery() == "classic":
        n.append(
            "loss recovery: fctlab's RFC 6675 / RFC 6582 recovery (the window is ssthresh at once) runs as ns-3's "
            "TcpClassicRecovery, which also serves ns-3's CWR state after an ECN echo: there the window falls to "
            "ssthresh at once where fctlab's cwr reduces it by proportional rate reduction (RFC 6937)"
        )
    else:
        n.append(
            "loss recovery (FCTLAB_NS3_RECOVERY=prr): ns-3's TcpPrrRecovery (RFC 6937 on the RFC 6675 scoreboard) in "
            "loss recovery and in CWR, where fctlab's RFC 6675 recovery sets the window to ssthresh at once"
        )
    # fctlab's switchable mechanisms that ns-3 runs one way only: (key, the linux profile's value)
    for key, linux_way in (
        ("sack_recovery", "rfc6675"),
        ("newreno_recovery", "rfc6582"),
        ("ecn_reaction", "linux"),
        ("window_model", "bytes"),
        ("rto_model", "rfc6298"),
        ("whole_packets", False),
    ):
        if t[key] != linux_way:
            n.append(f"transport.{key} = {t[key]!r}: ns-3 runs it as the linux profile does ({linux_way!r})")
    if not t["cwr"]:
        n.append(
            "transport.cwr = false: ns-3 always enters its CWR state after an ECN echo (no growth until the data "
            "outstanding at the echo is acknowledged)"
        )
    if t["rto_granularity_s"] == 0:
        n.append("transport.rto_granularity = 0: ns-3 runs with a 1 ns clock granularity in its RTO formula")
    n.append(
        f"ns-3's point-to-point links add a {PPP_BYTES}-byte PPP header to every packet: a 1500-byte packet "
        f"takes {(1500 + PPP_BYTES) / 1500 - 1:.2%} longer on the wire"
    )
    if any(f.protocol == "cubic" for f in plan.flows):
        n.append("CUBIC: ns-3's TcpCubic runs with HyStart off (fctlab does not model HyStart)")
    if any(f.protocol == "tcp" for f in plan.flows) and _cc("tcp") == "newreno":
        n.append(
            "TCP (FCTLAB_NS3_TCP=newreno): ns-3's TcpNewReno sets ssthresh to half the RFC 6675 pipe, which leaves "
            "out the segments judged lost, where fctlab halves the window (as Linux and ns-3's TcpLinuxReno do)"
        )
    if any(f.protocol == "dctcp" for f in plan.flows):
        if os.environ.get("FCTLAB_NS3_DCTCP") == "stock":
            n.append(
                "DCTCP (FCTLAB_NS3_DCTCP=stock): ns-3's TcpDctcp cuts to cwnd (1 - alpha / 2) with no floor, so a "
                "window can fall below one segment and wait for the RTO; fctlab keeps Linux's two-segment floor"
            )
        else:
            n.append(
                "DCTCP: ns-3's TcpDctcp with Linux's two-segment floor on the cut (dctcp_ssthresh), which ns-3's "
                "own TcpDctcp lacks (FCTLAB_NS3_DCTCP=stock runs it)"
            )
    ecn_ports = any(p.queue["kind"] == "ecn" for p in plan.ports)
    if ecn_ports:
        if not any(f.ecn or f.protocol == "dctcp" for f in plan.flows):
            n.append(
                "ECN threshold marking: no flow is ECN-capable, so the marking ports run as FIFO queues of the same "
                "size in ns-3, as they act in fctlab"
            )
        elif any(not (f.ecn or f.protocol == "dctcp") for f in plan.flows) or any(
            f.ecn and f.protocol != "dctcp" for f in plan.flows
        ):
            n.append(
                "ECN threshold marking: ns-3's RED at MinTh = MaxTh drops the packets that are not ECN-capable "
                "(those of flows without ECN, and the SYNs and pure ACKs of classic-ECN flows) that arrive while "
                "the queue is at or above the threshold, where fctlab queues them up to the buffer's end"
            )


def _ns(x: float) -> str:
    """A time for ns-3's Time parser, in whole nanoseconds."""
    return f"{round(float(x) * 1e9)}ns"


def _tf(b) -> str:
    return "true" if b else "false"


def settings(plan: Plan) -> list:
    """(attribute, value) pairs: the scenario's resolved TCP as ns-3's defaults."""
    t = plan.tcp
    mss = t["mss_bytes"]
    rwnd = int(t["rwnd_bytes"])
    snd = (plan.scheduler or {}).get("send_buffer_bytes")
    ss = t["initial_ssthresh_bytes"]
    out = [
        ("ns3::TcpSocket::SegmentSize", mss),
        ("ns3::TcpSocket::InitialCwnd", t["initial_cwnd_segments"]),
        ("ns3::TcpSocket::InitialSlowStartThreshold", min(int(ss), 2**32 - 1) if ss is not None else 2**32 - 1),
        ("ns3::TcpSocket::DelAckCount", 2 if t["delayed_ack"] else 1),
        ("ns3::TcpSocket::DelAckTimeout", _ns(t["delayed_ack_timeout_s"])),
        ("ns3::TcpSocket::ConnTimeout", _ns(t["initial_rto_s"])),
        # fctlab retries forever; ns-3 drops a connection after DataRetries timeouts in a row
        ("ns3::TcpSocket::DataRetries", 1000),
        ("ns3::TcpSocket::ConnCount", 1000),
        ("ns3::TcpSocket::RcvBufSize", rwnd),
        # the application refills the send buffer as it drains: large enough never to limit cwnd
        ("ns3::TcpSocket::SndBufSize", int(snd) if snd else max(2 * rwnd, 4 << 20)),
        ("ns3::TcpSocket::TcpNoDelay", "true"),
        ("ns3::TcpSocketBase::MinRto", _ns(t["min_rto_s"])),
        ("ns3::TcpSocketBase::ClockGranularity", _ns(t["rto_granularity_s"]) if t["rto_granularity_s"] else "1ns"),
        ("ns3::RttEstimator::InitialEstimation", _ns(t["initial_rto_s"])),
        ("ns3::TcpSocketBase::Sack", _tf(t["sack"])),
        ("ns3::TcpSocketBase::Timestamp", _tf(t["header_bytes"] == 52)),
        ("ns3::TcpSocketBase::WindowScaling", "true"),
        ("ns3::TcpSocketBase::ReTxThreshold", t["dupthresh"]),
        ("ns3::TcpSocketBase::LimitedTransmit", _tf(t["singledup"])),
        ("ns3::TcpL4Protocol::RecoveryType", RECOVERY[recovery()]),
    ]
    if any(f.protocol == "cubic" for f in plan.flows):
        out.append(("ns3::TcpCubic::HyStart", "false"))
    for attr, v in params_of(plan).items():
        out.append((attr, _tf(v) if isinstance(v, bool) else repr(float(v))))
    return out


def plan_text(plan: Plan, seed: int) -> str:
    """The runner's plan file for `plan` and `seed` (format: the header of ns3_runner.cc)."""
    names = plan.hosts + plan.switches
    idx = {name: i for i, name in enumerate(names)}
    L = [f"# {plan.name}, seed {seed}: written by fctlab crosscheck for ns-3.44", f"seed {seed}"]
    stop = plan.stop_time_s
    L.append(f"stop {stop!r}" if stop is not None else "stop none")
    L += [f"set {a} {v}" for a, v in settings(plan)]
    L += [f"node {n}" for n in names]
    links: dict = {}
    port_lines = []
    nlinks = 0
    any_ecn = any(f.ecn or f.protocol == "dctcp" for f in plan.flows)
    for i, p in enumerate(plan.ports):
        key = (p.dst, p.src)
        if key in links:
            link, d = links.pop(key), 1
        else:
            link, d = nlinks, 0
            nlinks += 1
            links[(p.src, p.dst)] = link
            L.append(f"link {idx[p.src]} {idx[p.dst]} {p.delay_s!r}")
        kind, limit, k = _port_queue(p)
        if kind == "red" and not any_ecn:
            # fctlab's marker queues packets that are not ECN-capable to the buffer's end;
            # RED would drop them above K: with no ECN-capable flow the port is a FIFO
            kind, k = "fifo", 0
        # the queue disc holds K - 1 when the device queue holds one: see the module's header
        port_lines.append((i, link, d, p.rate_bps, kind, limit, max(k - 1, 0)))
    for i, link, d, rate, kind, limit, k in port_lines:
        L.append(f"port {i} {link} {d} {round(rate)} {kind} {limit} {k}")
    mon = plan.monitor
    if mon.get("cwnd_interval_s"):
        ids = [f.flow_id for f in plan.flows] if mon.get("cwnd_flows") is None else list(mon["cwnd_flows"])
        L.append(f"cwnd {mon['cwnd_interval_s']!r} " + " ".join(map(str, ids)))
    gid = {g: n for n, g in enumerate(plan.groups())}
    for f in plan.flows:
        size = -1 if f.size_bytes is None else f.size_bytes
        group = gid.get(f.group, -1) if f.group else -1
        after = gid[f.after] if f.after else -1
        L.append(
            f"flow {f.flow_id} {idx[f.src]} {idx[f.dst]} {size} {f.start_s!r} {_cc(f.protocol)} "
            f"{1 if f.ecn or f.protocol == 'dctcp' else 0} {group} {after}"
        )
    return "\n".join(L) + "\n"


def _say(msg: str) -> None:
    print(f"[ns3] {msg}", file=sys.stderr, flush=True)


def runner(say=_say) -> Path:
    """The compiled runner, built on first use (installing the wheel); Ns3Error when it cannot be."""
    try:
        return peer.ensure(say)
    except peer.BuildError as e:
        raise Ns3Error(f"ns-3 is not available: {e} ({peer.how_to_get()})") from None


def run(plan: Plan, seed: int, workdir: Path, binary: Optional[Path] = None, timeout_s: float = 3600.0):
    """Runs `plan` under ns-3 with `seed` in `workdir` (the plan file, the runner's output and
    the results are written there). Returns (flows rows, links rows, summary, cwnd rows: empty
    unless the scenario samples windows)."""
    binary = binary or runner()
    workdir.mkdir(parents=True, exist_ok=True)
    pf = workdir / "plan.txt"
    pf.write_text(plan_text(plan, seed))
    out, wall = run_program([str(binary), pf.name], pf, "ns3.out", Ns3Error, "the ns-3 runner", timeout_s)
    return parse(plan, out, seed, wall)


def parse(plan: Plan, out: str, seed: int, wall_s: float):
    """The runner's printed lines as flows rows, links rows, a summary and window samples."""
    starts, finishes, final, links = {}, {}, {}, {}
    cwnd, last_rx = [], {}
    dt = plan.monitor["cwnd_interval_s"]
    end = None
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        tag = parts[0]
        if tag == "S":
            starts[int(parts[1])] = float(parts[2])
        elif tag == "F":
            finishes[int(parts[1])] = (float(parts[2]), float(parts[3]))
        elif tag == "A":
            final[int(parts[1])] = tuple(int(x) for x in parts[2:6])
        elif tag == "L":
            links[int(parts[1])] = tuple(int(x) for x in parts[2:6]) + (float(parts[6]),)
        elif tag == "T":
            end = float(parts[1])
        elif tag == "W":
            fid, rx = int(parts[1]), int(parts[5])
            prev = last_rx.get(fid, 0)
            last_rx[fid] = rx
            ss = int(parts[4])
            cwnd.append(
                {
                    "time_s": float(parts[2]),
                    "flow_id": fid,
                    "cwnd_bytes": int(parts[3]),
                    # ns-3's initial ssthresh is the largest 32-bit value: none yet
                    "ssthresh_bytes": ss if ss < 2**31 else None,
                    "rate_bps": (rx - prev) * 8 / dt,
                    "weight": None,
                    "pacing_bps": None,
                }
            )
    flows = []
    for f in plan.flows:
        st = starts.get(f.flow_id)
        fin = finishes.get(f.flow_id)
        rx, nrx, nto, ndata = final.get(f.flow_id, (0, 0, 0, 0))
        finish_s = fin[0] if fin else None
        delivered = rx if f.size_bytes is None else min(rx, f.size_bytes)
        flows.append(flow_row(f, st, finish_s, delivered, nrx, nto, ndata))
    T = end or 0.0
    link_rows = port_rows(plan, links, T)
    # RED counts a marking where it marks: a packet marked at two ports counts twice
    summary = run_summary(plan, seed, T, wall_s, len(starts), len(finishes), link_rows, marks_at="every port")
    return flows, link_rows, summary, cwnd


#: The crosscheck target's interface (crosscheck.TARGETS).
PRODUCER = "ns-3.44"
Error = Ns3Error
