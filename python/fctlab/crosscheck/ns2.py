"""ns-2.35 as a crosscheck target: a plan (``plan.py``) as an ns-2 Tcl script, the script run
by ``ns``, and its output as fctlab's result tables.

What the script holds, and why (docs/crosscheck.md has the full list):

- every node an ns-2 node, every link direction a ``simplex-link`` so that each output port has
  its own queue type and limit (a host's NIC queue DropTail while the switch ports run RED, as
  fctlab's ports are, or both the same under ``nic_queue = "switch"``);
- ``queue-limit``: ns-2's DropTail drops when ``length + 1 >= limit`` (drop-tail.cc ``enque``),
  RED when ``length >= limit`` (red.cc ``enque``), and neither counts the packet on the wire;
  fctlab's ``buffer = "Npkt"`` holds N waiting packets, so DropTail gets N + 1 and RED N, unless
  the scenario asks for ns-2's semantics (``buffer_model = "ns2"``), when both get N;
- TCP as ns-2's one-way agents, ``Agent/TCP/Newreno`` + ``Agent/TCPSink`` or ``Agent/TCP/Sack1``
  + ``Agent/TCPSink/Sack1`` (``/DelAck`` sinks with delayed ACKs), with the scenario's resolved
  values; ATCP's weight as ``increase_num_``; each flow sent by ``Application/FTP send BYTES``;
- per flow, the completion is ns-2's ``done`` callback (``TcpAgent::finish``, called when the
  cumulative ACK reaches the last packet, tcp.cc), timeouts ``nrexmit_``, retransmitted packets
  ``nrexmitpack_``, data packets ``ndatapack_``; per port a ``QueueMonitor`` (departures, drops,
  CE-marked departures, the integral of the queue length).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

from ..plan import Plan, Unsupported, single_paths
from .program import run_program
from .rows import flow_row, port_rows
from .rows import summary as run_summary

#: Protocols ns-2.35 (as Debian ships it) can run, by fctlab name.
PROTOCOLS = ("tcp", "atcp")

NS_BINARY = "ns"


def find_ns() -> Optional[str]:
    """The ``ns`` binary (``FCTLAB_NS`` overrides the search), or None."""
    env = os.environ.get("FCTLAB_NS")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which(NS_BINARY)


def check(plan: Plan) -> None:
    """Raises Unsupported, naming the key, for what ns-2.35 cannot run; adds to
    ``plan.notes`` what it runs differently."""
    t = plan.tcp
    if plan.scheduler:
        raise Unsupported(
            "transport.scheduler: ns-2.35 has no flow scheduling layer (SCHED_TCP); remove the key to crosscheck"
        )
    for f in plan.flows:
        if f.protocol not in PROTOCOLS:
            raise Unsupported(
                f"flows[{f.flow_id}].protocol: {f.protocol!r} is not in ns-2.35 (it has TCP, and ATCP through "
                f"increase_num_); the crosscheck runs {', '.join(PROTOCOLS)}"
            )
        if f.protocol == "atcp":
            atcp_weight(f)
    if any(f.protocol == "atcp" and atcp_step(f) for f in plan.flows):
        plan.notes.append(
            f"ATCP step weight: ns-2's increase_num_ is switched from W_H to W_L by a check every "
            f"{STEP_POLL_S * 1e3:g} ms of whether the flow has sent past its threshold (fctlab switches at the byte)"
        )
    if t.get("rack"):
        raise Unsupported('transport.rack: ns-2.35 has no RACK loss detection; set it to false (profile = "ns2" does)')
    if t["tail_loss_probe"]:
        raise Unsupported(
            'transport.tail_loss_probe: ns-2.35 has no tail loss probe; set it to false (profile = "ns2" does)'
        )
    if t["cwr"]:
        raise Unsupported(
            'transport.cwr: ns-2.35\'s TCP has no CWR state (TcpAgent::ecn halves at once); set it to false (profile = "ns2" does)'
        )
    if t["handshake"] and t["initial_cwnd_segments"] != 2:
        raise Unsupported(
            f"transport.initial_cwnd: {t['initial_cwnd_segments']} segments with handshake = true; ns-2 with its SYN "
            "(syn_ and delay_growth_, tcp.cc set_initial_window) opens every connection with one segment and 2 after "
            "the SYN's ACK whatever windowInit_ says; use initial_cwnd = 2 or handshake = false"
        )
    if t["rwnd_bytes"] % t["mss_bytes"]:
        raise Unsupported(
            f"transport.rwnd: {t['rwnd_bytes']} B is not a whole number of {t['mss_bytes']} B segments (ns-2's window_ counts packets)"
        )
    ss = t["initial_ssthresh_bytes"]
    if ss is not None and ss != t["rwnd_bytes"]:
        raise Unsupported(
            f"transport.initial_ssthresh: {ss} B differs from rwnd ({t['rwnd_bytes']} B); ns-2 starts ssthresh_ at window_ "
            "(tcp.cc TcpAgent::reset)"
        )
    single_paths(plan)
    for p in plan.ports:
        q = p.queue
        if q["kind"] not in ("droptail", "ecn", "red"):
            raise Unsupported(
                f"network.queue = {q['kind']!r}: not translated to ns-2 (droptail, ecn and red are; ns-2.35 has no "
                "strict-priority queue in its stock build)"
            )
        if q["kind"] == "ecn" and q["threshold"] is not None and q["threshold"][0] != "pkts":
            raise Unsupported(
                "network.ecn_threshold: a byte threshold is not translated (ns-2's RED-based marker counts packets here); give it in packets"
            )
    # fctlab's switchable mechanisms that ns-2 has one way only: (key, ns-2's way, used when)
    for key, ns2_way, used in (
        ("sack_recovery", "ns2", t["sack"]),
        ("newreno_recovery", "ns2", not t["sack"]),
        ("ecn_reaction", "ns2", True),
        ("window_model", "ns2", True),
        ("rto_model", "ns2", True),
        ("singledup", True, True),
        ("whole_packets", True, True),
    ):
        if used and t[key] != ns2_way:
            plan.notes.append(f"transport.{key} = {t[key]!r}: ns-2 runs it its own way ({ns2_way!r})")
    ecn_ports = any(p.queue["kind"] == "ecn" for p in plan.ports)
    if ecn_ports and not any(f.ecn for f in plan.flows):
        plan.notes.append(
            "ECN threshold marking: no flow is ECN-capable, so the marking ports run as DropTail queues of the same "
            "size in ns-2, as they act in fctlab (ns-2's RED-based marker would drop such packets above K)"
        )
    elif ecn_ports and not all(f.ecn for f in plan.flows):
        plan.notes.append(
            "ECN threshold marking: ns-2's RED-based marker drops the packets of flows that are not ECN-capable once "
            "the queue exceeds K, where fctlab queues them up to the buffer's end"
        )
    if ecn_ports and any(f.ecn for f in plan.flows):
        plan.notes.append(
            "ECN threshold marking: ns-2 marks with RED at thresh_ = maxthresh_ = K, which, unlike fctlab's "
            "threshold, skips the first arrival after the queue reaches K and acts only while more than one "
            "packet waits (red.cc enque)"
        )
    if plan.queue(nic=False)["kind"] == "red" and plan.queue(nic=False)["variant"] == "classic":
        plan.notes.append(
            "RED (classic): ns-2's RED runs in packet mode with the scenario's thresholds, weight and max_p, without "
            "wait_ and mark_p_, but keeps what cannot be switched off: no early action while the queue holds at "
            "most one packet, and no action on the first arrival after the average crosses min_th (red.cc enque)"
        )


def atcp_weight(f) -> float:
    """ATCP's weight as ns-2's ``increase_num_`` at the flow's start: the `fixed` function's
    weight, or the `step` function's W_H (see :func:`atcp_step` for a flow that crosses the
    threshold)."""
    p = f.params
    fn = p.get("weight_function")
    if fn == "fixed":
        return float(p["weight"])
    if fn == "step":
        return float(p["w_high"])
    raise Unsupported(
        f"flows[{f.flow_id}].weight_function: {fn!r} varies continuously during the flow; ns-2's "
        'increase_num_ is set per flow here (use "fixed" or "step")'
    )


#: How often (s) the script checks whether a `step` flow has sent past its threshold.
STEP_POLL_S = 0.001


def atcp_step(f) -> Optional[tuple]:
    """(threshold in bytes, W_L) for a `step` flow whose weight can change while it runs (a
    long-lived flow, or one larger than the threshold), else None. ns-2's agent has no
    weight function: the script checks every STEP_POLL_S whether the flow has sent more than
    the threshold (``maxseq_``) and then sets ``increase_num_`` to W_L."""
    p = f.params
    if p.get("weight_function") != "step" or p["w_high"] == p["w_low"]:
        return None
    if f.size_bytes is not None and f.size_bytes <= p["threshold"]:
        return None
    return int(p["threshold"]), float(p["w_low"])


def _num(x: float) -> str:
    """A number for Tcl, exact for the integers and nanosecond times the plans hold."""
    if float(x).is_integer():
        return str(int(x))
    return repr(round(float(x), 12))


def _queue_lines(p, plan: Plan) -> tuple:
    """ns-2's queue type of port `p` and the lines that set it up."""
    model = plan.buffer_model
    q = p.queue
    kind = q["kind"]
    lines = []
    qv = f"[[$ns link $n({p.src}) $n({p.dst})] queue]"
    if kind == "ecn" and not any(f.ecn for f in plan.flows):
        # fctlab's threshold marker lets packets that are not ECN-capable pass to the buffer's
        # end; ns-2's RED-based marker would drop them above K
        kind = "droptail"
    qtype = "DropTail" if kind == "droptail" else "RED"
    if p.buffer is None:
        limit = 1_000_000_000
        unit = "pkts"
    else:
        unit, n = p.buffer
        limit = n
        if model == "waiting" and qtype == "DropTail":
            limit = n + 1
    lines.append(f"$ns queue-limit $n({p.src}) $n({p.dst}) {limit}")
    if unit == "bytes":
        if qtype != "DropTail":
            raise Unsupported(
                f"network.buffer: a byte buffer on the {kind} port {p.src}->{p.dst} is not translated (only DropTail ports')"
            )
        lines.append(f"{qv} set queue_in_bytes_ true")
        lines.append(f"{qv} set mean_pktsize_ 1")
    if kind == "ecn":
        k = q["threshold"][1]
        # DCTCP-style step marking with ns-2's RED (thresh_ = maxthresh_ = K, q_weight_ 1):
        # the instantaneous queue at arrival against K, marks only, no early drop.
        lines += [
            f"{qv} set bytes_ false",
            f"{qv} set queue_in_bytes_ false",
            f"{qv} set thresh_ {k}",
            f"{qv} set maxthresh_ {k}",
            f"{qv} set q_weight_ 1",
            f"{qv} set setbit_ true",
            f"{qv} set gentle_ false",
            f"{qv} set wait_ false",
            f"{qv} set use_mark_p_ true",
            f"{qv} set mark_p_ 2.0",
            f"{qv} set linterm_ 1",
        ]
    elif kind == "red":
        lines += _red_lines(qv, q, p)
    return qtype, lines


