"""htsim (Broadcom/csg-htsim; the Ultra Ethernet Consortium's uet-htsim for DCQCN and NSCC) as a
crosscheck target: a plan (``plan.py``) as the input of fctlab's htsim driver
(``fctlab/peers/htsim_driver.cpp``, built by ``fctlab peers build htsim``), run with the newest
build that runs the plan's protocols (:func:`fctlab.peers.htsim.find`), and its output as
fctlab's result tables.

htsim's own drivers do not read a flow list for TCP or DCTCP: ``datacenter/main_tcp.cpp`` and
``datacenter/old_tests/main_dctcp_permutation.cpp`` build their own fat-tree and start a random
permutation of long-lived flows; its RDMA drivers (``main_roce.cpp``, ``main_hpcc.cpp``,
``main_swift.cpp``) read a connection matrix but build their own fat-tree. The driver wires
htsim's classes as the plan says: per port a ``Queue`` (drop-tail) or ``ECNQueue`` and a
``Pipe``; per flow a ``TcpSrc`` or ``DCTCPSrc`` with a ``TcpSink`` on explicit data and ACK
routes; one ``TcpRtxTimerScanner``. On a lossless network (``pfc = true``) a switch's port is a
``LosslessOutputQueue``, each port into a switch has a ``LosslessInputQueue`` behind its pipe,
a host's NIC is a ``FairPriorityQueue``, and the flows are ``RoceSrc``/``RoceSink``,
``HPCCSrc``/``HPCCSink`` or (uet-htsim) ``DCQCNSrc``/``DCQCNSink``. Swift (``SwiftSrc``/``SwiftSink``) runs over lossy ports behind its
hosts' ``FairScheduler``, which takes no PAUSE frames. NDP runs as htsim's NDP driver
(``datacenter/main_ndp.cpp``) wires it: a switch's port is a trimming ``CompositeQueue``, a
host's NIC a ``FairPriorityQueue``, each flow an ``NdpSrc`` and an ``NdpSink`` that spray
over every shortest path (``SCATTER_PERMUTE``), and each receiving host has one
``NdpPullPacer`` (:func:`_check_ndp`, :func:`ndp_notes`). EQDS and NSCC choose their paths by
entropy values that htsim's switches hash, so they run on htsim's own fat-tree
(``FatTreeTopology``, ``FatTreeSwitch``), built as its EQDS and UEC drivers build it
(``datacenter/main_eqds.cpp``, ``main_uec.cpp``) with the scenario's hosts, links and queues, each
of its ports named by the scenario's (:func:`fattree_ports`): csg-htsim's ``EqdsSrc`` and
``EqdsSink`` with one ``EqdsPullPacer`` and one ``EqdsNIC`` per host, and uet-htsim's ``UecSrc``
(NSCC at the sender, REPS) and ``UecSink`` with one ``UecNIC`` per host (:func:`_check_fattree`,
:func:`fattree_notes`).

What htsim fixes in its code, and so what a plan must say to be run (docs/crosscheck.md):

- ``TcpSrc::receivePacket`` floors the RTO at 250 ms (``transport.min_rto``), with no upper
  bound; ACKs are 40 bytes (``TcpAck::ACKSIZE``, ``transport.header_bytes``); every segment
  is acknowledged (no delayed ACKs), without SACK, fast retransmit at the third duplicate ACK;
  every connection opens with a SYN (``transport.handshake``); every data packet is full size
  (``transport.whole_packets``);
- ``TcpPacket::new_syn_pkt`` leaves the SYN's timestamp as the reused packet had it, and
  ``TcpSrc::receivePacket`` samples the RTT from the SYN-ACK's echo of it;
- ``DCTCPSrc``: g = 1/16 and alpha starting at 0 (``dctcp_g``, ``dctcp_alpha_init``);
- ``ECNQueue`` marks a packet as it leaves when the bytes queued (it included) exceed K;
  ``Queue``/``ECNQueue`` drop an arriving packet that would take the bytes queued, the one in
  transmission included, above the limit.

Settings the driver gives htsim: packet size (``mss + header``; RoCE's and HPCC's payload),
initial window, initial slow-start threshold, initial RTO, largest window (``rwnd``), the timer
scan period, rates, delays, buffers and thresholds per port, the pause thresholds of the
lossless inputs, HPCC's and DCQCN's static settings, Swift's settings, NDP's first window,
pull rate and paths, EQDS's first window, pull rate and RTO, and NSCC's network round trip,
target, RTO and marking threshold. What htsim fixes for the RDMA protocols, NDP, EQDS and NSCC,
and the refusals that follow, are in docs/crosscheck_htsim.md and in :func:`_check_rdma`,
:func:`dcqcn_settings`, :func:`_check_ndp` and :func:`_check_fattree`.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..peers import htsim as peer
from ..plan import Plan, Unsupported, adjacency, path_counts
from .program import run_program
from .rows import flow_row, port_rows
from .rows import summary as run_summary


@dataclass(frozen=True)
class Driver:
    """How htsim runs one fctlab protocol: the driver binary and htsim's source class."""

    binary: str
    source_class: str
    #: whether this crosscheck runs it (False: fctlab has no such protocol yet)
    runs: bool


#: fctlab protocol -> htsim driver. The protocols fctlab has run through fctlab's driver; the
#: others are htsim's own drivers (sim/datacenter/main_*.cpp, each reading a topology and a
#: connection matrix), for protocols fctlab does not have yet.
DRIVERS = {
    "tcp": Driver("fctlab_htsim", "TcpSrc", True),
    "dctcp": Driver("fctlab_htsim", "DCTCPSrc", True),
    "roce": Driver("fctlab_htsim", "RoceSrc", True),
    "hpcc": Driver("fctlab_htsim", "HPCCSrc", True),
    # uet-htsim's (peers.htsim.DCQCN_PROTOCOLS; csg-htsim has no DCQCN): the driver runs it, the
    # crosscheck refuses it (DEFECTIVE)
    "dcqcn": Driver("fctlab_htsim", "DCQCNSrc", False),
    "swift": Driver("fctlab_htsim", "SwiftSrc", True),
    "ndp": Driver("fctlab_htsim", "NdpSrc", True),
    # on htsim's own fat-tree (FatTreeTopology, FatTreeSwitch), as main_eqds.cpp wires it
    "eqds": Driver("fctlab_htsim", "EqdsSrc", True),
    # uet-htsim's (peers.htsim.UEC_PROTOCOLS): UecSrc with NSCC and REPS, as main_uec.cpp
    # -sender_cc_only -load_balancing_algo reps wires it
    "nscc": Driver("fctlab_htsim", "UecSrc", True),
}

#: The RDMA protocols the driver runs: RoCE, HPCC and DCQCN over lossless ports only, Swift over
#: lossy ones only (its host scheduler takes no PAUSE frames).
RDMA = ("roce", "hpcc", "dcqcn", "swift")
LOSSLESS_ONLY = ("roce", "hpcc", "dcqcn")

#: fctlab protocols of which htsim has no implementation at all (neither csg-htsim nor uet-htsim).
ABSENT = {"timely": "TIMELY"}

#: fctlab protocols whose htsim implementation does not run to the end of a run: why, in one
#: sentence (docs/crosscheck_htsim.md, "DCQCN").
DEFECTIVE = {
    "dcqcn": (
        "uet-htsim's DCQCNSrc does not run to the end of a run: it paces and times with one doNextEvent "
        "(dcqcn.cpp), and from one timer period after a flow starts or gets a CNP each of its events schedules "
        "another a period later beside the next packet's: its pending events multiply every period "
        "(docs/crosscheck_htsim.md, DCQCN)"
    ),
}

#: The fctlab protocols this target runs (validation.py reads it).
PROTOCOLS = tuple(p for p, d in DRIVERS.items() if d.runs)
#: The per-packet path choices it runs (crosscheck.refuse_balancing): NDP's spraying, which
#: htsim's NdpSrc does at the source, beside fctlab's spraying at the switches (spray) or at
#: the sender (permutation); EQDS's entropy values, beside fctlab's spraying at the sender
#: (permutation); NSCC's REPS beside fctlab's (reps). check() refuses them for the other
#: protocols, and the other pairs.
BALANCING = ("spray", "permutation", "reps")
#: The per-packet policies each protocol on htsim's fat-tree runs beside its own path choice.
FATTREE_BALANCING = {"eqds": ("permutation",), "nscc": ("reps",)}

#: Values htsim's code fixes (tcp.cpp, tcppacket.h, dctcp.cpp).
MIN_RTO_S = 0.25
ACK_BYTES = 40
DUPTHRESH = 3
DCTCP_G = 1 / 16
DCTCP_ALPHA_INIT = 0.0
#: The timer scan period when the scenario asks for exact timers (rto_granularity = 0).
DEFAULT_SCAN_S = 0.001
#: RocePacket::ACKSIZE and HPCCPacket::ACKSIZE (rocepacket.h, hpccpacket.h): the bytes every
#: data packet carries beside its payload, and the size of an ACK or NACK.
RDMA_HEADER_BYTES = 64
#: SwiftAck::ACKSIZE (swiftpacket.h); a SwiftPacket is its payload alone, so htsim's data
#: packet is fctlab's payload and header together.
SWIFT_ACK_BYTES = 40
#: The period of the SwiftRtxTimerScanner in htsim's Swift driver (main_swift.cpp).
SWIFT_SCAN_S = 0.010
#: EthPausePacket's size (eth_pause_packet.h, PAUSESIZE), as fctlab's pause frame.
PAUSE_BYTES = 64
#: NdpPacket::ACKSIZE (ndppacket.h:105): the bytes an NDP data packet carries beside its
#: payload, and the size of an ACK, a NACK, a PULL and a trimmed header.
NDP_HEADER_BYTES = 64
#: EqdsSrc's and UecSrc's header (EqdsSrc::_hdr_size, eqds.cpp:25; UecSrc::_hdr_size,
#: uec.cpp:28): the bytes a data packet carries beside its payload, and the size of an ACK,
#: NACK, PULL, RTS and trimmed header (ACKSIZE, eqdspacket.h:27, uecpacket.h:30).
FATTREE_HEADER_BYTES = 64
#: The entropy values htsim's EQDS driver gives EqdsSrc (-paths, main_eqds.cpp:46, 211-214).
EQDS_PATHS = 64
#: The entropy values fctlab's REPS draws among (crates/net/src/balance/reps.rs, VALUES): uet-htsim's
#: UecMpReps is given as many (-paths).
REPS_VALUES = 128
#: uet-htsim's sink sends an ACK once this many bytes have arrived since the last
#: (-sack_threshold): below one packet, an ACK per packet, as fctlab's uet receiver (and
#: uet-htsim's own "1SACK/packet" validation runs, validate_load_balancing_snd.txt:35-42).
UEC_SACK_THRESHOLD = 4000
#: An unlimited buffer, in bytes.
UNLIMITED = 1 << 62
PS = 1e12


class HtsimError(RuntimeError):
    """htsim could not be run, or failed; the message says which and how."""


