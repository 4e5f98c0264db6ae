"""Item 8 of the thesis reproduction: item 1's long flows on the real kernel.

The namespace testbed runs `scenarios/papers/thesis/kernel_long_flows.toml` (N long-lived
flows through one 100 Mbps bottleneck) under the kernel's TCP and under RCP, RACS and SDC as
BPF programs on the hosts and the switch ports (docs/testbed.md), for each sender count N.
Utilization is the bottleneck's, of frames, over the whole run (the thesis's average
throughput); the queue is the mean an arriving packet of the protocol found, from the
port program's counters (the testbed does not sample TCP's queue).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Optional

import pandas as pd

from .. import kernel as K
from ..testbed import run_testbed
from ..testbed.netns import check_machine
from .common import MATCH, NO_MATCH, Item, Runner, fmt_pct

PROTOCOLS = ("tcp", "rcp", "racs", "sdc")
LABEL = {"tcp": "TCP (kernel Reno, SACK)", "rcp": "RCP", "racs": "RACS", "sdc": "SDC"}
#: Sender counts and run length, quick and full.
SENDERS = {True: [1, 4], False: [1, 2, 4, 8]}
STOP = {True: "2s", False: "5s"}
SCENARIO = "kernel_long_flows.toml"


def _problem() -> Optional[str]:
    probs = check_machine()
    if probs:
        return "testbed unavailable: " + "; ".join(probs)
    return K.bpf_unavailable()


def _run(r: Runner, scenario: Path, proto: str, n: int, stop: str, out: Path) -> dict:
    """One testbed run: the bottleneck's utilization, drops and mean queue (None for TCP)."""
    d = out / f"kernel_long_{proto}_{n}"
    t0 = time.perf_counter()
    s = run_testbed(
        scenario,
        d,
        set=[f"network.senders={n}", f"network.receivers={n}", f"stop_time={stop}", f'transport.protocol="{proto}"'],
    )
    links = pd.read_parquet(d / "links.parquet")
    port = links[(links["src"] == "left") & (links["dst"] == "right")].iloc[0]
    fb = (s.get("feedback") or {}).get("ports", {}).get("left->right") or {}
    shutil.rmtree(d, ignore_errors=True)
    res = {
        "utilization": float(port["utilization"]),
        "drops": int(port["drops"]),
        "mean_queue_pkts": fb.get("mean_queue_pkts"),
    }
    r.log(
        f"    testbed {proto} N={n}: utilization {res['utilization']:.3f}, {res['drops']} drops, "
        f"{time.perf_counter() - t0:.1f} s wall"
    )
    return res


def item8(r: Runner, mode, out) -> Item:
    why = _problem()
    if why:
        return r.placeholder(8, why)
    senders, stop = SENDERS[mode.quick], STOP[mode.quick]
    it = r.new_item(
        8,
        f"scenario `{SCENARIO}` on the kernel (`fctlab testbed run`): N = {senders} long-lived flows through one "
        f"100 Mbps bottleneck (0.27 ms one-way delay, 100-packet buffer), {stop} per run, under the kernel's TCP and "
        "RCP, RACS and SDC as BPF programs; utilization of the bottleneck over the whole run",
    )
    scen = r.path(SCENARIO)
    res = {p: {n: _run(r, scen, p, n, stop, Path(out)) for n in senders} for p in PROTOCOLS}
    util = {p: {n: res[p][n]["utilization"] for n in senders} for p in PROTOCOLS}
    queue = {p: {n: res[p][n]["mean_queue_pkts"] for n in senders} for p in PROTOCOLS if p != "tcp"}
    drops = {p: {n: res[p][n]["drops"] for n in senders} for p in PROTOCOLS}
    it.numbers = {"utilization": util, "mean_queue_pkts": queue, "drops": drops, "senders": senders}
    ex = r.expected

    def shown(p: str) -> str:
        return " / ".join(fmt_pct(util[p][n], False) for n in senders) + f" (N = {', '.join(map(str, senders))})"

    it.rows.append(ex.row("item8.racs_util", min(util["racs"].values()), shown("racs")))
    sdc_min = min(util["sdc"].values())
    it.rows.append(ex.row("item8.sdc_util", fctlab=shown("sdc"), verdict=MATCH if sdc_min >= 0.95 else NO_MATCH))
    qmax = {p: max(q for q in queue[p].values() if q is not None) for p in queue}
    small = all(q < 10 for q in qmax.values()) and all(sum(drops[p].values()) == 0 for p in queue)
    it.rows.append(
        ex.row(
            "item8.small_queues",
            fctlab=", ".join(f"{LABEL[p]} {qmax[p]:.1f}" for p in queue)
            + f" packets at most; drops {', '.join(f'{LABEL[p]} {sum(drops[p].values())}' for p in queue)}",
            verdict=MATCH if small else NO_MATCH,
        )
    )
    n1 = senders[0]
    rcp_low = util["rcp"][n1] < util["racs"][n1] - 0.01
    it.rows.append(
        ex.row(
            "item8.rcp_low_few",
            fctlab=f"RCP {fmt_pct(util['rcp'][n1], False)} against RACS {fmt_pct(util['racs'][n1], False)} (N = {n1})",
            verdict=MATCH if rcp_low else NO_MATCH,
        )
    )
    if qmax["racs"] >= 10:
        it.explanation.append(
            f"RACS keeps a standing queue on the kernel ({qmax['racs']:.1f} packets at most): its grants add up to C "
            "exactly and its rule has no queue term, so a queue once formed is never drained. The simulator's senders "
            "send exactly their grant; the kernel's pace TCP payload at the grant scaled by the frame's headers, "
            "with the kernel's timers, through a TBF that releases bursts, and a small excess accumulates. RCP "
            "(whose rule drains the persistent queue) and SDC (whose load factor counts it) do not keep one."
        )
    if rcp_low:
        it.explanation.append(
            f"RCP's utilization with one sender ({fmt_pct(util['rcp'][n1], False)}) is below RACS's because of how "
            "it starts, as in item 1: a port that has never carried traffic offers 0.05 C (at least one packet per "
            "average RTT), and R grows by at most a factor 1 + a per control interval."
        )
    it.explanation.append(
        "Utilization is of the bottleneck's frames over the whole run, start included: RCP's ports start at 0.05 C "
        "(at least one packet per average RTT) and RACS's flows wait one round for their first rate, as in the "
        "simulator. TCP here is the kernel's Reno (SACK and RACK on, segmentation offload off) over a 100-packet TBF: "
        + ", ".join(f"N={n} {fmt_pct(util['tcp'][n], False)} ({drops['tcp'][n]} drops)" for n in senders)
        + ". The thesis measured 1 Gbps links in ns-2; this is 100 Mbps on a 2-core machine, and the thesis's numbers "
        "are set beside it as claims about shape (full, small queues), not as values of the same network."
    )
    return it