def _red_lines(qv: str, q: dict, p) -> list:
    """RED's settings. The ns2 variant is written out whole (ns-2's own defaults unless the
    scenario changed them; None thresholds and weight are ns-2's automatic 0 and -1), so the
    script does not depend on ns-default.tcl."""
    out = [f"{qv} set setbit_ {'true' if q['ecn'] else 'false'}"]
    if q.get("variant") == "ns2":
        tf = lambda b: "true" if b else "false"  # noqa: E731
        return out + [
            f"{qv} set bytes_ {tf(q['bytes'])}",
            f"{qv} set queue_in_bytes_ {tf(q['bytes'])}",
            f"{qv} set mean_pktsize_ {q['mean_pktsize']}",
            f"{qv} set thresh_ {_num(q['thresh'] or 0)}",
            f"{qv} set maxthresh_ {_num(q['maxthresh'] or 0)}",
            f"{qv} set q_weight_ {_num(q['q_weight']) if q['q_weight'] is not None else -1}",
            f"{qv} set linterm_ {_num(1.0 / q['max_p'])}",
            f"{qv} set mark_p_ {_num(q['mark_p'])}",
            f"{qv} set use_mark_p_ true",
            f"{qv} set wait_ {tf(q['wait'])}",
            f"{qv} set gentle_ {tf(q['gentle'])}",
            f"{qv} set targetdelay_ {_num(q['target_delay_s'])}",
        ]
    return out + [
        f"{qv} set bytes_ false",
        f"{qv} set queue_in_bytes_ false",
        f"{qv} set thresh_ {_num(q['min_threshold_pkts'])}",
        f"{qv} set maxthresh_ {_num(q['max_threshold_pkts'])}",
        f"{qv} set linterm_ {_num(1.0 / q['max_p'])}",
        f"{qv} set q_weight_ {_num(q['weight'])}",
        f"{qv} set gentle_ {'true' if q['gentle'] else 'false'}",
        f"{qv} set wait_ false",
        f"{qv} set use_mark_p_ false",
        f"{qv} set mean_pktsize_ 1500",
    ]


