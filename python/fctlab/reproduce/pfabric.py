"""Reproduction of Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport"
(SIGCOMM 2013), section 5: normalized flow completion times against load on the paper's
144-host leaf-spine, with web-search (item 1) and data-mining (item 2) flows, under pFabric,
DCTCP and TCP over DropTail. See ``docs/reproduce_pfabric.md``.

A flow's normalized FCT is its FCT over its ideal one (the best it could have on the idle
fabric: fctlab's ``slowdown`` column). Each scheme runs the same flows (one scenario, one
seed) at each load.
"""

from __future__ import annotations

import numpy as np

from .._extras import extra
from .common import MATCH, NO_MATCH, Item, LoadMode, Runner, new_figure, runs_over_load, save_figure, series
from .runner import Paper

ITEM_ORDER = [1, 2]
WORKLOADS = {1: "websearch", 2: "datamining"}
SCHEMES = ("pfabric", "dctcp", "tcp")
LABEL = {"pfabric": "pFabric", "dctcp": "DCTCP", "tcp": "TCP-DropTail"}
#: each scheme as overrides of fabric.toml (TCP over DropTail as the file is written)
OVERRIDES = {
    # pFabric's ports (36 KB, NICs too) and hosts with the paper's parameters (their defaults)
    "pfabric": {"network__queue": "pfabric", "network__buffer": "36KB", "transport__protocol": "pfabric"},
    # DCTCP marking at 65 packets at switches and NICs (the PIAS authors' setting at 10 Gbps)
    "dctcp": {
        "network__queue": "ecn",
        "network__ecn_threshold": "65pkt",
        "network__nic_queue": "switch",
        "transport__protocol": "dctcp",
    },
    "tcp": {},
}
SMALL_B = 100_000
LARGE_B = 10_000_000
#: the checks of the claims: pFabric's small flows within this of the ideal, its large flows
#: within this factor of DCTCP's
NEAR_IDEAL = 1.5
COMPARABLE = 1.25


QUICK = LoadMode(True, (0.4, 0.8), 400)
FULL = LoadMode(False, (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), 5000)


def stats(flows) -> dict:
    """Normalized FCTs of one run: flows under 100 KB (mean, 99th percentile), over 10 MB
    (mean), all (mean); the counts of each group."""
    if not flows["completed"].all():
        raise RuntimeError(f"{int((~flows['completed']).sum())} flows did not complete")
    nfct = flows["fct_s"] / flows["ideal_fct_s"]
    small, large = flows["size_bytes"] < SMALL_B, flows["size_bytes"] > LARGE_B
    return {
        "small_mean": float(nfct[small].mean()),
        "small_p99": float(nfct[small].quantile(0.99)),
        "large_mean": float(nfct[large].mean()) if large.any() else float("nan"),
        "all_mean": float(nfct.mean()),
        "small_flows": int(small.sum()),
        "large_flows": int(large.sum()),
    }


def _runs(r: Runner, mode: LoadMode, workload: str) -> dict:
    """scheme -> load -> stats, every scheme on the same flows."""
    return runs_over_load(r, "fabric.toml", OVERRIDES, mode, workload, stats)


def _series(res: dict, scheme: str, key: str) -> str:
    return series(res, scheme, key)


def _claims(it: Item, r: Runner, n: int, res: dict, loads: tuple) -> None:
    ex, pf, dc, tcp = r.expected, res["pfabric"], res["dctcp"], res["tcp"]
    near = all(pf[x]["small_mean"] <= NEAR_IDEAL for x in loads)
    it.rows.append(
        ex.row(
            f"item{n}.small_near_ideal",
            fctlab=_series(res, "pfabric", "small_mean"),
            verdict=MATCH if near else NO_MATCH,
        )
    )
    below = all(pf[x]["small_mean"] < min(dc[x]["small_mean"], tcp[x]["small_mean"]) for x in loads)
    it.rows.append(
        ex.row(
            f"item{n}.small_below",
            fctlab=f"DCTCP {_series(res, 'dctcp', 'small_mean')}; TCP {_series(res, 'tcp', 'small_mean')}",
            verdict=MATCH if below else NO_MATCH,
        )
    )
    tail = all(pf[x]["small_p99"] < dc[x]["small_p99"] for x in loads)
    it.rows.append(
        ex.row(
            f"item{n}.small_tail",
            fctlab=f"pFabric {_series(res, 'pfabric', 'small_p99')}; DCTCP {_series(res, 'dctcp', 'small_p99')}",
            verdict=MATCH if tail else NO_MATCH,
        )
    )
    have = [x for x in loads if np.isfinite(pf[x]["large_mean"]) and np.isfinite(dc[x]["large_mean"])]
    large = bool(have) and all(pf[x]["large_mean"] <= COMPARABLE * dc[x]["large_mean"] for x in have)
    it.rows.append(
        ex.row(
            f"item{n}.large",
            fctlab=f"pFabric {_series(res, 'pfabric', 'large_mean')}; DCTCP {_series(res, 'dctcp', 'large_mean')}"
            + ("" if have else " (no flow over 10 MB)"),
            verdict=MATCH if large else NO_MATCH,
        )
    )


