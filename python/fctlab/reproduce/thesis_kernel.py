"""Items 8-10 of the thesis reproduction: items 1, 2 and 4 on the real kernel.

The namespace testbed runs the scenario files `kernel_*.toml` of scenarios/papers/thesis/
under the kernel's TCP and under RCP, RACS and SDC as BPF programs on the hosts and the switch
ports (docs/testbed.md):

- item 8, `kernel_long_flows.toml`: N long-lived flows through one 100 Mbps bottleneck, for
  each sender count N. Utilization is the bottleneck's, of frames, over the whole run (the
  thesis's average throughput); the queue is the mean an arriving packet of the protocol
  found, from the port program's counters (the testbed does not sample TCP's queue);
- item 9, `kernel_multihop.toml`: item 2's four flows over a tree of 100 Mbps links, each
  flow's throughput beside the simulator's on the same file;
- item 10, `kernel_mix.toml`: item 4's responses beside two long flows, AFCT of the
  responses and utilization, beside the simulator's on the same file.
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
from .common import MATCH, NO_MATCH, Item, Runner, fmt_pct, fmt_time

PROTOCOLS = ("tcp", "rcp", "racs", "sdc")
LABEL = {"tcp": "TCP (kernel Reno, SACK)", "rcp": "RCP", "racs": "RACS", "sdc": "SDC"}
#: Sender counts and run length, quick and full.
SENDERS = {True: [1, 4], False: [1, 2, 4, 8]}
STOP = {True: "2s", False: "5s"}
SCENARIO = "kernel_long_flows.toml"


def kernel_problem() -> Optional[str]:
    """Why the kernel items cannot run here (not root, no namespaces, no BPF), or None."""
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


def rcp_low_row(it: Item, ex, rid: str, util: dict, n: int) -> bool:
    """Row ``rid``, "RCP's utilization is low with few flows", graded on ``util`` (protocol ->
    sender count -> utilization) at ``n`` senders: RCP at least a point below RACS. Returns
    whether it is."""
    low = util["rcp"][n] < util["racs"][n] - 0.01
    it.rows.append(
        ex.row(
            rid,
            fctlab=f"RCP {fmt_pct(util['rcp'][n], False)} against RACS {fmt_pct(util['racs'][n], False)} (N = {n})",
            verdict=MATCH if low else NO_MATCH,
        )
    )
    return low


def item8(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(8, why)
    senders, stop = SENDERS[mode.quick], STOP[mode.quick]
    # TCP is no row's measurement, only context: the quick run leaves it out
    protocols = PROTOCOLS[1:] if mode.quick else PROTOCOLS
    it = r.new_item(
        8,
        f"scenario `{SCENARIO}` on the kernel (`fctlab testbed run`): N = {senders} long-lived flows through one "
        f"100 Mbps bottleneck (0.27 ms one-way delay, 100-packet buffer), {stop} per run, under "
        + ("" if mode.quick else "the kernel's TCP and ")
        + "RCP, RACS and SDC as BPF programs; utilization of the bottleneck over the whole run",
    )
    scen = r.path(SCENARIO)
    res = {p: {n: _run(r, scen, p, n, stop, Path(out)) for n in senders} for p in protocols}
    util = {p: {n: res[p][n]["utilization"] for n in senders} for p in protocols}
    queue = {p: {n: res[p][n]["mean_queue_pkts"] for n in senders} for p in protocols if p != "tcp"}
    drops = {p: {n: res[p][n]["drops"] for n in senders} for p in protocols}
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
    rcp_low = rcp_low_row(it, ex, "item8.rcp_low_few", util, n1)
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
        "simulator. "
        + (
            "TCP here is the kernel's Reno (SACK and RACK on, segmentation offload off) over a 100-packet TBF: "
            + ", ".join(f"N={n} {fmt_pct(util['tcp'][n], False)} ({drops['tcp'][n]} drops)" for n in senders)
            + ". "
            if "tcp" in util
            else ""
        )
        + "The thesis measured 1 Gbps links in ns-2; this is 100 Mbps on a 2-core machine, and the thesis's numbers "
        "are set beside it as claims about shape (full, small queues), not as values of the same network."
    )
    return it


# --------------------------------------------------------------------------- item 9

#: Item 9's protocols (the thesis's item 2 measures RACS and SDC), run length quick and full.
MULTIHOP_PROTOCOLS = ("racs", "sdc")
MULTIHOP_STOP = {True: "1s", False: "5s"}
MULTIHOP = "kernel_multihop.toml"
#: The thesis's shares of the 1 Gbps links (item 2: about 300, 300, 300 and 600 Mbps).
THESIS_SHARES = {"1->2": 0.3, "2->3": 0.3, "4->3": 0.3, "4->5": 0.6}


def _testbed(scenario: Path, out: Path, name: str, sets: list, r: Runner) -> tuple:
    """One testbed run of ``scenario`` with ``sets``: its summary, flows and links."""
    d = out / name
    t0 = time.perf_counter()
    s = run_testbed(scenario, d, set=sets)
    flows = pd.read_parquet(d / "flows.parquet")
    links = pd.read_parquet(d / "links.parquet")
    shutil.rmtree(d, ignore_errors=True)
    r.log(f"    testbed {name}: {' '.join(sets)}, {time.perf_counter() - t0:.1f} s wall")
    return s, flows, links


def _simulated(r: Runner, name: str, label: str, **overrides):
    """The simulator's run of a kernel item's file with its own transport (the `linux`
    profile, as the kernel's), not under the reproduction's profile."""
    saved = r.overrides, r.label
    r.overrides, r.label = {}, ""
    try:
        return r.run(name, f"{label} (the file's profile)", **overrides)
    finally:
        r.overrides, r.label = saved


def _throughputs(flows: pd.DataFrame, seconds: float) -> dict:
    """Mbps of payload delivered per flow tag over the run."""
    return {t: float(b) * 8 / seconds / 1e6 for t, b in zip(flows["tag"], flows["bytes_delivered"])}


def _shares_row(r: Runner, it: Item, rid: str, kern: dict, rate_mbps: float) -> None:
    """A row grading the kernel's four shares, as fractions of the link, against the
    thesis's (within 10% each)."""
    ok = all(abs(kern[t] / rate_mbps - v) <= 0.1 * v for t, v in THESIS_SHARES.items())
    shown = ", ".join(f"{t} {kern[t]:.1f}" for t in THESIS_SHARES) + f" Mbps of {rate_mbps:g}"
    it.rows.append(r.expected.row(rid, fctlab=shown, verdict=MATCH if ok else NO_MATCH))


def item9(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(9, why)
    stop = MULTIHOP_STOP[mode.quick]
    secs = float(stop.rstrip("s"))
    it = r.new_item(
        9,
        f"scenario `{MULTIHOP}` on the kernel (`fctlab testbed run`): item 2's flows 1->2, 2->3, 4->3 and 4->5 over a "
        f"tree of 100 Mbps links (three racks of three hosts; link delays those of the veths), {stop} per run, under "
        "RACS and SDC as BPF programs; each flow's throughput (payload) beside the simulator's on the same file",
    )
    scen = r.path(MULTIHOP)
    kern, sim, queue = {}, {}, {}
    for p in MULTIHOP_PROTOCOLS:
        sets = [f'stop_time="{stop}"', f'transport.protocol="{p}"']
        summary, flows, _ = _testbed(scen, Path(out), f"kernel_multihop_{p}", sets, r)
        kern[p] = _throughputs(flows, secs)
        queue[p] = ((summary.get("feedback") or {}).get("ports", {}).get("tor0->h0") or {}).get("mean_queue_pkts")
        sim[p] = _throughputs(
            _simulated(r, MULTIHOP, f"simulator {p}", transport__protocol=p, stop_time=stop).flows, secs
        )
    it.numbers = {
        "kernel_mbps": kern,
        "simulator_mbps": sim,
        "kernel_mean_queue_pkts_tor0_h0": queue,
        "stop_time": stop,
    }
    _shares_row(r, it, "item9.racs_shares", kern["racs"], 100.0)
    _shares_row(r, it, "item9.sdc_shares", kern["sdc"], 100.0)
    for p in MULTIHOP_PROTOCOLS:
        it.explanation.append(
            f"{p.upper()} on the kernel against the simulator, Mbps: "
            + ", ".join(f"{t} {kern[p][t]:.1f} / {sim[p][t]:.1f}" for t in THESIS_SHARES)
            + "."
        )
    shared = sum(kern["sdc"][t] for t in ("1->2", "2->3", "4->3"))
    if shared < 90 and queue["sdc"] is not None:
        it.explanation.append(
            f"SDC's three flows into h0 carry {shared:.1f} Mbps of the 100 Mbps port on the kernel, while packets "
            f"arriving there find a mean queue of {queue['sdc']:.1f} packets. Eq. 3.4's load factor counts that "
            "average queue against C t_p, t_p the average RTT the packets carry, so the flows hear overload and cut "
            "with the port half idle. The testbed's round trips are shorter than the simulator's on the same file: "
            "its TBFs space packets at the link rate but a packet crosses a veth at once, where each of the "
            "simulator's store-and-forward hops adds a packet's transmission time (120 us at 100 Mbps), so C t_p is "
            "a few packets on the kernel and a queue weighs more in f. That is not the whole cause: with t_p fixed "
            'at 1 ms (`sdc = { t_p = "1ms" }`) the three flows carried 53 Mbps, and with the senders\' token '
            "buckets cut from 8 frames to 2 the queue stayed at 4 packets. Why the kernel's arrivals find that queue "
            "on a half-idle port is not established."
        )
    it.explanation.append(
        "RACS shares each port in proportion to the weights and does not give a flow's unused share to the others: "
        "4->5 gets half of h3's link (the flows there have equal weights), not the 2/3 that max-min fairness (the "
        "thesis's 600 of 1000 Mbps) gives it, in the simulator and on the kernel alike, as item 2 finds in the "
        "simulator. The thesis's shares are of 1 Gbps links; here they are read as fractions of the 100 Mbps links."
    )
    return it


# --------------------------------------------------------------------------- item 10

#: Item 10's runs: the protocol, and the TCP run with ECN marking at the ports.
MIX_RUNS = ("racs", "rcp", "sdc", "tcp", "tcp_ecn")
MIX_LABEL = {"racs": "RACS", "rcp": "RCP", "sdc": "SDC", "tcp": "SACK", "tcp_ecn": "SACK+ECN"}
MIX_STOP = {True: "1.5s", False: "10s"}
MIX = "kernel_mix.toml"
#: The testbed marks at an instantaneous threshold (it has no RED): the middle of ns-2's RED
#: thresholds (5 and 15 packets), which the thesis's SACK+RED/ECN runs used.
ECN_THRESHOLD = "10pkt"


def _mix_sets(run: str, stop: str) -> dict:
    sets = {"stop_time": stop, "workloads.0.until": f"{float(stop.rstrip('s')) - 0.1:g}s"}
    if run == "tcp_ecn":
        return {
            **sets,
            "transport.protocol": "tcp",
            "network.queue": "ecn",
            "network.ecn_threshold": ECN_THRESHOLD,
            "transport.ecn": True,
        }
    return {**sets, "transport.protocol": run}


def _mix_numbers(flows: pd.DataFrame, links: pd.DataFrame) -> dict:
    resp = flows[flows["tag"] == "response"]
    done = resp[resp["completed"]]
    port = links[(links["src"] == "left") & (links["dst"] == "right")].iloc[0]
    return {
        "afct_s": float(done["fct_s"].mean()),
        "median_s": float(done["fct_s"].median()),
        "responses": int(len(resp)),
        "completed": int(len(done)),
        "utilization": float(port["utilization"]),
        "drops": int(port["drops"]),
    }


def item10(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(10, why)
    stop = MIX_STOP[mode.quick]
    it = r.new_item(
        10,
        f"scenario `{MIX}` on the kernel (`fctlab testbed run`): item 4's mix scaled to 100 Mbps: two long-lived flows "
        "s0, s1 -> r0 and responses uniform in [2 KB, 50 KB] s2 -> r0, Poisson at 20/s (4% of the link), through one "
        f"100 Mbps bottleneck (0.27 ms one-way delay, 100-packet buffers), {stop} per run, under RACS, RCP and SDC as BPF "
        f"programs and the kernel's TCP (SACK) over drop-tail and with ECN marking at {ECN_THRESHOLD}; AFCT of the "
        "responses and utilization of the bottleneck beside the simulator's on the same file",
    )
    scen = r.path(MIX)
    kern, sim = {}, {}
    for run in MIX_RUNS:
        sets = _mix_sets(run, stop)
        args = [f"{k}={str(v).lower() if isinstance(v, bool) else repr(v)}" for k, v in sets.items()]
        _, flows, links = _testbed(scen, Path(out), f"kernel_mix_{run}", [a.replace("'", '"') for a in args], r)
        kern[run] = _mix_numbers(flows, links)
        res = _simulated(r, MIX, f"simulator {run}", **{k.replace(".", "__"): v for k, v in sets.items()})
        sim[run] = _mix_numbers(res.flows, res.links)
    it.numbers = {"kernel": kern, "simulator": sim, "stop_time": stop}
    _mix_rows(r, it, kern, sim)
    it.explanation.append(
        "Kernel against the simulator on the same file, AFCT (median) and utilization: "
        + "; ".join(
            f"{MIX_LABEL[k]} {fmt_time(kern[k]['afct_s'])} ({fmt_time(kern[k]['median_s'])}), "
            f"{fmt_pct(kern[k]['utilization'], False)} against {fmt_time(sim[k]['afct_s'])} "
            f"({fmt_time(sim[k]['median_s'])}), {fmt_pct(sim[k]['utilization'], False)}"
            for k in MIX_RUNS
        )
        + "."
    )
    return it


def _mix_rows(r: Runner, it: Item, kern: dict, sim: dict) -> None:
    ex = r.expected
    a = {k: kern[k]["afct_s"] for k in MIX_RUNS}
    it.rows.append(
        ex.row(
            "item10.racs_below_rcp",
            fctlab=f"RACS {fmt_time(a['racs'])} against RCP {fmt_time(a['rcp'])}",
            verdict=MATCH if a["racs"] < a["rcp"] else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item10.sdc_below_sack",
            fctlab=f"SDC {fmt_time(a['sdc'])} against SACK {fmt_time(a['tcp'])}",
            verdict=MATCH if a["sdc"] < a["tcp"] else NO_MATCH,
        )
    )
    ecn_above = a["tcp_ecn"] > a["tcp"]
    it.rows.append(
        ex.row(
            "item10.ecn_above_sack",
            fctlab=f"SACK+ECN {fmt_time(a['tcp_ecn'])} against SACK {fmt_time(a['tcp'])}",
            verdict=MATCH if ecn_above else NO_MATCH,
        )
    )
    if not ecn_above:
        it.explanation.append(
            f"SACK+ECN's responses finish sooner than SACK's here: the testbed's ports mark at an instantaneous "
            f"queue of {ECN_THRESHOLD.replace('pkt', ' packets')} (it has no RED), which keeps the queue the responses wait in short, while "
            "drop-tail lets the long flows fill the 100-packet buffer. The thesis's RED marks on an average queue "
            "between 5 and 15 packets; item 4 measures that in the simulator."
        )
    util = {k: kern[k]["utilization"] for k in ("sdc", "racs", "rcp")}
    it.rows.append(
        ex.row(
            "item10.utilization",
            fctlab=", ".join(f"{MIX_LABEL[k]} {fmt_pct(v, False)}" for k, v in util.items()),
            verdict=MATCH if all(v >= 0.95 for v in util.values()) else NO_MATCH,
        )
    )
    low = [k for k, v in util.items() if v < 0.95]
    if low:
        same = [k for k in low if abs(sim[k]["utilization"] - util[k]) <= 0.03]
        it.explanation.append(
            "Utilization below 95% on the kernel: "
            + ", ".join(
                f"{MIX_LABEL[k]} {fmt_pct(util[k], False)} (the simulator on the same file: "
                f"{fmt_pct(sim[k]['utilization'], False)})"
                for k in low
            )
            + ". "
            + (
                f"Where the simulator agrees ({', '.join(MIX_LABEL[k] for k in same)}), the kernel follows the "
                "protocol's rule and the difference from the thesis's ns-2 runs lies in the network (ten times "
                "slower, a shorter path), not in the kernel. "
                if same
                else ""
            )
            + (
                "SDC's load factor counts the queue arriving packets find against C t_p, which the testbed's "
                "shorter round trips make small (item 9)."
                if "sdc" in low and "sdc" not in same
                else ""
            )
        )
    drops = {k: kern[k]["drops"] for k in ("sdc", "racs", "rcp")}
    it.rows.append(
        ex.row(
            "item10.no_loss",
            fctlab=", ".join(f"{MIX_LABEL[k]} {v}" for k, v in drops.items()) + " drops at the bottleneck",
            verdict=MATCH if not any(drops.values()) else NO_MATCH,
        )
    )