def script(plan: Plan, seed: int) -> str:
    """The Tcl script that runs `plan` in ns-2.35 and prints its results on stdout."""
    t = plan.tcp
    mss = t["mss_bytes"]
    sack = t["sack"]
    tcp_class = "Agent/TCP/Sack1" if sack else "Agent/TCP/Newreno"
    sink_class = ("Agent/TCPSink/Sack1" if sack else "Agent/TCPSink") + ("/DelAck" if t["delayed_ack"] else "")
    L = [
        f"# {plan.name}, seed {seed}: written by fctlab crosscheck for ns-2.35",
        "set ns [new Simulator]",
        f"$defaultRNG seed {seed + 1}",
        "# TCP as the scenario resolves it (fctlab validate prints the same values)",
        f"Agent/TCP set packetSize_ {mss}",
        f"Agent/TCP set tcpip_base_hdr_size_ {t['header_bytes']}",
        f"Agent/TCP set window_ {t['rwnd_bytes'] // mss}",
        f"Agent/TCP set windowInit_ {t['initial_cwnd_segments']}",
        f"Agent/TCP set minrto_ {_num(t['min_rto_s'])}",
        f"Agent/TCP set rtxcur_init_ {_num(t['initial_rto_s'])}",
        f"Agent/TCP set maxrto_ {_num(round(t['max_rto_s'], 9))}",
        f"Agent/TCP set tcpTick_ {_num(t['rto_granularity_s']) if t['rto_granularity_s'] > 0 else '0.000001'}",
        f"Agent/TCP set numdupacks_ {t['dupthresh']}",
        f"Agent/TCP set syn_ {'true' if t['handshake'] else 'false'}",
        f"Agent/TCPSink set packetSize_ {t['header_bytes']}",
        f"Agent/TCPSink/DelAck set interval_ {_num(t['delayed_ack_timeout_s'])}",
        "",
    ]
    for name in plan.hosts + plan.switches:
        L.append(f"set n({name}) [$ns node]")
    for i, p in enumerate(plan.ports):
        qtype, qlines = _queue_lines(p, plan)
        L.append(f"$ns simplex-link $n({p.src}) $n({p.dst}) {_num(p.rate_bps)} {_num(p.delay_s)} {qtype}")
        L += qlines
        L.append(f"set qm({i}) [$ns monitor-queue $n({p.src}) $n({p.dst}) 0]")
    groups = plan.groups()
    waiting: dict = {}
    for f in plan.flows:
        if f.after:
            waiting.setdefault(f.after, []).append(f.flow_id)
    L += _tcl_procs(plan, t, tcp_class, sink_class)
    # groups by number (names may hold any character)
    gid = {g: i for i, g in enumerate(groups)}
    for g, members in groups.items():
        L.append(f"set groupleft({gid[g]}) {len(members)}")
        for m in members:
            L.append(f"set groupof({m}) {gid[g]}")
    for g, ws in waiting.items():
        pairs = " ".join(f"{{{w} {_num(plan.flows[w].start_s)}}}" for w in ws)
        L.append(f"set waiters({gid[g]}) {{{pairs}}}")
    for f in plan.flows:
        incr = atcp_weight(f) if f.protocol == "atcp" else 1.0
        size = -1 if f.size_bytes is None else f.size_bytes
        L.append(f"flow {f.flow_id} {f.src} {f.dst} {size} {1 if f.ecn else 0} {_num(incr)}")
        st = atcp_step(f) if f.protocol == "atcp" else None
        if st:
            # sent > threshold bytes: more than floor(threshold / mss) whole packets
            L.append(f"set step({f.flow_id}) {{{st[0] // mss} {_num(st[1])}}}")
        if not f.after:
            L.append(f'$ns at {_num(f.start_s)} "start_flow {f.flow_id}"')
    stop = plan.stop_time_s if plan.stop_time_s is not None else 3600.0
    L += _cwnd_sampler(plan)
    L += _tcl_finish(plan, stop)
    return "\n".join(L)


