"""Reproduction of Li et al., "HPCC: High Precision Congestion Control" (SIGCOMM 2019), section
5.3 at a reduced scale: the 95th-percentile FCT slowdown by flow size under HPCC, DCQCN, TIMELY
and DCTCP on a lossless fabric, for web-search and Facebook Hadoop flows at 30% load, and at
50% load with incast flows added, with the PFC pauses of each run. See
``docs/reproduce_hpcc.md``.

The network is the authors' ns-3 fork's (alibaba-edu/High-Precision-Congestion-Control,
``simulation/mix/fat.txt`` and ``simulation/run.py``): 320 hosts at 100 Gbps in a three-level
fat-tree with 400 Gbps links above the racks, one 32 MB shared buffer per switch, PFC, and
each congestion control's settings from ``run.py``. The slowdowns are grouped as the fork's
``analysis/fct_analysis.py`` groups them: flows sorted by size, in twenty groups of 5% of the
flows each, a flow's slowdown (its FCT over its ideal) no less than 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plan as _plan
from .common import MATCH, NO_MATCH, Item, Runner, new_figure, save_figure
from .runner import Paper

ITEM_ORDER = [1, 2, 3, 4]
#: item -> (fctlab's size distribution, the paper's name, total load, incast flows added)
ITEMS_SETUP = {
    1: ("websearch", "WebSearch", 0.3, False),
    2: ("fb_hadoop", "FB_Hadoop", 0.3, False),
    3: ("websearch", "WebSearch", 0.5, True),
    4: ("fb_hadoop", "FB_Hadoop", 0.5, True),
}
SCHEMES = ("hpcc", "dcqcn", "timely", "dctcp")
LABEL = {"hpcc": "HPCC", "dcqcn": "DCQCN", "timely": "TIMELY", "dctcp": "DCTCP"}
#: groups of flows by size, as the fork's analysis makes them (its default step of 5%)
GROUPS = 20
#: the flows the results page says HPCC helps most ("flows < 200KB")
SHORT_BYTES = 200_000
#: the claims' checks: HPCC's 95th-percentile slowdown below the other scheme's in at least this
#: share of the groups of short flows
MOST = 0.8

# The topology of simulation/mix/fat.txt.
PODS, TORS_PER_POD, AGGS_PER_POD, CORES, HOSTS_PER_TOR = 5, 4, 4, 16, 16
HOSTS = PODS * TORS_PER_POD * HOSTS_PER_TOR
HOST_RATE_BPS = 100e9

# Incast flows (the items at 50% load): chosen, see docs/reproduce_hpcc.md.
INCAST_SENDERS = 60
INCAST_BYTES = 500_000
#: the incast flows' bytes as a share of the hosts' links
INCAST_LOAD = 0.02

_RED_KEYS = [
    f"network.red_{k}" for k in ("min_threshold", "max_threshold", "threshold_rate", "max_p", "weight", "gentle", "ecn")
]
#: the other schemes as overrides of fabric.toml (HPCC as the file is written), with run.py's
#: settings for each at a 100 Gbps NIC
OVERRIDES = {
    "hpcc": {},
    "dcqcn": {
        "transport__protocol": "dcqcn",
        # the fork cuts the rate at most once per RATE_DECREASE_INTERVAL (4 us); fctlab's receiver
        # sends at most one CNP per cnp_interval, which bounds the cuts the same way
        "transport__cnp_interval": "4us",
        "transport__dcqcn__alpha_timer": "1us",  # ALPHA_RESUME_INTERVAL 1
        "transport__dcqcn__rate_timer": "300us",  # RP_TIMER 300
        "transport__dcqcn__byte_counter": "0B",  # the fork's RP has no byte counter
        "transport__dcqcn__fast_recovery": 1,  # FAST_RECOVERY_TIMES 1
        "transport__dcqcn__rate_ai": "20Mbps",  # RATE_AI 5 * bw / 25
        "transport__dcqcn__rate_hai": "200Mbps",  # RATE_HAI 50 * bw / 25
        "transport__dcqcn__min_rate": "1Gbps",  # MIN_RATE 1000Mb/s
        "unset": ["transport.hpcc"],
    },
    "timely": {
        "transport__protocol": "timely",
        "transport__timely__timely_rate_ai": "100Mbps",  # RATE_AI 10 * bw / 10
        "transport__timely__timely_rate_hai": "500Mbps",  # RATE_HAI 50 * bw / 10
        "transport__timely__timely_min_rate": "1Gbps",
        "unset": ["transport.hpcc"],
    },
    "dctcp": {
        # fctlab's DCTCP runs on its TCP transport over the same lossless fabric; the fork's
        # marks at K = 30 * bw / 10 KB with probability 1 and starts within one BDP. Its hosts
        # hold no queue of their own (the NIC serves its queue pairs in turn); a TCP sender's
        # NIC queue here marks as the switches do, or the windows of a host's flows would grow
        # into an unmarked queue whenever its own link is their bottleneck
        "transport__protocol": "dctcp",
        "network__queue": "ecn",
        "network__nic_queue": "switch",
        "network__ecn_threshold": "300KB",
        "transport__initial_cwnd": 150,
        "unset": ["transport.hpcc"] + _RED_KEYS,
    },
}


@dataclass
class Mode:
    quick: bool
    #: background flows per run, by size distribution
    flows: dict

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


QUICK = Mode(True, {"websearch": 300, "fb_hadoop": 1500})
FULL = Mode(False, {"websearch": 8000, "fb_hadoop": 40000})


def topology_lines() -> list:
    """The node and link lists of fabric.toml's network: the fork's ``fat.txt``."""
    tors, aggs = PODS * TORS_PER_POD, PODS * AGGS_PER_POD
    nodes = [(f"h{h}", "host") for h in range(HOSTS)]
    nodes += [(f"tor{t}", "switch") for t in range(tors)]
    nodes += [(f"agg{a}", "switch") for a in range(aggs)]
    nodes += [(f"core{c}", "switch") for c in range(CORES)]
    links = [(f"h{h}", f"tor{h // HOSTS_PER_TOR}") for h in range(HOSTS)]
    per_agg = CORES // AGGS_PER_POD
    for p in range(PODS):
        links += [
            (f"tor{p * TORS_PER_POD + t}", f"agg{p * AGGS_PER_POD + a}")
            for t in range(TORS_PER_POD)
            for a in range(AGGS_PER_POD)
        ]
        links += [
            (f"agg{p * AGGS_PER_POD + a}", f"core{a * per_agg + c}")
            for a in range(AGGS_PER_POD)
            for c in range(per_agg)
        ]
    out = ["nodes = ["]
    out += [f'  {{ name = "{n}", kind = "{k}" }},' for n, k in nodes]
    out += ["]", "links = ["]
    out += [f'  {{ a = "{a}", b = "{b}" }},' for a, b in links]
    out += ["]"]
    return out


def incast_trace(path: Path, seed: int, duration_s: float) -> int:
    """Write the incast flows of one run to `path` (a trace file): events at Poisson times over
    `duration_s`, at the rate that gives INCAST_LOAD of the hosts' links, each INCAST_SENDERS
    distinct hosts sending INCAST_BYTES to one other host. At least two events. Returns the
    number of events."""
    rng = np.random.default_rng([seed, 0x1CA5])
    rate = INCAST_LOAD * HOSTS * HOST_RATE_BPS / (8 * INCAST_SENDERS * INCAST_BYTES)
    times, t = [], rng.exponential(1 / rate)
    while t < duration_s:
        times.append(t)
        t += rng.exponential(1 / rate)
    while len(times) < 2:
        times.append(duration_s * len(times) / 2)
    lines = ["start_s,src,dst,size_bytes,tag"]
    for t in sorted(times):
        dst = int(rng.integers(HOSTS))
        others = np.delete(np.arange(HOSTS), dst)
        for src in rng.choice(others, INCAST_SENDERS, replace=False):
            lines.append(f"{t:.9f},h{src},h{dst},{INCAST_BYTES},incast")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(times)


def by_size(flows: pd.DataFrame, groups: int = GROUPS) -> list:
    """The fork's grouping: flows sorted by size, `groups` groups of equal counts; per group the
    largest size, the median, 95th and 99th percentile slowdown (each flow's no less than 1) and
    the flows in it."""
    if not flows["completed"].all():
        raise RuntimeError(f"{int((~flows['completed']).sum())} flows did not complete")
    f = flows.sort_values(["size_bytes", "flow_id"], kind="stable")
    size = f["size_bytes"].to_numpy(float)
    slow = np.maximum((f["fct_s"] / f["ideal_fct_s"]).to_numpy(float), 1.0)
    n = len(f)
    out = []
    for i in range(groups):
        lo, hi = i * n // groups, (i + 1) * n // groups
        s = slow[lo:hi]
        out.append(
            {
                "up_to_bytes": float(size[hi - 1]) if hi > lo else float("nan"),
                "median": float(np.median(s)) if len(s) else float("nan"),
                "p95": float(np.quantile(s, 0.95)) if len(s) else float("nan"),
                "p99": float(np.quantile(s, 0.99)) if len(s) else float("nan"),
                "flows": int(hi - lo),
            }
        )
    return out


def pauses(pfc: pd.DataFrame, end_s: float) -> dict:
    """From a run's pause monitor: the pauses, the ports ever paused, and the time ports spent
    paused, summed over ports and priorities (a pause not resumed runs to `end_s`)."""
    if pfc is None or not len(pfc):
        return {"pauses": 0, "ports_paused": 0, "paused_s": 0.0}
    paused = 0.0
    for _, g in pfc.groupby(["link_id", "prio"], sort=False):
        start = None
        for t, ev in zip(g["time_s"].to_numpy(float), g["event"]):
            if ev == "pause" and start is None:
                start = t
            elif ev == "resume" and start is not None:
                paused += t - start
                start = None
        if start is not None:
            paused += end_s - start
    p = pfc[pfc["event"] == "pause"]
    return {"pauses": int(len(p)), "ports_paused": int(p["link_id"].nunique()), "paused_s": float(paused)}


def _background_seconds(r: Runner, workload: str, count: int, load: float) -> float:
    """The span of the background flows' arrivals in the run (its Poisson draws, read from the
    plan without running it)."""
    p = _plan.load_file(
        r.path("fabric.toml"),
        overrides=[f'workloads.0.sizes="{workload}"', f"workloads.0.count={count}", f"workloads.0.load={load}"],
    )
    return max(f.start_s for f in p.flows)


def _runs(r: Runner, n: int, mode: Mode, out: Path) -> dict:
    workload, _, load, incast = ITEMS_SETUP[n]
    count = mode.flows[workload]
    common = {"workloads__0__sizes": workload, "workloads__0__count": count, "workloads__0__load": load}
    events = 0
    if incast:
        trace = (out / f"hpcc_item{n}_incast.csv").resolve()
        events = incast_trace(trace, 1, _background_seconds(r, workload, count, load))
        common["workloads__1__file"] = str(trace)
    res = {"groups": {}, "pfc": {}, "incast_events": events}
    for s in SCHEMES:
        run = r.run("fabric.toml", f"{workload} {load:g} {s}", **common, **OVERRIDES[s])
        flows = run.flows
        res["groups"][s] = by_size(flows[flows["tag"] == "background"])
        res["pfc"][s] = pauses(getattr(run, "pfc", None), float(run.summary["sim_time_s"]))
        if incast:
            inc = flows[flows["tag"] == "incast"]
            res.setdefault("incast_fct_s", {})[s] = float(inc["fct_s"].median()) if len(inc) else float("nan")
    return res


def short_groups(groups: list) -> list:
    """The indices of the groups whose largest flow is under SHORT_BYTES."""
    return [i for i, g in enumerate(groups) if g["up_to_bytes"] < SHORT_BYTES]


def _claims(it: Item, r: Runner, n: int, res: dict) -> None:
    ex = r.expected
    g = res["groups"]
    short = short_groups(g["hpcc"])
    for other in ("dcqcn", "timely"):
        below = sum(g["hpcc"][i]["p95"] < g[other][i]["p95"] for i in short)
        need = int(np.ceil(MOST * len(short)))
        it.rows.append(
            ex.row(
                f"item{n}.short_vs_{other}",
                fctlab=f"{below} of {len(short)}; HPCC/{LABEL[other]} by group: "
                + ", ".join(f"{g['hpcc'][i]['p95'] / g[other][i]['p95']:.2f}" for i in short),
                verdict=MATCH if short and below >= need else NO_MATCH,
            )
        )
    if n == 1:
        last = {s: g[s][-1]["p95"] for s in SCHEMES}
        longer = last["hpcc"] > last["dcqcn"] and last["hpcc"] > last["timely"]
        it.rows.append(
            ex.row(
                "item1.long_flows",
                fctlab="95th-percentile slowdown of the largest 5%: "
                + ", ".join(f"{LABEL[s]} {last[s]:.2f}" for s in SCHEMES),
                verdict=MATCH if longer else NO_MATCH,
            )
        )
    cuts = {o: max(1 - a["p95"] / b["p95"] for a, b in zip(g["hpcc"], g[o])) for o in ("dcqcn", "timely")}
    it.rows.append(
        ex.row(
            f"item{n}.largest_cut",
            fctlab=", ".join(f"{c:.0%} against {LABEL[o]}" for o, c in cuts.items()),
            verdict=MATCH if max(cuts.values()) >= 0.5 else NO_MATCH,
        )
    )
    if ITEMS_SETUP[n][3]:
        p = {s: res["pfc"][s]["paused_s"] for s in SCHEMES}
        less = p["hpcc"] < p["dcqcn"] and p["hpcc"] < p["timely"]
        it.rows.append(
            ex.row(
                f"item{n}.pauses",
                fctlab="time paused, summed over ports: "
                + ", ".join(f"{LABEL[s]} {p[s] * 1e3:.3g} ms" for s in SCHEMES),
                verdict=MATCH if less else NO_MATCH,
            )
        )


def _figure(res: dict, out: Path, name: str, title: str) -> None:
    fig = new_figure(11, 3.8)
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [2, 2, 1]})
    groups = res["groups"]
    ticks = [_size_label(g["up_to_bytes"]) for g in groups["hpcc"]]
    for ax, key, what in ((axes[0], "p95", "95th percentile"), (axes[1], "median", "median")):
        for s in SCHEMES:
            ax.plot(range(len(ticks)), [g[key] for g in groups[s]], marker="o", ms=3, label=LABEL[s])
        ax.set_yscale("log")
        ax.set_xticks(range(len(ticks)), ticks, rotation=70, fontsize=6)
        ax.set_xlabel("flow size, up to (B), by 5% of the flows")
        ax.set_title(f"{title}: {what} FCT slowdown", fontsize=9)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    axes[0].legend(fontsize=8)
    ax = axes[2]
    ax.bar(range(len(SCHEMES)), [res["pfc"][s]["paused_s"] * 1e3 for s in SCHEMES])
    ax.set_xticks(range(len(SCHEMES)), [LABEL[s] for s in SCHEMES], fontsize=7)
    ax.set_ylabel("time paused, summed over ports (ms)", fontsize=8)
    ax.set_title("PFC pauses", fontsize=9)
    save_figure(fig, out / name)


def _size_label(b: float) -> str:
    if not np.isfinite(b):
        return "-"
    for unit, div in (("M", 1e6), ("K", 1e3)):
        if b >= div:
            return f"{b / div:.3g}{unit}"
    return f"{b:.0f}"


def _item(n: int):
    workload, paper_name, load, incast = ITEMS_SETUP[n]

    def item(r: Runner, mode: Mode, out) -> Item:
        count = mode.flows[workload]
        setup = (
            f"`fabric.toml` (320 hosts at 100 Gbps, 400 Gbps above the racks, PFC, 32 MB shared buffers) with {count} "
            f"{paper_name} flows (`{workload}`), Poisson arrivals at load {load:g}"
        )
        if incast:
            setup += (
                f", and incast events ({INCAST_SENDERS} senders x {INCAST_BYTES // 1000} KB to one host, "
                f"{INCAST_LOAD:.0%} of the hosts' links)"
            )
        it = r.new_item(n, setup + "; HPCC, DCQCN, TIMELY and DCTCP on the same flows (seed 1)")
        res = _runs(r, n, mode, Path(out))
        it.numbers = res
        _claims(it, r, n, res)
        _figure(res, Path(out), f"hpcc_item{n}.png", f"{paper_name} {load:.0%}" + (" + incast" if incast else ""))
        it.figures.append(
            (f"hpcc_item{n}.png", f"FCT slowdown by flow size and PFC pauses, {paper_name} at {load:.0%} load")
        )
        it.explanation.append(
            "95th-percentile slowdown by 5% of the flows (smallest first): "
            + "; ".join(f"{LABEL[s]} " + ", ".join(f"{g['p95']:.2f}" for g in res["groups"][s]) for s in SCHEMES)
            + "."
        )
        it.explanation.append(
            "PFC: "
            + "; ".join(
                f"{LABEL[s]} {p['pauses']} pauses at {p['ports_paused']} ports, {p['paused_s'] * 1e3:.3g} ms paused"
                for s, p in res["pfc"].items()
            )
            + (f" ({res['incast_events']} incast events)." if incast else ".")
        )
        return it

    return item


ITEMS: dict = {n: _item(n) for n in ITEMS_SETUP}


def _intro(mode: Mode) -> list:
    intro = [
        "Items 1 to 4 run the paper's large-scale comparison (section 5.3) on the authors' simulated network "
        "(`scenarios/papers/hpcc/fabric.toml`) under HPCC, DCQCN, TIMELY and DCTCP, with fewer flows than the paper "
        "(its runs span tens of milliseconds of a 320-host fabric; these span a few). The paper's figures are not "
        "available to fctlab in numbers; its abstract and its authors' results page state the findings, so every "
        "row is a claim with the check written in it.",
        "Settings are listed in docs/reproduce_hpcc.md.",
    ]
    if mode.quick:
        intro.append("This is a `--quick` run: a few hundred flows per run; the percentiles are noisy.")
    return intro


def paper():
    """The HPCC reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper("hpcc", ITEMS, ITEM_ORDER, QUICK, FULL, intro=_intro, required_files=("fabric.toml", "no_incast.csv"))


if __name__ == "__main__":  # python -m fctlab.reproduce.hpcc [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["hpcc"] + sys.argv[1:]))