def check(plan: Plan) -> None:
    """Raises Unsupported, naming the key, for what htsim cannot run as fctlab does; adds to
    ``plan.notes`` what it runs differently."""
    t = plan.tcp
    if plan.scheduler:
        raise Unsupported("transport.scheduler: htsim has no flow scheduling layer; remove the key to crosscheck")
    for f in plan.flows:
        if f.protocol in ABSENT:
            raise Unsupported(
                f"flows[{f.flow_id}].protocol: {f.protocol!r}: htsim has no {ABSENT[f.protocol]} (no source "
                f"class of it in csg-htsim's sim/ nor in uet-htsim's); the crosscheck runs {', '.join(PROTOCOLS)}"
            )
        if f.protocol in DEFECTIVE:
            raise Unsupported(
                f"flows[{f.flow_id}].protocol: {f.protocol!r}: {DEFECTIVE[f.protocol]}; the crosscheck runs "
                f"{', '.join(PROTOCOLS)}"
            )
        if f.protocol not in DRIVERS or not DRIVERS[f.protocol].runs:
            raise Unsupported(
                f"flows[{f.flow_id}].protocol: {f.protocol!r} is not run against htsim (htsim has TCP, DCTCP, RoCE, HPCC, "
                f"DCQCN, Swift, NDP, EQDS and NSCC as fctlab runs them; the crosscheck runs {', '.join(PROTOCOLS)})"
            )
        if f.protocol == "tcp" and f.ecn:
            raise Unsupported(
                f"transport.ecn: flow {f.flow_id} is ECN-capable TCP; htsim's TcpSrc ignores ECN echoes "
                "(only DCTCPSrc reacts); set ecn = false or use dctcp"
            )
        if f.protocol == "dctcp":
            g = float(f.params.get("dctcp_g", DCTCP_G))
            a0 = float(f.params.get("dctcp_alpha_init", 1.0))
            if abs(g - DCTCP_G) > 1e-12:
                raise Unsupported(f"transport.dctcp_g: {g:g}; htsim's DCTCPSrc uses 1/16 (dctcp.cpp); set 0.0625")
            if a0 != DCTCP_ALPHA_INIT:
                raise Unsupported(
                    f"transport.dctcp_alpha_init: {a0:g}; htsim's DCTCPSrc starts alpha at 0 (dctcp.cpp "
                    "constructor); set 0"
                )
    tree = [f for f in plan.flows if f.protocol in FATTREE_BALANCING]
    if tree:
        kinds = {f.protocol for f in tree}
        if len(tree) < len(plan.flows) or len(kinds) > 1:
            raise Unsupported(
                "transport.protocol: the scenario mixes EQDS or NSCC with other protocols; the crosscheck runs "
                "htsim's EqdsSrc (csg-htsim) and UecSrc (uet-htsim) on htsim's own fat-tree, one of them per scenario"
            )
        _check_fattree(plan, kinds.pop())
        _check_network(plan)
        plan.notes.extend(fattree_notes(plan))
        return
    ndp = [f for f in plan.flows if f.protocol == "ndp"]
    if ndp:
        if len(ndp) < len(plan.flows):
            raise Unsupported(
                "transport.protocol: the scenario mixes NDP with other protocols; the crosscheck runs htsim's NDP "
                "over trimming ports (CompositeQueue) and the others over their own, one kind per scenario"
            )
        _check_ndp(plan)
        _check_network(plan)
        plan.notes.extend(ndp_notes(plan))
        return
    if plan.load_balancing is not None:
        raise Unsupported(
            f"network.load_balancing: {plan.load_balancing['policy']!r}; htsim's TCP and RDMA sources here take one "
            "path per flow; only its NdpSrc, EqdsSrc and UecSrc spray (NdpSrc at the source over every path, "
            'EqdsSrc and UecSrc by entropy values its switches hash): use protocol = "ndp", "eqds" or "nscc", or '
            "remove the key"
        )
    rdma = [f for f in plan.flows if f.protocol in RDMA]
    if rdma and len(rdma) < len(plan.flows):
        raise Unsupported(
            "transport.protocol: the scenario mixes TCP and RDMA flows; the crosscheck runs htsim's TCP sources "
            "on lossy ports and its RDMA sources on lossless ones, one kind per scenario"
        )
    if rdma:
        _check_rdma(plan, rdma)
    else:
        if plan.pfc is not None:
            raise Unsupported(
                "network.pfc: the crosscheck runs htsim's lossless ports with its RDMA sources (roce, hpcc); "
                "htsim's TcpSrc and DCTCPSrc do not obey PAUSE frames; remove pfc or use an RDMA protocol"
            )
        _check_transport(t)
    _check_network(plan)
    plan.notes.extend(notes(plan))


def _check_rdma(plan: Plan, rdma: list) -> None:
    """What RoceSrc, HPCCSrc, DCQCNSrc, SwiftSrc, their sinks and htsim's lossless ports fix
    (roce.cpp, hpcc.cpp, dcqcn.cpp, swift.cpp, queue_lossless_input.cpp, queue_lossless_output.cpp)."""
    t = plan.tcp
    kinds = {f.protocol for f in rdma}
    if "swift" in kinds and len(kinds) > 1:
        raise Unsupported(
            "transport.protocol: the scenario mixes Swift with RoCE, HPCC or DCQCN; the crosscheck runs htsim's Swift "
            "over lossy ports and its RoCE, HPCC and DCQCN over lossless ones, one kind per scenario"
        )
    if "dcqcn" in kinds and len(kinds) > 1:
        raise Unsupported(
            "transport.protocol: the scenario mixes DCQCN with other protocols; htsim's DCQCNSrc is uet-htsim's and "
            "the others run against csg-htsim's classes, one build per scenario"
        )
    if "swift" in kinds:
        _check_swift(plan, rdma)
    else:
        if plan.pfc is None:
            raise Unsupported(
                "network.pfc: htsim's RoceSrc, HPCCSrc and DCQCNSrc have no retransmission timer (roce.cpp, hpcc.cpp: "
                "a lost last packet is never resent), so the crosscheck runs them on lossless ports only; set pfc = true"
            )
        if plan.switch_buffer is not None:
            raise Unsupported(
                "network.switch_buffer: htsim's LosslessInputQueue counts each input against fixed thresholds "
                "(queue_lossless_input.cpp); it has no shared buffer; remove the key"
            )
        _need(
            t["header_bytes"] == RDMA_HEADER_BYTES,
            "header_bytes",
            f"{t['header_bytes']} B; htsim's RDMA packets carry 64 bytes beside the payload and its ACKs are 64 "
            'bytes (RocePacket::ACKSIZE, HPCCPacket::ACKSIZE); set header_bytes = "64B"',
        )
    _need(
        int(t.get("ack_interval", 1)) == 1,
        "ack_interval",
        f"{t.get('ack_interval')}; htsim's RDMA sinks acknowledge every packet; set 1",
    )
    for f in rdma:
        if f.ecn and f.protocol != "dcqcn":
            raise Unsupported(
                f"transport.ecn: flow {f.flow_id} is ECN-capable; htsim's {DRIVERS[f.protocol].source_class} "
                "ignores CE marks; set ecn = false"
            )
        if f.size_bytes is None:
            raise Unsupported(
                f"flows[{f.flow_id}].size: a long-lived {f.protocol} flow; the crosscheck runs RDMA messages of a "
                "given size"
            )
    if "hpcc" in kinds:
        hpcc_settings(plan)
    if "dcqcn" in kinds:
        dcqcn_settings(plan)
        lossless_ecn_bytes(plan)
    if plan.pfc is not None:
        pfc_thresholds(plan)


def _check_ndp(plan: Plan) -> None:
    """What htsim's NdpSrc, NdpSink, NdpPullPacer and CompositeQueue fix (ndp.cpp, ndppacket.h,
    compositequeue.cpp), and how its NDP driver wires them (main_ndp.cpp)."""
    t = plan.tcp
    if plan.pfc is not None:
        raise Unsupported(
            "network.pfc: htsim's NDP runs over trimming ports (CompositeQueue), which take no PAUSE frames; remove pfc"
        )
    if plan.switch_buffer is not None:
        raise Unsupported(
            "network.switch_buffer: htsim's CompositeQueue has a data queue and a header queue of its own per port; "
            "it has no shared buffer; remove the key"
        )
    lb = plan.load_balancing
    if lb is None or lb["policy"] not in ("spray", "permutation"):
        raise Unsupported(
            f"network.load_balancing: {'ecmp' if lb is None else lb['policy']!r}; htsim's NdpSrc sprays every "
            "packet at the source over every shortest path (SCATTER_PERMUTE, the -strat perm of main_ndp.cpp), "
            'which the crosscheck runs beside fctlab\'s spraying; set load_balancing = "permutation" (at the sender, '
            'as htsim) or "spray" (at the switches)'
        )
    _need(
        t["header_bytes"] == NDP_HEADER_BYTES,
        "header_bytes",
        f"{t['header_bytes']} B; htsim's NDP data packets carry 64 bytes beside the payload and its ACKs, NACKs, "
        'PULLs and trimmed headers are 64 bytes (NdpPacket::ACKSIZE, ndppacket.h:105); set header_bytes = "64B"',
    )
    _need(
        t["whole_packets"],
        "whole_packets",
        "htsim's NdpSrc sends every data packet full (Packet::data_packet_size, ndp.cpp:937-953); set true",
    )
    for p in plan.ports:
        q = p.queue
        _need_trim_port(
            p,
            "NDP",
            "a host's NIC is htsim's FairPriorityQueue, which sends ACKs and PULLs ahead of data and never "
            'trims (main_ndp.cpp -host_queue_type fair_prio); fctlab\'s counterpart is nic_queue = "trim"',
            "a switch's port is htsim's trimming CompositeQueue (main_ndp.cpp -queue_type composite); set queue = \"trim\"",
        )
        if p.nic:
            continue
        if int(q.get("header_bytes", NDP_HEADER_BYTES)) != NDP_HEADER_BYTES:
            raise Unsupported(
                f"network.trim_header_bytes: {q['header_bytes']} B; CompositeQueue trims a packet to NdpPacket::ACKSIZE, "
                '64 bytes (NdpPacket::strip_payload, ndppacket.h:72-73); set trim_header_bytes = "64B"'
            )
        if q.get("ecn_threshold") is not None:
            raise Unsupported(
                "network.trim_ecn_threshold: htsim's CompositeQueue marks only above twice its size (compositequeue.cpp:23-24) "
                "and its NdpSrc reads no mark under SCATTER_PERMUTE; remove the key"
            )
    ndp_settings(plan)


def ndp_settings(plan: Plan) -> tuple:
    """(first window in packets, pull rate) of the plan's NDP flows. The driver gives every
    NdpSrc one first window (NdpSrc::setCwnd, in bytes: packets x Packet::data_packet_size, as
    main_ndp.cpp:603) and every receiving host's NdpPullPacer one pull rate (its
    pull_rate_modifier, main_ndp.cpp:553), so the flows' settings must agree."""
    out = None
    for f in plan.flows:
        if f.protocol != "ndp":
            continue
        mine = (int(f.params["ndp_initial_window"]), float(f.params["ndp_pull_rate"]))
        if out is not None and mine != out:
            raise Unsupported(
                f"flows[{f.flow_id}].ndp: its ndp_initial_window or ndp_pull_rate differ from another flow's; the "
                "crosscheck gives htsim's sources one first window and its pull pacers one rate"
            )
        out = mine
    return out