def _tcl_procs(plan: Plan, t: dict, tcp_class: str, sink_class: str) -> list:
    """The script's procedures: a flow's end and start, sending in chunks, ATCP's step weight,
    and a flow's agents."""
    mss = t["mss_bytes"]
    return [
        "",
        "set ndone 0",
        "set nfinite 0",
        "# as in fctlab, a run with a long-lived flow lasts until the stop time",
        f"set nlong {sum(1 for f in plan.flows if f.size_bytes is None)}",
        "Agent/TCP instproc done {} {",
        "    $self instvar flowid",
        "    finished $flowid",
        "}",
        "proc finished {id} {",
        "    global ns tcp start ndone nfinite nlong groupleft groupof waiters fin",
        '    puts "F $id [$ns now] [$tcp($id) set nrexmit_] [$tcp($id) set nrexmitpack_] [$tcp($id) set ndatapack_]"',
        "    set fin($id) 1",
        "    incr ndone",
        "    if {[info exists groupof($id)]} {",
        "        set g $groupof($id)",
        "        incr groupleft($g) -1",
        "        if {$groupleft($g) == 0 && [info exists waiters($g)]} {",
        '            foreach w $waiters($g) { $ns at [expr [$ns now] + [lindex $w 1]] "start_flow [lindex $w 0]" }',
        "        }",
        "    }",
        '    if {$ndone == $nfinite && !$nlong} { $ns at [$ns now] "finish" }',
        "}",
        "proc start_flow {id} {",
        "    global ns ftp size start step",
        "    set start($id) [$ns now]",
        '    puts "S $id [$ns now]"',
        "    if {$size($id) < 0} { $ftp($id) start } else { send_all $id $size($id) }",
        "    if {[info exists step($id)]} { atcp_step $id }",
        "}",
        "# FTP's send takes a 32-bit int: a flow of 2 GiB or more is handed over in chunks of",
        "# whole packets (each send adds its packets to the agent's curseq_, tcp.cc sendmsg)",
        "proc send_all {id bytes} {",
        "    global ftp",
        f"    set chunk {(2**31 - 1) // mss * mss}",
        "    while {$bytes > $chunk} { $ftp($id) send $chunk; set bytes [expr {$bytes - $chunk}] }",
        "    $ftp($id) send $bytes",
        "}",
        "# ATCP's step weight: W_L once the flow has sent more than the threshold (packets)",
        "proc atcp_step {id} {",
        "    global ns tcp step fin",
        "    if {[info exists fin($id)]} { return }",
        f"    if {{[$tcp($id) set maxseq_] + 1 - {1 if t['handshake'] else 0} > [lindex $step($id) 0]}} {{",
        "        $tcp($id) set increase_num_ [lindex $step($id) 1]",
        "    } else {",
        f'        $ns at [expr [$ns now] + {_num(STEP_POLL_S)}] "atcp_step $id"',
        "    }",
        "}",
        "proc flow {id src dst bytes ecn incr} {",
        "    global ns n tcp sink ftp size nfinite",
        f"    set tcp($id) [new {tcp_class}]",
        f"    set sink($id) [new {sink_class}]",
        "    $tcp($id) set fid_ [expr $id % 32768]",
        "    $tcp($id) set flowid $id",
        "    $tcp($id) set ecn_ $ecn",
        "    $tcp($id) set increase_num_ $incr",
        "    $ns attach-agent $n($src) $tcp($id)",
        "    $ns attach-agent $n($dst) $sink($id)",
        "    $ns connect $tcp($id) $sink($id)",
        "    set ftp($id) [new Application/FTP]",
        "    $ftp($id) attach-agent $tcp($id)",
        "    set size($id) $bytes",
        "    if {$bytes >= 0} { incr nfinite }",
        "}",
    ]