def _figure(res: dict, loads: tuple, out, name: str, workload: str) -> None:
    with extra("plot"):
        from matplotlib.ticker import (
            FormatStrFormatter,
            LogLocator,
            NullFormatter,
        )  # lazy: matplotlib costs 300 ms of start-up

    fig = new_figure(10, 3.4)
    axes = fig.subplots(1, 3)
    for ax, key, title in zip(
        axes,
        ("small_mean", "small_p99", "large_mean"),
        ("(0, 100 KB]: average", "(0, 100 KB]: 99th percentile", "(10 MB, inf): average"),
    ):
        for s in SCHEMES:
            ax.plot(loads, [res[s][x][key] for x in loads], marker="o", label=LABEL[s])
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("load")
        if key.startswith("small"):  # from near 1 to tens: a log scale
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel(f"normalized FCT ({workload})")
    axes[0].legend(fontsize=8)
    save_figure(fig, out / name)


def _item(n: int):
    workload = WORKLOADS[n]

    def item(r: Runner, mode: LoadMode, out) -> Item:
        it = r.new_item(
            n,
            f"`fabric.toml` (144 hosts, 9 x 16, 4 spines, 10/40 Gbps, 1.5 us links) with {workload} flows, "
            f"{mode.flows} Poisson arrivals per run at loads {', '.join(f'{x:g}' for x in mode.loads)}; pFabric, "
            "DCTCP (K = 65 packets, 240-packet buffers) and TCP over DropTail (240 packets) on the same flows (seed 1)",
        )
        res = _runs(r, mode, workload)
        it.numbers = {s: {str(x): v for x, v in res[s].items()} for s in SCHEMES}
        _claims(it, r, n, res, mode.loads)
        _figure(res, mode.loads, out, f"pfabric_item{n}.png", workload)
        it.figures.append(
            (
                f"pfabric_item{n}.png",
                f"Normalized FCT against load, {workload}: flows under 100 KB (average, 99th percentile) and over 10 MB",
            )
        )
        counts = res["pfabric"][mode.loads[0]]
        it.explanation.append(
            f"Each run has {counts['small_flows']} flows under 100 KB and {counts['large_flows']} over 10 MB. "
            "Average normalized FCT of all flows: "
            + "; ".join(f"{LABEL[s]} {_series(res, s, 'all_mean')}" for s in SCHEMES)
            + "."
        )
        return it

    return item


ITEMS: dict = {n: _item(n) for n in WORKLOADS}


def _intro(mode: LoadMode) -> list:
    intro = [
        "Items 1 and 2 rerun section 5's fabric from `scenarios/papers/pfabric/fabric.toml` under pFabric, DCTCP and "
        "TCP over DropTail, with the web-search and data-mining flows. The paper's findings are stated in words and "
        "figures, so every row is a claim with the check written in it. PDQ and the paper's ideal scheduler are not "
        "run; a normalized FCT of 1 is the ideal of each flow alone on the fabric.",
        "Parameters the paper does not give (link delays, the TCP and DCTCP buffers and timeouts) are chosen and "
        "listed in docs/reproduce_pfabric.md.",
    ]
    if mode.quick:
        intro.append(
            f"This is a `--quick` run: {QUICK.flows} flows per run at loads {', '.join(map(str, QUICK.loads))} instead of "
            f"{FULL.flows} at {FULL.loads[0]:g} to {FULL.loads[-1]:g}; few flows over 10 MB, so the large-flow row is noisy."
        )
    return intro


def paper():
    """The pFabric reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper(
        "pfabric",
        ITEMS,
        ITEM_ORDER,
        QUICK,
        FULL,
        intro=_intro,
        required_files=("fabric.toml",),
    )


if __name__ == "__main__":  # python -m fctlab.reproduce.pfabric [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["pfabric"] + sys.argv[1:]))