def ndp_trim_bytes(plan: Plan, queue: dict) -> int:
    """CompositeQueue's maxsize for a trimming port: htsim counts the data packet in
    transmission in its data queue and takes an arriving one while the bytes queued and the
    packet fit (compositequeue.cpp:142); fctlab trims a packet that finds trim_threshold of
    data waiting, the one in transmission apart. (threshold + 1) packets, or the threshold's
    bytes and one packet, make the same number of full packets wait in both."""
    P = packet_bytes(plan)
    kind, n = queue["threshold"]
    return (int(n) + 1) * P if kind == "pkts" else int(n) + P


def ndp_routes(plan: Plan, src: str, dst: str, port_of: dict, cache: dict) -> list:
    """Every shortest path from src to dst (hosts do not forward), as port indices, in the
    topology's order of the ports."""
    bfs = cache.setdefault("bfs", {})
    for end in (src, dst):  # links have both directions: a BFS from dst gives the hops to it
        if end not in bfs:
            bfs[end] = path_counts(adjacency(plan), end, set(plan.hosts))
    there, back = bfs[src][0], bfs[dst][0]
    if dst not in there:
        raise Unsupported(f"network.topology: no path from {src} to {dst}")
    D = there[dst]
    if "succs" not in cache:
        cache["succs"] = {}
        for a, b in port_of:
            cache["succs"].setdefault(a, []).append(b)
    succs, hosts, out = cache["succs"], set(plan.hosts), []

    def walk(v: str, ports: list) -> None:
        if v == dst:
            out.append(list(ports))
            return
        if v != src and v in hosts:
            return
        for w in succs.get(v, ()):
            # w is on a shortest path: one hop further from src, one nearer to dst
            if there.get(w) == there[v] + 1 and back.get(w) == D - there[w]:
                ports.append(port_of[(v, w)])
                walk(w, ports)
                ports.pop()

    walk(src, [])
    return out


def _check_fattree(plan: Plan, kind: str) -> None:
    """What htsim's EQDS (csg-htsim's EqdsSrc, EqdsSink, EqdsPullPacer, EqdsNIC) and NSCC
    (uet-htsim's UecSrc, UecSink, UecNIC, UecMpReps) fix, and how their drivers
    (main_eqds.cpp, main_uec.cpp) wire them: on htsim's own fat-tree, whose switches hash each
    packet's entropy value, with trimming CompositeQueue ports and FairPriorityQueue NICs."""
    t = plan.tcp
    name = "EqdsSrc" if kind == "eqds" else "UecSrc"
    if plan.pfc is not None:
        raise Unsupported(
            f"network.pfc: htsim's {name} runs over trimming ports (CompositeQueue), which take no PAUSE frames; "
            "remove pfc"
        )
    if plan.switch_buffer is not None:
        raise Unsupported(
            "network.switch_buffer: htsim's CompositeQueue has a data queue and a header queue of its own per port; "
            "it has no shared buffer; remove the key"
        )
    fattree_ports(plan)
    lb = plan.load_balancing
    runs = FATTREE_BALANCING[kind]
    if lb is None or lb["policy"] not in runs:
        why = (
            "htsim's EqdsSrc sprays every packet over 64 entropy values in turn (XOR-permuted each round, "
            "eqds.cpp:818-841) that its switches hash (FatTreeSwitch, ECMP), which the crosscheck runs beside "
            'fctlab\'s spraying at the sender; set load_balancing = "permutation"'
            if kind == "eqds"
            else "htsim's UecSrc chooses every packet's entropy value by REPS (UecMpReps, -load_balancing_algo reps), "
            'which the crosscheck runs beside fctlab\'s REPS; set load_balancing = "reps"'
        )
        raise Unsupported(f"network.load_balancing: {'ecmp' if lb is None else lb['policy']!r}; {why}")
    _need(
        t["header_bytes"] == FATTREE_HEADER_BYTES,
        "header_bytes",
        f"{t['header_bytes']} B; htsim's {name} puts 64 bytes beside the payload (_hdr_size) and its ACKs, NACKs, "
        'pulls and trimmed headers are 64 bytes (ACKSIZE); set header_bytes = "64B"',
    )
    _need(
        not t["whole_packets"],
        "whole_packets",
        f"htsim's {name} sends a flow's last packet with the bytes left (eqds.cpp:847-852, uec.cpp:2058-2065); "
        "set false",
    )
    _need(
        int(t.get("ack_interval", 1)) == 1,
        "ack_interval",
        f"{t.get('ack_interval')}; fctlab's {kind} receiver is run against htsim's acknowledging every packet; set 1",
    )
    mark = kind == "nscc"
    for p in plan.ports:
        q = p.queue
        _need_trim_port(
            p,
            kind.upper(),
            "a host's NIC is htsim's FairPriorityQueue, which sends control packets ahead of data and never trims; "
            'fctlab\'s counterpart is nic_queue = "trim"',
            "a switch's port is htsim's trimming CompositeQueue; set queue = \"trim\"",
        )
        if p.nic:
            if q.get("ecn_threshold") is not None:
                raise Unsupported(
                    "network.nic_trim_ecn_threshold: htsim's hosts' FairPriorityQueue does not mark; remove the key"
                )
            continue
        if int(q.get("header_bytes", FATTREE_HEADER_BYTES)) != FATTREE_HEADER_BYTES:
            raise Unsupported(
                f"network.trim_header_bytes: {q['header_bytes']} B; CompositeQueue trims a packet to its 64-byte "
                '"header (strip_payload, eqdspacket.h:73-79; FatTreeSwitch::_trim_size, main_uec.cpp:81); set '
                'trim_header_bytes = "64B"'
            )
        if not mark and q.get("ecn_threshold") is not None:
            raise Unsupported(
                "network.trim_ecn_threshold: htsim's EQDS driver builds CompositeQueue ports that do not mark "
                "(compositequeue.cpp:23-24; main_eqds.cpp's default -queue_type composite); remove the key"
            )
        if mark and q.get("ecn_threshold") is None:
            raise Unsupported(
                "network.trim_ecn_threshold: not given; uet-htsim's switches mark ECN on every port (main_uec.cpp:104, "
                '698-708), which NSCC reads; give the marking threshold (e.g. trim_ecn_threshold = "9pkt")'
            )
    fattree_queue_bytes(plan)
    if mark:
        fattree_ecn_bytes(plan)
    for f in plan.flows:
        if f.size_bytes is None:
            raise Unsupported(f"flows[{f.flow_id}].size: a long-lived {kind} flow; the crosscheck runs flows of a size")
    if kind == "eqds":
        eqds_settings(plan)
    else:
        nscc_settings(plan)