def _tcl_finish(plan: Plan, stop: float) -> list:
    """The script's end: the ports' byte counters kept past 2 GiB, and the results printed at
    the stop time."""
    return [
        "",
        "# QueueMonitor's bdepartures_ is a 32-bit int that wraps after 2 GiB (16 s at 1 Gbps): its",
        "# progress is added up every second modulo 2^32 (less than 4 GiB leaves a port in a second)",
        f"for {{set i 0}} {{$i < {len(plan.ports)}}} {{incr i}} {{ set blast($i) 0; set btotal($i) 0 }}",
        "proc add_bytes {} {",
        "    global qm blast btotal",
        f"    for {{set i 0}} {{$i < {len(plan.ports)}}} {{incr i}} {{",
        "        set b [$qm($i) set bdepartures_]",
        "        set btotal($i) [expr {$btotal($i) + (($b - $blast($i)) & 0xFFFFFFFF)}]",
        "        set blast($i) $b",
        "    }",
        "}",
        "proc poll_bytes {} {",
        "    global ns",
        "    add_bytes",
        '    $ns at [expr [$ns now] + 1.0] "poll_bytes"',
        "}",
        '$ns at 1.0 "poll_bytes"',
        "proc finish {} {",
        "    global ns tcp sink qm size start btotal",
        "    set now [$ns now]",
        '    puts "T $now"',
        "    add_bytes",
        f"    for {{set i 0}} {{$i < {len(plan.ports)}}} {{incr i}} {{",
        "        set m $qm($i)",
        '        puts "L $i [$m set pdepartures_] $btotal($i) [$m set pdrops_] [$m set pmarks_] [[$m get-pkts-integrator] set sum_] [[$m get-bytes-integrator] set sum_]"',
        "    }",
        "    foreach id [lsort -integer [array names tcp]] {",
        '        puts "A $id [$tcp($id) set ack_] [$tcp($id) set nrexmit_] [$tcp($id) set nrexmitpack_] [$tcp($id) set ndatapack_]"',
        "    }",
        "    exit 0",
        "}",
        f'$ns at {_num(stop)} "finish"',
        "$ns run",
        "",
    ]


