"""Reproduction of Montazeri et al., "Homa: A Receiver-Driven Low-Latency Transport Protocol
Using Network Priorities" (SIGCOMM 2018), section 5.2 at 80% load: slowdown by message size
under Homa, pFabric and PIAS, for three of its workloads (W3, Google all-RPC; W4, Facebook
Hadoop; W5, web search). See ``docs/reproduce_homa.md``.

The network is the authors' simulator's (PlatformLab/HomaSimulation,
``homaTransportConfig.ini``): 144 hosts, 10/40 Gbps, 8 priority levels, RTTbytes 10,000 B, and
for each workload its split of unscheduled and scheduled levels. Slowdown is a message's
completion time over its ideal alone on the idle fabric; the figures are its 99th percentile
and median in each tenth of the messages by size, as the paper's figures plot it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.homa import scenario_priorities
from .common import MATCH, NO_MATCH, Item, Runner, new_figure, save_figure
from .runner import Paper

ITEM_ORDER = [1, 2, 3]
#: item -> (fctlab's size distribution, the paper's name, the simulator's unscheduled levels)
WORKLOADS = {
    1: ("google_rpc", "W3 (Google all-RPC)", 4),
    2: ("fb_hadoop", "W4 (Facebook Hadoop)", 1),
    3: ("websearch", "W5 (web search)", 1),
}
SCHEMES = ("homa", "pfabric", "pias")
LABEL = {"homa": "Homa", "pfabric": "pFabric", "pias": "PIAS"}
BANDS = 8
RTT_BYTES = 10_000
LOAD = 0.8
_PRIORITY_KEYS = ["network.priority_bands"]
#: pFabric and PIAS as overrides of fabric.toml (Homa as the file is written)
OVERRIDES = {
    "pfabric": {
        "network__queue": "pfabric",
        "network__buffer": "36KB",
        "network__nic_buffer": "36KB",
        "transport__protocol": "pfabric",
        "unset": _PRIORITY_KEYS + ["transport.homa"],
    },
    "pias": {
        "network__buffer": "240pkt",
        "network__nic_buffer": "240pkt",
        "network__nic_queue": "switch",
        "network__priority_ecn_threshold": "65pkt",
        "network__priority_ecn_per_port": True,
        "transport__protocol": "pias",
        "transport__min_rto": "1ms",
        # the PIAS authors' web-search thresholds for 80% load (the Homa paper's are not known)
        "transport__pias__pias_thresholds": [f"{p * 1460}B" for p in (909, 1329, 1648, 1960, 2143, 2337, 2484)],
        "unset": ["transport.homa"],
    },
}
#: the claims' checks: Homa's 99th-percentile slowdown at most this multiple of pFabric's, and
#: below PIAS's, in at least this many of the ten size groups ("almost all message sizes")
ROUGHLY_EQUAL = 1.5
ALMOST_ALL = 8


@dataclass
class Mode:
    quick: bool
    #: messages per run, by item
    messages: dict

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


QUICK = Mode(True, {1: 3000, 2: 1000, 3: 300})
FULL = Mode(False, {1: 60000, 2: 20000, 3: 10000})


def by_size(flows, edges) -> list:
    """Per tenth of the messages by size (`edges`: the 11 size quantiles): the 99th-percentile
    and the median slowdown, and the messages in it."""
    if not flows["completed"].all():
        raise RuntimeError(f"{int((~flows['completed']).sum())} messages did not complete")
    size = flows["size_bytes"].to_numpy(float)
    slow = (flows["fct_s"] / flows["ideal_fct_s"]).to_numpy(float)
    out = []
    for i in range(10):
        lo, hi = edges[i], edges[i + 1]
        m = (size > lo) & (size <= hi) if i else (size <= hi)
        out.append(
            {
                "up_to_bytes": float(hi),
                "p99": float(np.quantile(slow[m], 0.99)) if m.any() else float("nan"),
                "median": float(np.median(slow[m])) if m.any() else float("nan"),
                "messages": int(m.sum()),
            }
        )
    return out


def _homa_overrides(r: Runner, workload: str, unscheduled: int, count: int) -> dict:
    """Homa's cutoffs for the run's own messages, by the paper's rule with the simulator's number
    of unscheduled levels; the other levels scheduled, all granted at once."""
    p = scenario_priorities(
        r.path("fabric.toml"),
        RTT_BYTES,
        BANDS,
        unscheduled,
        set=[f'workloads.0.sizes="{workload}"', f"workloads.0.count={count}"],
    )
    return {
        "transport__homa__homa_unscheduled_cutoffs": [f"{c}B" for c in p["cutoffs"]],
        "transport__homa__homa_overcommit": BANDS - p["unscheduled_bands"],
    }


def _runs(r: Runner, n: int, count: int) -> tuple:
    workload, _, unscheduled = WORKLOADS[n]
    common = {"workloads__0__sizes": workload, "workloads__0__count": count, "workloads__0__load": LOAD}
    flows = {}
    for s in SCHEMES:
        kw = {**common, **(_homa_overrides(r, workload, unscheduled, count) if s == "homa" else OVERRIDES[s])}
        flows[s] = r.run("fabric.toml", f"{workload} {s}", **kw).flows
    edges = np.quantile(flows["homa"]["size_bytes"].to_numpy(float), np.linspace(0, 1, 11))
    return {s: by_size(f, edges) for s, f in flows.items()}


def _claims(it: Item, r: Runner, n: int, res: dict) -> None:
    ex = r.expected
    h, pf, pi = ([g["p99"] for g in res[s]] for s in SCHEMES)
    near = sum(a <= ROUGHLY_EQUAL * b for a, b in zip(h, pf))
    it.rows.append(
        ex.row(
            f"item{n}.vs_pfabric",
            fctlab=f"{near} of 10; Homa/pFabric by size: " + ", ".join(f"{a / b:.2f}" for a, b in zip(h, pf)),
            verdict=MATCH if near >= ALMOST_ALL else NO_MATCH,
        )
    )
    below = sum(a < b for a, b in zip(h, pi))
    it.rows.append(
        ex.row(
            f"item{n}.vs_pias",
            fctlab=f"{below} of 10; Homa/PIAS by size: " + ", ".join(f"{a / b:.2f}" for a, b in zip(h, pi)),
            verdict=MATCH if below >= ALMOST_ALL else NO_MATCH,
        )
    )


def _figure(res: dict, out, name: str, title: str) -> None:
    fig = new_figure(10, 3.6)
    axes = fig.subplots(1, 2)
    ticks = [f"{g['up_to_bytes']:,.0f}" for g in res["homa"]]
    for ax, key in zip(axes, ("p99", "median")):
        for s in SCHEMES:
            ax.plot(range(10), [g[key] for g in res[s]], marker="o", label=LABEL[s])
        ax.set_yscale("log")
        ax.set_xticks(range(10), ticks, rotation=60, fontsize=7)
        ax.set_xlabel("message size, up to (B), by tenths of the messages")
        ax.set_title(f"{title}: {'99th percentile' if key == 'p99' else 'median'} slowdown", fontsize=9)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    axes[0].legend(fontsize=8)
    save_figure(fig, out / name)


def _item(n: int):
    workload, paper_name, unscheduled = WORKLOADS[n]

    def item(r: Runner, mode: Mode, out) -> Item:
        count = mode.messages[n]
        it = r.new_item(
            n,
            f"`fabric.toml` (144 hosts, 10/40 Gbps) with {paper_name} messages (`{workload}`), {count} Poisson "
            f"arrivals at load {LOAD:g}; Homa ({unscheduled} unscheduled levels, {BANDS - unscheduled} scheduled), "
            "pFabric and PIAS on the same messages (seed 1)",
        )
        res = _runs(r, n, count)
        it.numbers = res
        _claims(it, r, n, res)
        _figure(res, out, f"homa_item{n}.png", paper_name)
        it.figures.append((f"homa_item{n}.png", f"Slowdown by message size, {paper_name}, load {LOAD:g}"))
        it.explanation.append(
            "99th-percentile slowdown by tenth of the messages (smallest first): "
            + "; ".join(f"{LABEL[s]} " + ", ".join(f"{g['p99']:.2f}" for g in res[s]) for s in SCHEMES)
            + "."
        )
        return it

    return item


ITEMS: dict = {n: _item(n) for n in WORKLOADS}


def _intro(mode: Mode) -> list:
    intro = [
        "Items 1 to 3 run three of the paper's five workloads at 80% load on the authors' simulated network "
        "(`scenarios/papers/homa/fabric.toml`) under Homa, pFabric and PIAS, with fewer messages than the paper "
        "(its runs are long enough for the 99th percentile of each of its size groups; these are a reduced scale). "
        "The paper's figures are not available to fctlab in numbers; its abstract states the finding, so every row "
        "is a claim with the check written in it. pHost and NDP are not run; W1 and W2 have no size table here.",
        "Settings are listed in docs/reproduce_homa.md.",
    ]
    if mode.quick:
        intro.append("This is a `--quick` run: a few thousand messages per workload at most; the tails are noisy.")
    return intro


def paper():
    """The Homa reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper("homa", ITEMS, ITEM_ORDER, QUICK, FULL, intro=_intro, required_files=("fabric.toml",))


if __name__ == "__main__":  # python -m fctlab.reproduce.homa [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["homa"] + sys.argv[1:]))