def fattree_ports(plan: Plan) -> tuple:
    """(hosts, rate in bps, link delay in s, [(port id, tier, a, b)]): each port of a fat-tree
    scenario as the queue of htsim's FatTreeTopology it stands for (its arrays
    queues_ns_nlp, queues_nlp_ns, queues_nlp_nup, queues_nup_nlp, queues_nup_nc,
    queues_nc_nup: host -> ToR, ToR -> host, ToR -> aggregation, aggregation -> ToR,
    aggregation -> core, core -> aggregation). htsim numbers a fat-tree of k-port switches so
    that host h is under ToR h / (k/2), ToR t in pod t / (k/2), aggregation switch a in pod a /
    (k/2) at position j = a mod k/2, and aggregation switch j of every pod connects to the
    cores j + (k/2) l (fat_tree_topology.cpp:733-905); fctlab's hosts are taken in order, its
    edge and aggregation switches by the hosts and pods under them, its cores by the group of
    aggregation switches they connect. Raises Unsupported unless the network is a three-tier
    fat-tree of one link rate and delay that maps onto htsim's one port for one port."""
    if plan.topology != "fattree":
        raise Unsupported(
            f"network.topology: {plan.topology!r}; htsim's EQDS and NSCC run on its own fat-tree (FatTreeTopology, "
            'whose switches hash entropy values): use topology = "fattree"'
        )
    rates = {p.rate_bps for p in plan.ports}
    delays = {round(p.delay_s * PS) for p in plan.ports}
    if len(rates) > 1:
        raise Unsupported("network.link_rate: htsim's FatTreeTopology gives every link one rate; give one link_rate")
    if len(delays) > 1:
        raise Unsupported(
            "network.link_delay: htsim's FatTreeTopology gives every link one latency (-hop_latency); give one link_delay"
        )
    N = len(plan.hosts)
    k = round((4 * N) ** (1 / 3))
    if k < 2 or k % 2 or k**3 // 4 != N:
        raise Unsupported(f"network.k: {N} hosts; htsim's three-tier fat-tree has k^3/4 hosts for an even k")
    h = k // 2
    host_ix = {name: i for i, name in enumerate(plan.hosts)}
    out = {}
    for p in plan.ports:
        out.setdefault(p.src, []).append(p.dst)
    tor, agg, core = {}, {}, {}
    for name, i in host_ix.items():
        nb = out.get(name, [])
        if len(nb) != 1:
            raise Unsupported(f"network.topology: host {name} has {len(nb)} links; htsim's hosts have one")
        if tor.setdefault(nb[0], i // h) != i // h:
            raise Unsupported(f"network.topology: {nb[0]}'s hosts are not htsim's (h/(k/2) for each host h)")
    for e, t in tor.items():
        ups = [x for x in out.get(e, []) if x not in host_ix]
        for a in ups:
            pod = agg.get(a, (t // h,))[0]
            if pod != t // h:
                raise Unsupported(f"network.topology: {a} serves two pods")
            agg.setdefault(a, (t // h,))
    # the aggregation switches' positions: by the cores they reach (one group per position)
    groups: dict = {}
    for a in sorted(agg, key=lambda x: plan.switches.index(x)):
        cores = frozenset(x for x in out.get(a, []) if x not in tor)
        groups.setdefault(cores, []).append(a)
    if len(groups) != h or any(len(v) != k for v in groups.values()):
        raise Unsupported("network.topology: the aggregation switches do not reach the cores as htsim's fat-tree's do")
    for j, (cores, members) in enumerate(groups.items()):
        for a in members:
            pod = agg[a][0]
            agg[a] = pod * h + j
        for l_, c in enumerate(sorted(cores, key=lambda x: plan.switches.index(x))):
            core[c] = j + h * l_
    ports = []
    for i, p in enumerate(plan.ports):
        a, b = p.src, p.dst
        if a in host_ix:
            row = ("ns_nlp", host_ix[a], tor[b])
        elif b in host_ix:
            row = ("nlp_ns", tor[a], host_ix[b])
        elif a in tor and b in agg:
            row = ("nlp_nup", tor[a], agg[b])
        elif a in agg and b in tor:
            row = ("nup_nlp", agg[a], tor[b])
        elif a in agg and b in core:
            row = ("nup_nc", agg[a], core[b])
        elif a in core and b in agg:
            row = ("nc_nup", core[a], agg[b])
        else:
            raise Unsupported(f"network.topology: the port {a} -> {b} is not one of htsim's fat-tree's")
        ports.append((i, *row))
    if len({r[1:] for r in ports}) != len(ports) or len(ports) != 3 * k**3 // 2:
        raise Unsupported("network.topology: the ports are not htsim's fat-tree's, one for one")
    return N, rates.pop(), delays.pop() / PS, ports


def fattree_queue_bytes(plan: Plan) -> int:
    """CompositeQueue's size on every switch port of htsim's fat-tree (one size for all,
    FatTreeTopology's queuesize), translated as for NDP (:func:`ndp_trim_bytes`)."""
    sizes = {}
    for p in plan.ports:
        if not p.nic:
            sizes.setdefault(ndp_trim_bytes(plan, p.queue), f"{p.src}->{p.dst}")
    if len(sizes) > 1:
        raise Unsupported(
            "network.trim_threshold: the switch ports' thresholds differ; htsim's FatTreeTopology gives every "
            "switch port one queue size; give one trim_threshold"
        )
    return next(iter(sizes))


def fattree_ecn_bytes(plan: Plan) -> int:
    """uet-htsim's CompositeQueue marking threshold (kmin = kmax, bytes) for the switch ports'
    trim_ecn_threshold. CompositeQueue marks a data packet as it leaves when the data still
    queued behind it exceeds the threshold (decide_ECN, compositequeue.cpp:74-98: a step when
    kmin = kmax); fctlab marks an arriving data packet when the data waiting reaches the
    threshold: N packets (bytes B) become N x packet - 1 (B - 1) bytes, so both mark from N
    full packets (B bytes) waiting on."""
    P = packet_bytes(plan)
    seen = {}
    for p in plan.ports:
        if p.nic:
            continue
        kind, n = p.queue["ecn_threshold"]
        seen.setdefault(int(n) * P - 1 if kind == "pkts" else int(n) - 1, f"{p.src}->{p.dst}")
    if len(seen) > 1:
        raise Unsupported(
            "network.trim_ecn_threshold: the switch ports' marking differs; uet-htsim's FatTreeTopologyCfg gives every "
            "switch port one pair of thresholds (set_ecn_parameters); give one trim_ecn_threshold"
        )
    k = next(iter(seen))
    if k > fattree_queue_bytes(plan):
        raise Unsupported(
            "network.trim_ecn_threshold: above the trimming threshold; uet-htsim's driver asserts that the marking "
            "threshold is within the queue (main_uec.cpp:707)"
        )
    return k


def _one_setting(plan: Plan, kind: str, get) -> tuple:
    out = None
    for f in plan.flows:
        if f.protocol != kind:
            continue
        mine = get(f)
        if out is not None and mine != out:
            raise Unsupported(
                f"flows[{f.flow_id}].{kind}: its {kind.upper()} settings differ from another flow's; the crosscheck "
                f"gives htsim's sources one configuration (static members of {'EqdsSrc' if kind == 'eqds' else 'UecSrc'})"
            )
        out = mine
    return out


def eqds_settings(plan: Plan) -> tuple:
    """(first window in packets, pull rate, RTO in seconds) of the plan's EQDS flows: the
    driver gives every EqdsSrc one first window (setCwnd, packets x the packet size, as
    main_eqds.cpp:495 sets -cwnd), every host's EqdsPullPacer one rate (main_eqds.cpp:476
    gives 0.99) and EqdsSrc one fixed RTO (the static _min_rto, main_eqds.cpp:346)."""
    return _one_setting(
        plan,
        "eqds",
        lambda f: (
            int(f.params["eqds_initial_window"]),
            float(f.params["eqds_pull_rate"]),
            int(f.params["eqds_rto"]) * 1e-9,
        ),
    )


def nscc_settings(plan: Plan) -> tuple:
    """(network RTT, target delay, RTO; seconds) of the plan's NSCC flows: uet-htsim's NSCC
    constants are statics set once from the network's round trip (UecSrc::initNsccParams,
    uec.cpp:86-159, with calculate_rtt's value in main_uec.cpp:51-60, 743-747), its target is
    given (-target_q_delay) as fctlab's fraction of that round trip, each source starts from it
    (initNscc(0, rtt): 1.5 BDPs), and its RTO is the static _min_rto."""

    def get(f):
        rtt = f.params.get("nscc_network_rtt")
        if rtt is None:
            raise Unsupported(
                "transport.nscc_network_rtt: not given; fctlab scales each flow's NSCC by its own base round trip, "
                "uet-htsim every flow by the network's longest unloaded one (calculate_rtt, main_uec.cpp:51-60: "
                f'{calculate_rtt(plan) * 1e9:.3f} ns here); give it (e.g. nscc_network_rtt = "{calculate_rtt(plan) * 1e9:.0f}ns")'
            )
        rtt_s = int(rtt) * 1e-9
        return (rtt_s, float(f.params["nscc_target_fraction"]) * rtt_s, int(f.params["nscc_rto"]) * 1e-9)

    return _one_setting(plan, "nscc", get)


def calculate_rtt(plan: Plan) -> float:
    """uet-htsim's network RTT in seconds (main_uec.cpp:51-60, calculate_rtt): twice the
    latency of the fat-tree's diameter (6 links for 3 tiers), and the serialization of one
    packet and one 64-byte ACK on each of its links at the hosts' rate."""
    _, rate, delay, _ = fattree_ports(plan)
    diameter = 6
    gbps = rate / 1e9
    ps = 2 * diameter * round(delay * PS) + (
        packet_bytes(plan) * 8 / gbps * diameter * 1000 + FATTREE_HEADER_BYTES * 8 / gbps * diameter * 1000
    )
    return ps / PS


def _check_swift(plan: Plan, flows: list) -> None:
    t = plan.tcp
    if plan.pfc is not None:
        raise Unsupported(
            "network.pfc: htsim's SwiftSrc needs its own scheduler as the host's queue (SwiftSrc::connect asserts "
            "that the route's first element is a BaseScheduler, swift.cpp) and the schedulers take no PAUSE "
            "frames (BaseScheduler::receivePacket, swift_scheduler.cpp): htsim does not run Swift over lossless "
            "ports; remove pfc and give buffers that do not overflow"
        )
    _need(
        t["header_bytes"] == SWIFT_ACK_BYTES,
        "header_bytes",
        f'{t["header_bytes"]} B; htsim\'s Swift ACKs are 40 bytes (SwiftAck::ACKSIZE); set header_bytes = "40B"',
    )
    swift_settings(plan)


#: fctlab's Swift keys in the order of the driver's swift line (the first window and the
#: timer scan period follow them).
SWIFT_KEYS = (
    "swift_ai",
    "swift_beta",
    "max_mdf",
    "base_target",
    "hop_scale",
    "fs_range",
    "fs_min_cwnd",
    "fs_max_cwnd",
    "min_cwnd",
    "max_cwnd",
    "retx_reset",
)


def swift_settings(plan: Plan) -> tuple:
    """SwiftSrc's settings for the plan's Swift flows, as fctlab names them (SWIFT_KEYS), and the
    first window in fctlab's payload bytes. htsim's first window is a static of
    SwiftSubflowSrc (set_cwnd), so the scenario gives it (swift_initial_window) and every
    flow has the same settings."""
    out = None
    for f in plan.flows:
        if f.protocol != "swift":
            continue
        p = f.params
        iw = p.get("swift_initial_window")
        if iw is None:
            raise Unsupported(
                "transport.swift_initial_window: not given; fctlab starts each flow at its own base BDP, htsim's "
                'SwiftSubflowSrc at one window for all (set_cwnd); give it (e.g. swift_initial_window = "20KB")'
            )
        mine = tuple(p[k] for k in SWIFT_KEYS) + (iw,)
        if out is not None and mine != out:
            raise Unsupported(
                f"flows[{f.flow_id}].swift: its Swift settings differ from another flow's; the crosscheck gives "
                "htsim's sources one configuration"
            )
        out = mine
    return out


def hpcc_settings(plan: Plan) -> tuple:
    """HPCCSrc's static settings for the plan's HPCC flows: (T in seconds, eta, max_stage).
    htsim holds one value of each for all sources (hpcc.cpp: HPCCSrc::_T, _eta, _max_stages)
    and sets the additive step W_AI to one packet's payload (HPCCSrc's constructor: _Wai = _mss)."""
    flows = [f for f in plan.flows if f.protocol == "hpcc"]
    mss = plan.tcp["mss_bytes"]
    out = None
    for f in flows:
        p = f.params
        T = p.get("hpcc_base_rtt")
        if T is None:
            raise Unsupported(
                "transport.hpcc_base_rtt: not given; htsim's HPCCSrc uses one base RTT for every flow "
                '(HPCCSrc::_T, hpcc.cpp), where fctlab takes each flow\'s own; give it (e.g. hpcc_base_rtt = "12us")'
            )
        T_s = float(T) * 1e-9
        ai = p.get("hpcc_rate_ai")
        want = mss * 8 / T_s
        if ai is None or abs(float(ai) - want) > max(1.0, want * 1e-6):
            raise Unsupported(
                f"transport.hpcc_rate_ai: {'not given' if ai is None else f'{float(ai):.0f} bps'}; htsim's HPCCSrc "
                f"adds one packet's payload per step (_Wai = _mss, hpcc.cpp), {mss} B per base RTT: set "
                f'hpcc_rate_ai = "{want:.0f}bps"'
            )
        floor = float(p.get("hpcc_min_rate", 0))
        if floor > want + 1:
            raise Unsupported(
                f"transport.hpcc_min_rate: {floor:.0f} bps; htsim's HPCCSrc has no rate floor but its window of "
                f"at least W_AI (one packet per base RTT, {want:.0f} bps); set hpcc_min_rate at or below it"
            )
        mine = (T_s, float(p.get("hpcc_eta", 0.95)), int(p.get("max_stage", 0)))
        if out is not None and any(abs(a - b) > 1e-15 for a, b in zip(mine, out)):
            raise Unsupported(
                f"flows[{f.flow_id}].hpcc: its hpcc_base_rtt, hpcc_eta or max_stage differ from another flow's; "
                "htsim's HPCCSrc holds one value of each (static members, hpcc.cpp)"
            )
        out = mine
    return out


#: DCQCNSrc's constructor sets the statics R_AI = rate / 20 and R_HAI = rate / 10 from its NIC's
#: rate (dcqcn.cpp).
DCQCN_RAI_DIVISOR = 20
DCQCN_RHAI_DIVISOR = 10
#: The least min_rate fctlab takes (it must be positive): DCQCNSrc has no rate floor.
DCQCN_NO_FLOOR_BPS = 1


def _nic_rate(plan: Plan, host: str) -> float:
    return next(p.rate_bps for p in plan.ports if p.src == host)


def dcqcn_settings(plan: Plan) -> tuple:
    """DCQCNSrc's and DCQCNSink's static settings for the plan's DCQCN flows: (g, the timers'
    period in seconds, F, B in packets, the CNP interval in seconds). htsim (uet-htsim's
    dcqcn.cpp) holds one value of each for all flows; its one period serves the alpha and the
    rate timers (_cc_update_period); its byte counter adds the sequence numbers sent, which
    RoceSrc counts in packets, so B is the byte counter in wire packets (mss + header), rounded
    up; R_AI and R_HAI are set by each source's constructor from its NIC's rate (rate / 20,
    rate / 10); there is no rate floor."""
    mss, hdr = plan.tcp["mss_bytes"], plan.tcp["header_bytes"]
    wire = mss + hdr
    out = None
    for f in plan.flows:
        if f.protocol != "dcqcn":
            continue
        p = f.params
        alpha_t, rate_t = int(p["alpha_timer"]), int(p["rate_timer"])
        if alpha_t != rate_t:
            raise Unsupported(
                f"transport.alpha_timer: {alpha_t / 1e3:g} us, rate_timer {rate_t / 1e3:g} us; htsim's DCQCNSrc has one "
                "period for both timers (_cc_update_period, dcqcn.cpp); set them equal"
            )
        bc = int(p["byte_counter"])
        if bc <= 0:
            raise Unsupported(
                "transport.byte_counter: 0 (no byte counter); htsim's DCQCNSrc always counts (_B, dcqcn.cpp: a zero "
                'would fire at every packet sent); give one (e.g. byte_counter = "10MB", its default)'
            )
        line = _nic_rate(plan, f.src)
        for key, div, name in (("rate_ai", DCQCN_RAI_DIVISOR, "_RAI"), ("rate_hai", DCQCN_RHAI_DIVISOR, "_RHAI")):
            want = line / div
            got = float(p[key])
            if abs(got - want) > max(1.0, want * 1e-9):
                raise Unsupported(
                    f"transport.{key}: {got:.0f} bps; htsim's DCQCNSrc sets {name} to its NIC's rate / {div} (its "
                    f'constructor, dcqcn.cpp): {line / 1e9:g} Gbps here; set {key} = "{want:.0f}bps"'
                )
        floor = float(p["min_rate"])
        if floor > DCQCN_NO_FLOOR_BPS:
            raise Unsupported(
                f"transport.min_rate: {floor:.0f} bps; htsim's DCQCNSrc has no rate floor (processCNP, dcqcn.cpp: "
                'Rc = Rc (1 - alpha/2)); set min_rate = "1bps", the least fctlab takes'
            )
        mine = (
            float(p["dcqcn_g"]),
            alpha_t * 1e-9,
            int(p["fast_recovery"]),
            -(-bc // wire),
            float(plan.tcp["cnp_interval_s"]),
        )
        if out is not None and mine != out:
            raise Unsupported(
                f"flows[{f.flow_id}].dcqcn: its DCQCN settings differ from another flow's; htsim's DCQCNSrc and "
                "DCQCNSink hold one value of each (static members, dcqcn.cpp)"
            )
        out = mine
    return out


def lossless_ecn_bytes(plan: Plan) -> int:
    """uet-htsim's LosslessOutputQueue::_K (bytes; -1: no marking): one threshold for every
    switch port (a static, with _ecn_enabled), marking a leaving packet when the bytes queued,
    it included, exceed it (queue_lossless_output.cpp completeService), as ECNQueue does."""
    seen = {}
    for p in plan.ports:
        if not p.nic:
            seen.setdefault(ecn_bytes(plan, p.queue), f"{p.src}->{p.dst}")
    if len(seen) > 1:
        (a, pa), (b, pb) = list(seen.items())[:2]
        raise Unsupported(
            f"network.ecn_threshold: the switch ports' marking differs ({pa}: K {a} B, {pb}: K {b} B; -1: none); "
            "uet-htsim's LosslessOutputQueue has one threshold for every port (static _ecn_enabled, _K); give one "
            "ecn_threshold to every switch port"
        )
    return next(iter(seen), -1)


def mtu(plan: Plan) -> int:
    """fctlab's MTU (payload and header; at least a pause frame), as its PFC sizes it."""
    return max(plan.tcp["mss_bytes"] + plan.tcp["header_bytes"], PAUSE_BYTES)


def _input_thresholds(plan: Plan, p) -> tuple:
    """fctlab's (xoff, xon) for input port `p` (docs/lossless.md, Parameters)."""
    cfg = plan.pfc
    M = mtu(plan)
    xoff = cfg.get("xoff")
    if xoff is None:
        # the link's buffer: a host's NIC may have its own (nic_buffer), so read the switch's side
        buffer = p.buffer
        if p.nic:
            buffer = next((q.buffer for q in plan.ports if q.link == p.link and q is not p), buffer)
        if buffer is None:
            raise Unsupported("network.pfc: an unlimited buffer has no pause threshold: give pfc_xoff")
        kind, n = buffer
        b = int(n) * M if kind == "pkts" else int(n)
        head = cfg.get("headroom")
        if head is None:  # two rate x delay products (bytes, rounded up), two MTUs and a frame
            bdp = -(-int(p.rate_bps) * round(p.delay_s * 1e9) // 8_000_000_000)
            head = 2 * bdp + 2 * M + PAUSE_BYTES
        xoff = int(b) - int(head)
    xon = cfg.get("xon")
    if xon is None:
        xon = max(0, int(xoff) - 2 * M)
    return int(xoff), int(xon)


def pfc_thresholds(plan: Plan) -> tuple:
    """LosslessInputQueue's (_high_threshold, _low_threshold), bytes. htsim pauses when the bytes
    an input holds pass the high threshold and resumes when they fall below the low one
    (queue_lossless_input.cpp); fctlab pauses when they pass pfc_xoff and resumes when they are
    at or below pfc_xon: high = xoff, low = xon + 1. htsim has one pair for all inputs (static
    members), so the inputs' thresholds must agree."""
    switches = set(plan.switches)
    seen = {}
    for p in plan.ports:
        if p.dst in switches:
            seen.setdefault(_input_thresholds(plan, p), f"{p.src}->{p.dst}")
    if not seen:
        raise Unsupported("network.pfc: no port feeds a switch")
    if len(seen) > 1:
        (a, pa), (b, pb) = list(seen.items())[:2]
        raise Unsupported(
            f"network.pfc_xoff: the inputs' pause thresholds differ ({pa}: xoff {a[0]} B, xon {a[1]} B; {pb}: xoff "
            f"{b[0]} B, xon {b[1]} B); htsim's LosslessInputQueue has one pair for all inputs (static "
            "_high_threshold, _low_threshold); give pfc_xoff and pfc_xon"
        )
    xoff, xon = next(iter(seen))
    return xoff, xon + 1


def _group_ids(f, gid: dict) -> tuple:
    """A flow's group and the group it starts after, as the driver's numbers (-1: none)."""
    a = gid.get(f.after, -1) if f.after else -1
    if f.after and a < 0:
        raise Unsupported(f"flows[{f.flow_id}].after: group {f.after!r} has no flows")
    return (gid[f.group] if f.group else -1), a


def _need_trim_port(port, protocol: str, at_nic: str, at_switch: str) -> None:
    """Refuses a port whose discipline is not `trim` (htsim's trimming transports run on
    trimming switches and on NICs that keep their bands), naming the key and what htsim runs
    there (`at_nic`, `at_switch`)."""
    if port.queue["kind"] != "trim":
        key = "network.nic_queue" if port.nic else "network.queue"
        where = at_nic if port.nic else at_switch
        raise Unsupported(f"{key}: {port.queue['kind']!r}; with {protocol} {where}")


def _need(ok: bool, key: str, why: str) -> None:
    if not ok:
        raise Unsupported(f"transport.{key}: {why}")


def _check_transport(t: dict) -> None:
    _need(
        abs(t["min_rto_s"] - MIN_RTO_S) < 1e-9,
        "min_rto",
        f"{t['min_rto_s'] * 1e3:g} ms; htsim's TcpSrc floors the RTO at 250 ms (tcp.cpp, receivePacket); "
        'set min_rto = "250ms"',
    )
    _need(
        t["header_bytes"] == ACK_BYTES,
        "header_bytes",
        f"{t['header_bytes']} B; htsim's ACKs are 40 bytes (TcpAck::ACKSIZE); set 40",
    )
    _need(not t["sack"], "sack", "htsim's TcpSrc has no SACK (NewReno-style recovery); set sack = false")
    _need(not t["delayed_ack"], "delayed_ack", "htsim's TcpSink acknowledges every segment; set false")
    _need(not t["tail_loss_probe"], "tail_loss_probe", "htsim's TcpSrc has no tail loss probe; set false")
    _need(
        not t["cwr"],
        "cwr",
        "htsim's sources have no CWR state (DCTCPSrc sets the reduced window at once, dctcp.cpp); set false",
    )
    _need(t["handshake"], "handshake", "htsim's TcpSrc opens every connection with a SYN; set true")
    _need(t["dupthresh"] == DUPTHRESH, "dupthresh", f"{t['dupthresh']}; htsim's TcpSrc uses 3 (tcp.cpp); set 3")
    _need(
        t["whole_packets"],
        "whole_packets",
        "htsim sends every data packet full size (Packet::data_packet_size); set true",
    )
    _need(
        t.get("send_buffer_bytes") is None,
        "send_buffer",
        "htsim's sources have all their data at once; remove the key",
    )


def _check_network(plan: Plan) -> None:
    if plan.buffer_model != "waiting":
        raise Unsupported(
            f"network.buffer_model: {plan.buffer_model!r}; the translation counts fctlab's "
            'buffers as waiting packets (the default, "waiting")'
        )
    ndp = any(f.protocol in ("ndp", *FATTREE_BALANCING) for f in plan.flows)
    for p in plan.ports:
        kind = p.queue["kind"]
        key = "network.nic_queue" if p.nic else "network.queue"
        if ndp:
            continue  # _check_ndp, _check_fattree: trimming ports
        if kind not in ("droptail", "ecn"):
            if plan.pfc is not None and not p.nic:
                raise Unsupported(
                    f"{key}: {kind!r}; htsim's LosslessOutputQueue marks a leaving packet when the bytes queued exceed "
                    'one threshold K, and nothing else (queue_lossless_output.cpp): use queue = "ecn" with '
                    "ecn_threshold (fctlab's RED needs red_max_threshold above red_min_threshold, so it has no step)"
                )
            raise Unsupported(f"{key}: {kind!r}; htsim's Queue and ECNQueue run droptail and ecn")
        if plan.pfc is not None and p.nic and kind == "ecn":
            raise Unsupported(
                "network.nic_queue: 'ecn'; on a lossless network a host's NIC is htsim's FairPriorityQueue, "
                'which does not mark; set nic_queue = "droptail"'
            )
    if any(f.size_bytes is None for f in plan.flows) and plan.stop_time_s is None:
        raise Unsupported("stop_time: a long-lived flow needs a stop time (htsim runs until its end time)")


def notes(plan: Plan) -> list:
    """Where htsim runs the plan differently from fctlab, one sentence each."""
    if any(f.protocol in RDMA for f in plan.flows):
        return rdma_notes(plan)
    t = plan.tcp
    out = []
    if any(p.queue["kind"] == "ecn" for p in plan.ports):
        out.append(
            "ECN marking: htsim's ECNQueue marks a packet as it leaves the queue when the bytes queued, itself "
            "included, exceed the threshold (ecnqueue.cpp completeService); fctlab marks an arriving packet "
            "against the packets waiting; the translation sets the threshold so that both mark at the same "
            "queue length, and 40-byte ACKs count by their bytes in htsim"
        )
    if any(f.protocol == "dctcp" for f in plan.flows):
        out.append(
            "DCTCP: htsim's DCTCPSrc cuts the window by alpha/2 once per window of data whenever alpha > 0, "
            "marks in that window or not, to at least one segment, and an echo in slow start ends slow start "
            "(dctcp.cpp receivePacket); fctlab cuts once per window with marks, to at least two segments"
        )
    out.append(
        "RTO: htsim's TcpSrc computes SRTT + 4 RTTVAR floored at 250 ms with no upper bound, and its timers "
        f"are checked every {_scan_s(plan) * 1e3:g} ms (TcpRtxTimerScanner); after a timeout it resends "
        "from the last acknowledged segment (go-back-N); its SYN carries no timestamp of its own "
        "(TcpPacket::new_syn_pkt), so the first RTT sample, from the SYN-ACK, is the age of the packet the "
        "SYN reuses from htsim's pool, and after an idle period the first RTO is three times that pause"
    )
    out.append(
        "buffers: htsim counts bytes, the packet in transmission included; a buffer of N packets becomes "
        "N + 1 data packets' bytes, in which 40-byte ACKs take their bytes, not a packet slot"
    )
    out.append(
        "loss recovery: htsim's TcpSrc (tcp.cpp) enters fast recovery at the third duplicate ACK unless "
        "recovering from a timeout, retransmits one segment per partial ACK and deflates the window on "
        f"exit to min(ssthresh, flight + 1 segment); fctlab's newreno_recovery = {t['newreno_recovery']!r}"
    )
    if not _single_path(plan):
        out.append(PATHS_NOTE)
    return out


def rdma_notes(plan: Plan) -> list:
    """Where htsim runs RDMA flows differently from fctlab."""
    mss = plan.tcp["mss_bytes"]
    if any(f.protocol == "swift" for f in plan.flows):
        return swift_notes(plan)
    out = [
        "sending: htsim's RoceSrc (and HPCCSrc at its rate) spaces its packets by (payload + 64 B) x 8 / rate "
        "(roce.cpp constructor, _packet_spacing): the wire time of its own data packet, so at the NIC's rate it "
        "sends back to back; its packets go into the host's FairPriorityQueue, which sends ACKs before data, "
        "where fctlab's NIC serves its queue pairs in turn",
        "PFC: htsim's LosslessInputQueue counts a packet from its arrival at the switch until its transmission "
        "at the output ends (LosslessOutputQueue::completeService), fctlab until it starts; the translation "
        "sets the pause threshold to pfc_xoff and the resume threshold to pfc_xon + 1 byte (htsim pauses above "
        "the high threshold and resumes below the low one); htsim's PAUSE and RESUME frames reach the port "
        "after the link's delay, without the 64 bytes' transmission time fctlab adds",
        "recovery: htsim's RoceSrc and HPCCSrc have no retransmission timer and their sinks send a NACK for "
        "every packet out of order; on lossless ports neither is used",
    ]
    if any(f.size_bytes is not None and f.size_bytes % mss for f in plan.flows):
        out.append(
            f"sizes: htsim sends every packet full ({mss} B of payload), so a message of S bytes sends "
            f"ceil(S / {mss}) full packets; fctlab's last packet carries the rest"
        )
    if any(f.protocol == "hpcc" for f in plan.flows):
        out.append(
            "HPCC telemetry: htsim stamps a packet's record as it leaves a switch's LosslessOutputQueue "
            "(completeService), its queue including the packet, fctlab as the packet joins a switch's port; "
            "neither stamps at hosts' NICs, so a path's five switch ports give its five records in both; htsim's "
            "data packets and ACKs carry no telemetry bytes (fctlab's 42 more each); htsim moves its window's "
            "reference on every ACK (hpcc.cpp processAck), fctlab once per round trip; htsim's U starts at eta, "
            "fctlab's at 1; htsim paces at W / T, fctlab at R within the window W_init R / line rate"
        )
    if not _single_path(plan):
        out.append(PATHS_NOTE)
    return out


def swift_notes(plan: Plan) -> list:
    """Where htsim runs Swift differently from fctlab."""
    mss, P = plan.tcp["mss_bytes"], packet_bytes(plan)
    out = [
        "sending: htsim's SwiftSrc sends through its host's FairScheduler, which serves the host's flows in "
        "turn and stamps a data packet's send time as its transmission starts (BaseScheduler::beginService, "
        "swift_scheduler.cpp); a SwiftPacket is its payload alone, so htsim's data packet is fctlab's payload and "
        f"header together ({P} B) and its sequence numbers count those bytes; its ACKs are 40 bytes",
        "target delay: htsim counts a path's hops as its pipes (Route::hop_count, route.cpp update_hopcount): its "
        "links, one more than the switches fctlab counts, so htsim's target is one h = base_target / hop_scale "
        "longer on every path",
        "timers: htsim's Swift subflows start with a 1 ms RTO floored at 100 us (SwiftSubflowSrc's constructor, "
        f"swift.cpp) and their timers are checked every {SWIFT_SCAN_S * 1e3:g} ms (the SwiftRtxTimerScanner period "
        "of main_swift.cpp); they recover by fast retransmit, fctlab's roce transport by going back N on a NACK; "
        "without PFC both run on lossy ports (htsim's Swift scheduler takes no PAUSE frames)",
    ]
    if any(f.size_bytes is not None and f.size_bytes % mss for f in plan.flows):
        out.append(
            f"sizes: htsim sends every packet full, so a message of S bytes sends ceil(S / {mss}) full packets; "
            "fctlab's last packet carries the rest"
        )
    if not _single_path(plan):
        out.append(PATHS_NOTE)
    return out


def ndp_notes(plan: Plan) -> list:
    """Where htsim runs NDP differently from fctlab."""
    rto = max(int(f.params.get("ndp_rto", 0)) for f in plan.flows) * 1e-9
    htsims = (
        "htsim's NdpSrc chooses each data packet's path at the source, taking every shortest path in turn from a "
        "shuffled list that it shuffles again after each pass (SCATTER_PERMUTE, ndp.cpp:793-802); its NdpSink "
        "sends ACKs and NACKs the same way over the reverse paths (ndp.cpp:1672-1683), and a pull takes the path "
        "of the ACK or NACK it was split from (ndppacket.h:291-326)"
    )
    if plan.load_balancing["policy"] == "permutation":
        spraying = (
            f"spraying: {htsims}; fctlab's sender and receiver take their paths in turn too (load_balancing = "
            '"permutation"), in an order a x i + b mod P drawn for each pass, and the receiver\'s pulls take theirs '
            "in the same turn as its ACKs and NACKs"
        )
    else:
        spraying = (
            f"spraying: {htsims}; fctlab's switches draw every packet's next hop at random (load_balancing = "
            '"spray"), so a flow\'s packets choose their paths independently'
        )
    return [
        "trimming: htsim's CompositeQueue counts the data packet in transmission in its data queue and takes an "
        "arriving data packet while the bytes queued and the packet fit in its size (compositequeue.cpp:142); the "
        "translation gives it (trim_threshold + 1) packets of mss + 64 B (a threshold in bytes: it and one packet), "
        "so that trim_threshold full packets wait in both; when the data queue is full, htsim trims, at the toss "
        "of a coin (drand() < 0.5, compositequeue.cpp:142), the packet queued last, the arriving one taking its "
        "place (compositequeue.cpp:149-203), or the arriving one (compositequeue.cpp:217); fctlab always trims "
        "the arriving packet",
        "headers: htsim's CompositeQueue serves its header queue first, one data packet in 100,001 when both "
        "queues hold packets (compositequeue.cpp:12-13, 35-50), fctlab's trimming port strictly; htsim's header "
        "queue holds twice the data queue's bytes of headers (compositequeue.cpp:168, 225), fctlab's port buffer "
        "bounds both bands together; a header that finds either full is dropped (htsim's return to sender is "
        "off, compositequeue.cpp:26)",
        "hosts' NICs: htsim's host queue is a FairPriorityQueue, as its NDP driver's hosts have (main_ndp.cpp:107): "
        "ACKs and PULLs first, NACKs with the data at low priority (ndppacket.h:161, 218, 393), the flows in turn "
        "within a priority (queue.cpp:493-508) and no limit (queue.cpp:475-482); fctlab's NIC (nic_queue = "
        '"trim") sends ACKs, NACKs and pulls ahead of its data, each band first come first served; neither trims',
        spraying,
        "recovery: htsim builds NdpSrc with its retransmission timer off (RESEND_ON_TIMEOUT is not defined, "
        "ndp.cpp:1141-1146): a dropped header, ACK, NACK or PULL is made up only by a later pull number; "
        f"fctlab's sender sends again after ndp_rto ({rto * 1e3:g} ms) without a word from its receiver",
        "pull pacing: one NdpPullPacer per receiving host, as main_ndp.cpp:552-553, one pull per (mss + 64) x 8 "
        "/ rate / ndp_pull_rate, truncated to a picosecond (ndp.cpp:1817), fctlab's rounded up to a nanosecond; "
        "both take the host's flows in turn (htsim's PrioPullQueue, one priority for all) and put a pull on the "
        "ACK or NACK when the pacer is idle",
        "completion: htsim's NdpSrc is done at the first ACK whose cumulative ACK covers the flow "
        "(ndp.cpp:660-666), fctlab's sender when every packet is acknowledged; sprayed ACKs arrive out of order, "
        "so fctlab's flow may end at a later ACK",
    ]


def fattree_notes(plan: Plan) -> list:
    """Where htsim runs EQDS or NSCC differently from fctlab."""
    common = [
        "network: htsim's own fat-tree (FatTreeTopology, as main_eqds.cpp and main_uec.cpp build it) with the "
        "scenario's hosts, links and queues, each port of it reported as the scenario's: its switches hash each "
        "packet's flow id and entropy value with a salt drawn per switch (FatTreeSwitch, ECMP; freeBSDHash, "
        "fat_tree_switch.cpp:332) to choose among their next hops, where fctlab's switches follow the "
        "policy of load_balancing",
        "trimming: htsim's CompositeQueue counts the data packet in transmission in its data queue; the "
        "translation gives it (trim_threshold + 1) packets of mss + 64 B, so that trim_threshold full packets wait "
        "in both; when the data queue is full, htsim trims, at the toss of a coin (compositequeue.cpp:142), the "
        "packet queued last or the arriving one, fctlab always the arriving one; headers go first in both, htsim's "
        "header queue holding twice its data queue's bytes",
        "completion: htsim's source is done at the first ACK whose cumulative ACK covers the flow, fctlab's sender "
        "when every packet is acknowledged",
    ]
    if plan.flows[0].protocol == "eqds":
        return common + [
            "paths: htsim's EqdsSrc writes in each data packet the next of 64 entropy values, taken in an order "
            "XOR-permuted each round (eqds.cpp:818-841), and skips a value once after a NACK or an ECN echo on it; "
            "its switches hash the values, so a flow's share of each path is set by the hash and stays so; its ACKs, "
            "NACKs and pulls carry no entropy value and follow one hashed path per flow; fctlab's senders take every "
            'path once per pass (load_balancing = "permutation") and so do its receivers\' ACKs, NACKs and pulls',
            "credit: htsim's pull grants 4096 B (8 quanta of 512 B, eqds.cpp:22, 1458) against 4150-byte packets, "
            "and its pull pacer spaces pulls by 0.99 x (4160 + 38) B at the link rate, 332,481 ps, whatever the "
            "packet size (EqdsSrc::_mtu's static value when main_eqds.cpp builds the pacers, eqds.cpp:1533-1536): "
            "98.6 Gbps of credit; fctlab's pull grants one full packet and its pacer sends one per packet time / "
            "eqds_pull_rate, rounded up to a nanosecond (336 ns at 100 Gbps), 98.8 Gbps of credit",
            "speculation: htsim's EqdsNIC asks its source for each packet as the link frees (eqds.cpp:52-68, "
            "625-641), and fctlab's sender hands its NIC one packet per transmission time at its line rate, so in "
            "both the first ACK, NACK or pull ends the speculation in the middle of the first window and the rest "
            "of it waits for credit; htsim's EqdsNIC takes its host's sources in turn, fctlab paces each sender on "
            "its own (the set-ups start one flow per host at a time)",
            "retransmission credit: htsim's receiver owes 9 quanta (4608 B) for each trimmed header and pays them "
            "first, in pulls of 8 quanta (eqds.cpp:1295-1332, 1444-1464): a lone trimmed header brings two pulls "
            "(8192 B), n trimmed headers owed together ceil(9n / 8); fctlab's receiver owes one packet's pull per "
            "trimmed header, also paid first",
            "ACKs: htsim's EqdsSink acknowledges every 16 KB (4 packets), or at once for a packet that asks for it "
            "(every packet sent on a credit deficit, every retransmission, the first packet) or is marked, with a "
            "64-bit SACK bitmap (eqds.cpp:1283-1292); fctlab's receiver acknowledges every packet",
            "idle senders: htsim's pacer, with nothing else to pull, pulls flows whose demand it has met for up to "
            "one window more (eqds.cpp:1595-1612); fctlab's grants nothing beyond the demand",
            "losses: htsim's timeout resends the oldest packet if it holds credit and sends a request-to-send "
            "otherwise (eqds.cpp:1058-1127); fctlab's resends it at once without credit; the set-ups lose nothing",
            "hosts' NICs: htsim's EqdsNIC sends its sources' packets at the link rate in turn and control packets "
            "20 to 1 before data (eqds.cpp:45-46, 176-211) into the host's FairPriorityQueue; fctlab's NIC (nic_queue "
            '= "trim") sends control packets first',
        ]
    rtt, target, rto = nscc_settings(plan)
    return common + [
        "ECN marking: uet-htsim's CompositeQueue marks a data packet as it leaves when the data queued behind it "
        "exceeds kmin = kmax (compositequeue.cpp:74-98), fctlab an arriving data packet when trim_ecn_threshold of "
        "data waits; the translation sets the threshold so that both mark at the same queue length, but htsim's "
        "mark leaves with the packet at the head of the queue, fctlab's with the one at its tail; uet-htsim's own "
        "driver ramps the marking probability from kmin to kmax instead",
        "REPS: uet-htsim's UecMpReps (a ring of 8 entropy values, each reused once, one recycled per ACK without "
        f"an ECN echo, else a value drawn among {REPS_VALUES}, the -paths given) beside fctlab's; after a timeout "
        "uet-htsim freezes its ring for 10 ms (buffer_reps.cpp:8), fctlab does not; ACKs carry their data packet's "
        "entropy value in both",
        f"NSCC: uet-htsim's constants are set once from the network's round trip ({rtt * 1e9:.0f} ns, the scenario's "
        f"nscc_network_rtt; its driver's calculate_rtt gives {calculate_rtt(plan) * 1e9:,.2f} ns here) and every source "
        "starts from "
        f"it (initNscc), as fctlab's flows do with nscc_network_rtt; the target ({target * 1e9:.2f} ns) is given "
        "(-target_q_delay); a NACK's round trip does not lower the base round trip in either "
        "(-disable_base_rtt_update_on_nack); uet-htsim takes an RTT sample from a packet resent once whose ACK "
        "echoes the resend (uec.cpp:949-976), fctlab from no resent packet; uet-htsim's in-flight bytes fall by "
        "the receiver's cumulative byte count (uec.cpp:912-927), fctlab's by each packet acknowledged",
        f"ACKs: uet-htsim's sink sends an ACK once {UEC_SACK_THRESHOLD} bytes have arrived (-sack_threshold), so for "
        "every packet, as fctlab's receiver does; both NACK every trimmed header",
        f"losses: a fixed timeout ({rto * 1e6:g} us, UecSrc::_min_rto) in both; uet-htsim sends a request-to-send "
        "when its window still blocks after a timeout (uec.cpp:2391-2398), fctlab does not",
        "hosts' NICs: uet-htsim's UecNIC asks its sources for each packet as the link frees, in turn, and sends "
        "control packets 10 to 1 before data (uec.cpp:245-247, 252-311, 414-438), so a window cut holds back packets "
        'not yet on the wire; fctlab\'s sender hands what its window allows to its NIC (nic_queue = "trim", '
        "control packets first) at once",
    ]


def pairs_flows(plan: Plan) -> bool:
    """Whether a flow crosses the same links in both runs: every flow has one shortest path, or
    every flow is NDP, EQDS or NSCC, sprayed over all of them in both."""
    return _single_path(plan) or all(f.protocol in ("ndp", *FATTREE_BALANCING) for f in plan.flows)


def _scan_s(plan: Plan) -> float:
    g = plan.tcp["rto_granularity_s"]
    return g if g > 0 else DEFAULT_SCAN_S


def packet_bytes(plan: Plan) -> int:
    """htsim's data packet: fctlab's segment and its header."""
    return plan.tcp["mss_bytes"] + plan.tcp["header_bytes"]


def packets(plan: Plan, size_bytes: Optional[int]) -> int:
    """Data packets of a flow (-1: long-lived): whole segments, as fctlab's whole_packets."""
    if size_bytes is None:
        return -1
    return max(1, math.ceil(size_bytes / plan.tcp["mss_bytes"]))


def buffer_bytes(plan: Plan, buffer) -> int:
    """A port's limit in htsim: its waiting packets plus the one in transmission, in bytes."""
    P = packet_bytes(plan)
    if buffer is None:
        return UNLIMITED
    kind, n = buffer
    return (int(n) + 1) * P if kind == "pkts" else int(n) + P


def ecn_bytes(plan: Plan, queue: dict) -> int:
    """ECNQueue's K: htsim marks a leaving packet when the bytes queued (it included) exceed K,
    fctlab an arriving packet when the waiting packets (bytes) reach the threshold; with K =
    threshold x packet (bytes: threshold + packet - 1) both mark at the same queue length."""
    if queue["kind"] != "ecn":
        return -1
    P = packet_bytes(plan)
    kind, n = queue["threshold"]
    return int(n) * P if kind == "pkts" else int(n) + P - 1


#: The note of a topology with equal-cost paths, in every protocol's notes.
PATHS_NOTE = (
    "paths: the topology has equal-cost paths; htsim's flows take one chosen at random per flow and "
    "direction (seeded by the crosscheck's seed), fctlab's its ECMP hash, so one flow may cross other "
    "links in the two runs; compare the distributions (the per-flow pairs are not graded)"
)


def _single_path(plan: Plan) -> bool:
    adj = adjacency(plan)
    hosts = set(plan.hosts)
    for src in {f.src for f in plan.flows} | {f.dst for f in plan.flows}:
        _, count = path_counts(adj, src, hosts)
        if any(count.get(h, 0) > 1 for h in hosts):
            return False
    return True


def route(plan: Plan, src: str, dst: str, rng: random.Random, port_of: dict, cache: dict) -> list:
    """Port indices of a shortest path from src to dst, each equal-cost path equally likely."""
    bfs = cache.setdefault("bfs", {})
    if src not in bfs:
        bfs[src] = path_counts(adjacency(plan), src, set(plan.hosts))
    dist, count = bfs[src]
    if dst not in dist:
        raise Unsupported(f"network.topology: no path from {src} to {dst}")
    if "preds" not in cache:
        cache["preds"] = {}
        for a, b in port_of:
            cache["preds"].setdefault(b, []).append(a)
    preds = cache["preds"]
    hosts = set(plan.hosts)
    path, v = [], dst
    while v != src:
        cands = [u for u in preds[v] if dist.get(u) == dist[v] - 1 and (u == src or u not in hosts)]
        weights = [count[u] for u in cands]
        u = rng.choices(cands, weights)[0] if len(cands) > 1 else cands[0]
        path.append(port_of[(u, v)])
        v = u
    return path[::-1]


def fattree_script(plan: Plan, seed: int) -> str:
    """The driver's input for an EQDS or NSCC plan: htsim's fat-tree, its ports named by the
    plan's, the protocol's settings and the flows between hosts."""
    kind = plan.flows[0].protocol
    nodes, rate, delay, ports = fattree_ports(plan)
    stop = plan.stop_time_s if plan.stop_time_s is not None else 3600.0
    host_ix = {name: i for i, name in enumerate(plan.hosts)}
    L = [
        f"# {plan.name}, seed {seed}: written by fctlab crosscheck for htsim",
        "# Packet::data_packet_size: the whole data packet (payload and 64-byte header), as -mtu",
        f"packet {packet_bytes(plan)}",
        "# htsim's random() and rand(): the switches' hash salts, entropy values, CompositeQueue's coin",
        f"seed {seed}",
        f"stop {round(stop * PS)}",
        "# hosts, link rate (bps), link latency (ps), CompositeQueue size (bytes, the packet in transmission included)",
        f"fattree {nodes} {rate:.0f} {round(delay * PS)} {fattree_queue_bytes(plan)}",
    ]
    if kind == "eqds":
        iw, pull_rate, rto = eqds_settings(plan)
        L.append("# EqdsSrc's first window (packets), entropy values, RTO (ps); the pull pacers' share of the link")
        L.append(f"eqds {iw} {EQDS_PATHS} {round(rto * PS)} {pull_rate!r}")
    else:
        rtt, target, rto = nscc_settings(plan)
        k = fattree_ecn_bytes(plan)
        L.append(
            "# NSCC: network RTT, target delay (ps); REPS's entropy values; the sink's ACK threshold (bytes); "
            "RTO (ps); base RTT from NACKs (0: no); ECN kmin, kmax (bytes)"
        )
        L.append(
            f"uec {round(rtt * PS)} {round(target * PS)} {REPS_VALUES} {UEC_SACK_THRESHOLD} {round(rto * PS)} 0 {k} {k}"
        )
    L.append("# port id, the fat-tree's queue array, its two indices")
    L.extend(f"ftport {i} {tier} {a} {b}" for i, tier, a, b in ports)
    groups = plan.groups()
    gid = {g: i for i, g in enumerate(groups)}
    for g, members in groups.items():
        L.append(f"group {gid[g]} {len(members)}")
    L.append("# flow id, kind, bytes, start (ps), group, after, source host / destination host")
    for f in plan.flows:
        g, a = _group_ids(f, gid)
        L.append(
            f"flow {f.flow_id} {f.protocol} {f.size_bytes} {round(f.start_s * PS)} {g} {a} "
            f"{host_ix[f.src]} / {host_ix[f.dst]}"
        )
    return "\n".join(L) + "\n"


def script(plan: Plan, seed: int) -> str:
    """The driver's input for `plan` (format: the head of htsim_driver.cpp)."""
    if any(f.protocol in FATTREE_BALANCING for f in plan.flows):
        return fattree_script(plan, seed)
    t = plan.tcp
    P = packet_bytes(plan)
    mss = t["mss_bytes"]
    stop = plan.stop_time_s if plan.stop_time_s is not None else 3600.0
    ss = t["initial_ssthresh_bytes"]
    rdma = any(f.protocol in LOSSLESS_ONLY for f in plan.flows)
    swift = any(f.protocol == "swift" for f in plan.flows)
    ndp = any(f.protocol == "ndp" for f in plan.flows)
    lossless = plan.pfc is not None
    L = [
        f"# {plan.name}, seed {seed}: written by fctlab crosscheck for htsim",
        "# Packet::data_packet_size: the payload of RDMA and NDP packets (their 64 header bytes apart), TCP's "
        "whole packet",
        f"packet {mss if rdma or ndp else P}",
        f"scan {round(_scan_s(plan) * PS)}",
        f"stop {round(stop * PS)}",
        "# initial window, slow-start threshold (bytes of htsim's packets), initial RTO (ps), largest window",
        f"tcp {t['initial_cwnd_segments'] * P} {(math.ceil(ss / mss) * P) if ss else 0xFFFFFFFF} "
        f"{round(t['initial_rto_s'] * PS)} {min(0xFFFFFFFF, (t['rwnd_bytes'] // mss) * P)}",
    ]
    if lossless:
        high, low = pfc_thresholds(plan)
        L.append("# LosslessInputQueue: pause above HIGH bytes held, resume below LOW (pfc_xoff, pfc_xon + 1)")
        L.append(f"pfc {high} {low}")
    if any(f.protocol == "hpcc" for f in plan.flows):
        T, eta, stages = hpcc_settings(plan)
        L.append("# HPCCSrc: base RTT (ps), eta, max_stage")
        L.append(f"hpcc {round(T * PS)} {eta!r} {stages}")
    if any(f.protocol == "dcqcn" for f in plan.flows):
        g, period, F, B, cnp = dcqcn_settings(plan)
        L.append(
            "# DCQCNSrc: g, the alpha and rate timers' period (ps), F, the byte counter B (packets); "
            "DCQCNSink: the CNP interval (ps)"
        )
        L.append(f"dcqcn {g!r} {round(period * PS)} {F} {B} {round(cnp * PS)}")
    if swift:
        v = dict(zip(SWIFT_KEYS, swift_settings(plan)))
        iw = swift_settings(plan)[-1]
        L.append(
            "# SwiftSrc: ai, beta, max_mdf, base target (ps), hop scale, fs range (x base), fs min and max cwnd "
            "(packets), min cwnd (bytes), max cwnd (packets), retx reset, first window (bytes), timer scan (ps)"
        )
        L.append(
            f"swift {v['swift_ai']!r} {v['swift_beta']!r} {v['max_mdf']!r} {int(v['base_target']) * 1000} "
            f"{v['hop_scale']!r} {v['fs_range']!r} {v['fs_min_cwnd']!r} {v['fs_max_cwnd']!r} {int(v['min_cwnd'])} "
            f"{v['max_cwnd']!r} {int(v['retx_reset'])} {round(int(iw) / mss * P)} {round(SWIFT_SCAN_S * PS)}"
        )
    if ndp:
        iw, pull_rate = ndp_settings(plan)
        L.append("# htsim's random() and rand(): NDP's path shuffles, CompositeQueue's choice of the packet to trim")
        L.append(f"seed {seed}")
        L.append("# NdpSrc's first window (packets), the pull pacers' fraction of their host's link rate")
        L.append(f"ndp {iw} {pull_rate!r}")
    L.append(
        "# port id, rate (bps), delay (ps), buffer (bytes), ECN threshold K (bytes, -1: none), kind "
        "(queue, lossless, host, sched, composite), ingress (1: a LosslessInputQueue at the far end)"
    )
    port_of = {}
    switches = set(plan.switches)
    for i, p in enumerate(plan.ports):
        port_of[(p.src, p.dst)] = i
        line = f"port {i} {p.rate_bps:.0f} {round(p.delay_s * PS)} {buffer_bytes(plan, p.buffer)} {ecn_bytes(plan, p.queue)}"
        if lossless:
            line += f" {'host' if p.nic else 'lossless'} {1 if p.dst in switches else 0}"
        elif ndp:
            # a switch's CompositeQueue holds its data (the packet in transmission included) in maxsize
            if not p.nic:
                line = f"port {i} {p.rate_bps:.0f} {round(p.delay_s * PS)} {ndp_trim_bytes(plan, p.queue)} -1"
            line += f" {'host' if p.nic else 'composite'} 0"
        elif swift:
            line += f" {'sched' if p.nic else 'queue'} 0"
        L.append(line)
    groups = plan.groups()
    gid = {g: i for i, g in enumerate(groups)}
    for g, members in groups.items():
        L.append(f"group {gid[g]} {len(members)}")
    rng = random.Random(seed)
    cache: dict = {}
    L.append("# flow id, kind, packets (-1 long-lived), start (ps), group, after, data path / ACK path")
    if ndp:
        L.append("# an NDP flow's paths: every shortest path, data (fwd) and ACK (rev)")
    for f in plan.flows:
        g, a = _group_ids(f, gid)
        head = f"flow {f.flow_id} {f.protocol} {packets(plan, f.size_bytes)} {round(f.start_s * PS)} {g} {a}"
        if f.protocol == "ndp":
            L.append(f"{head} /")
            for d, (x, y) in (("fwd", (f.src, f.dst)), ("rev", (f.dst, f.src))):
                L.extend(
                    f"path {f.flow_id} {d} {' '.join(map(str, r))}" for r in ndp_routes(plan, x, y, port_of, cache)
                )
            continue
        fwd = route(plan, f.src, f.dst, rng, port_of, cache)
        rev = route(plan, f.dst, f.src, rng, port_of, cache)
        L.append(f"{head} {' '.join(map(str, fwd))} / {' '.join(map(str, rev))}")
    return "\n".join(L) + "\n"


def run(plan: Plan, seed: int, workdir: Path, binary: Optional[str] = None, timeout_s: float = 3600.0):
    """Runs `plan` under htsim with `seed` in `workdir` (the input, htsim's output and the
    results are written there). Returns (flows rows, links rows, summary dict, no cwnd rows,
    the pfc rows of a lossless run or None)."""
    meta = {}
    if binary is None:
        need = sorted({f.protocol for f in plan.flows})
        found = peer.find(need)
        if found is None:
            built = peer.builds()
            if built:
                have = "; ".join(f"{b.repository} at {b.commit[:12]} runs {', '.join(b.protocols)}" for b in built)
                raise HtsimError(f"htsim is not built with {', '.join(need)}: {peer.how_to_get(need)} (built: {have})")
            raise HtsimError(f"htsim is not built: {peer.how_to_get(need)}")
        binary = str(found.binary)
        meta = {"htsim_repository": found.repository, "htsim_commit": found.commit}
    workdir.mkdir(parents=True, exist_ok=True)
    inp = workdir / "htsim.in"
    inp.write_text(script(plan, seed))
    out, wall = run_program([binary, inp.name], inp, "htsim.out", HtsimError, "htsim", timeout_s)
    flows, links, summary, cwnd, pfc = parse(plan, out, seed, wall)
    if meta:
        (workdir / "peer.json").write_text(json.dumps(meta, indent=2) + "\n")
    return flows, links, summary, cwnd, pfc


def parse(plan: Plan, out: str, seed: int, wall_s: float):
    """The driver's output lines as flows rows, links rows and a summary."""
    mss = plan.tcp["mss_bytes"]
    starts, finishes, final, links, pfc, trims = {}, {}, {}, {}, [], {}
    end = None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0] not in ("S", "F", "A", "L", "T", "P") or not _number(parts[1]):
            continue  # htsim's own messages
        tag = parts[0]
        if tag == "S":
            starts[int(parts[1])] = float(parts[2])
        elif tag == "F":
            finishes[int(parts[1])] = (float(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
        elif tag == "A":
            final[int(parts[1])] = tuple(int(x) for x in parts[2:6])
        elif tag == "L":
            links[int(parts[1])] = tuple(float(x) for x in parts[2:7])
            if len(parts) > 8:
                trims[int(parts[1])] = int(parts[8])
        elif tag == "P":
            i = int(parts[2])
            port = plan.ports[i]
            pfc.append(
                {
                    "time_s": float(parts[1]),
                    "link_id": i,
                    "link": f"{port.src}->{port.dst}",
                    "prio": 0,
                    "event": "pause" if parts[3] == "1" else "resume",
                }
            )
        elif tag == "T":
            end = float(parts[1])
    flows = []
    for f in plan.flows:
        st = starts.get(f.flow_id)
        acked, nrx, nto, nsent = final.get(f.flow_id, (0, 0, 0, 0))
        fin = finishes.get(f.flow_id)
        if fin is not None:
            finish_s, nrx, nto, nsent = fin
            delivered = f.size_bytes
        else:
            finish_s = None
            delivered = acked * mss if f.size_bytes is None else min(f.size_bytes, acked * mss)
        nto = None if nto < 0 else nto  # not counted (Swift)
        flows.append(flow_row(f, st, finish_s, delivered if st is not None else 0, nrx, nto, nsent))
    T = end or 0.0
    link_rows = port_rows(plan, links, T)
    if any(f.protocol in ("ndp", *FATTREE_BALANCING) for f in plan.flows):  # CompositeQueue's trimmed packets
        for r in link_rows:
            r["trimmed_packets"] = trims.get(r["link_id"], 0)
    # a CE packet is counted at every port it leaves; once per packet at the last hop
    summary = run_summary(plan, seed, T, wall_s, len(starts), len(finishes), link_rows, marks_at="last hop")
    # a lossless run's PAUSE and RESUME frames as they reached their ports (fctlab's pfc.parquet)
    return flows, link_rows, summary, [], (pfc if plan.pfc is not None else None)


def _number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


#: The crosscheck target's interface (crosscheck.TARGETS).
PRODUCER = "htsim"
#: check() runs lossless plans (RDMA over htsim's lossless queues) and refuses the rest itself.
LOSSLESS = True
WALL_NOTE = "(its input run and its output read back)"
Error = HtsimError