def _cwnd_sampler(plan: Plan) -> list:
    """Lines that print the window of every traced running flow at each multiple of the
    scenario's ``[monitor] cwnd_interval`` (as fctlab samples it): ``W id time cwnd_ ssthresh_
    ack_ increase_num_``."""
    mon = plan.monitor
    dt = mon.get("cwnd_interval_s")
    if not dt:
        return []
    ids = [f.flow_id for f in plan.flows] if mon.get("cwnd_flows") is None else list(mon["cwnd_flows"])
    return [
        "",
        f"set cwnd_ids {{{' '.join(map(str, ids))}}}",
        "proc sample_cwnd {k} {",
        "    global ns tcp start fin cwnd_ids",
        "    set now [$ns now]",
        "    foreach id $cwnd_ids {",
        "        if {[info exists start($id)] && ![info exists fin($id)]} {",
        '            puts "W $id $now [$tcp($id) set cwnd_] [$tcp($id) set ssthresh_] [$tcp($id) set ack_] [$tcp($id) set increase_num_]"',
        "        }",
        "    }",
        f'    $ns at [expr ($k + 1) * {_num(dt)}] "sample_cwnd [expr $k + 1]"',
        "}",
        '$ns at 0 "sample_cwnd 0"',
    ]


class NsError(RuntimeError):
    """ns could not be run, or failed; the message says which and how."""


def run(plan: Plan, seed: int, workdir: Path, ns: Optional[str] = None, timeout_s: float = 3600.0):
    """Runs `plan` under ns-2 with `seed` in `workdir` (the script, ns's output and its
    results are written there). Returns (flows rows, links rows, summary dict, cwnd rows: empty
    unless the scenario samples windows)."""
    ns = ns or find_ns()
    if ns is None:
        raise NsError("ns-2.35's `ns` was not found on PATH (Debian: apt-get install ns2; or set FCTLAB_NS)")
    workdir.mkdir(parents=True, exist_ok=True)
    tcl = workdir / "run.tcl"
    tcl.write_text(script(plan, seed))
    out, wall = run_program([ns, tcl.name], tcl, "ns.out", NsError, "ns", timeout_s)
    return parse(plan, out, seed, wall)


def parse(plan: Plan, out: str, seed: int, wall_s: float):
    """ns's printed lines as flows rows, links rows, a summary and window samples."""
    t = plan.tcp
    mss = t["mss_bytes"]
    starts, finishes, final, links = {}, {}, {}, {}
    cwnd, last_ack = [], {}
    dt = plan.monitor["cwnd_interval_s"]
    atcp = {f.flow_id for f in plan.flows if f.protocol == "atcp"}
    end = None
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        tag = parts[0]
        if tag == "S":
            starts[int(parts[1])] = float(parts[2])
        elif tag == "F":
            finishes[int(parts[1])] = (float(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]))
        elif tag == "A":
            final[int(parts[1])] = tuple(int(float(x)) for x in parts[2:])
        elif tag == "L":
            links[int(parts[1])] = tuple(float(x) for x in parts[2:])
        elif tag == "T":
            end = float(parts[1])
        elif tag == "W":
            # ack_ counts packets from 0 (the SYN's when there is one), -1 before the first
            fid, ack = int(parts[1]), int(float(parts[5]))
            prev = last_ack.get(fid, -1 + (1 if t["handshake"] else 0))
            last_ack[fid] = ack
            ss = float(parts[4]) * mss
            cwnd.append(
                {
                    "time_s": float(parts[2]),
                    "flow_id": fid,
                    "cwnd_bytes": int(float(parts[3]) * mss),
                    "ssthresh_bytes": int(ss) if ss < 2**40 else None,
                    "rate_bps": max(0, ack - prev) * mss * 8 / dt,
                    "weight": float(parts[6]) if fid in atcp else None,
                    "pacing_bps": None,
                }
            )
    syn = 1 if t["handshake"] else 0
    flows = []
    for f in plan.flows:
        st = starts.get(f.flow_id)
        fin = finishes.get(f.flow_id)
        hi, nto, nrx, ndata = final.get(f.flow_id, (-1, 0, 0, 0))
        if fin is not None:
            finish_s, nto, nrx, ndata = fin
            delivered = f.size_bytes
        else:
            finish_s = None
            segs = max(0, hi + 1 - syn)
            delivered = segs * mss if f.size_bytes is None else min(f.size_bytes, segs * mss)
        # ns-2 counts the SYN among data packets and its resends among retransmissions
        flows.append(flow_row(f, st, finish_s, delivered if st is not None else 0, nrx, nto, ndata))
    T = end or 0.0
    ports = {i: (c[0], c[1], c[2], c[3], c[4]) for i, c in links.items()}
    link_rows = port_rows(plan, ports, T)
    # a CE packet is counted at every port it leaves; once per packet at the last hop
    summary = run_summary(plan, seed, T, wall_s, len(starts), len(finishes), link_rows, marks_at="last hop")
    return flows, link_rows, summary, cwnd


#: The crosscheck target's interface (crosscheck.TARGETS).
PRODUCER = "ns-2.35"
Error = NsError
WALL_NOTE = "(its script run by ns and its output read back)"
