"""Reproduction of Handley et al., "Re-architecting datacenter networks and stacks for low
latency and high performance" (NDP, SIGCOMM 2017), section 6.1: the permutation of Fig. 14
(per-flow throughput of long-running connections on a 432-node FatTree, NDP against DCTCP over
ECMP, with DCTCP sprayed beside them) and the incast of Fig. 16 (the last response's
completion time against the number of servers replying 450 KB each, NDP against DCTCP). See
``docs/reproduce_ndp.md``.

The paper's text is the authors' own copy (nets-cs-pub-ro/NDP, ``doc/ndp.pdf``); its figures
are not available in numbers, so every row is a finding of its text with the check written in
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import MATCH, NO_MATCH, Item, Runner, new_figure, save_figure
from .runner import Paper

ITEM_ORDER = [1, 2]
LINK_BPS = 10e9
#: NDP's data packets on the wire: 9000 B of payload and its 64-byte header
WIRE_BYTES = 9064
RESPONSE_BYTES = 450_000

#: DCTCP as the paper runs it beside NDP: 200-packet output queues marking at 30 packets
#: (section 6.1), over per-flow ECMP; hosts' own queues of 200 packets. Its minimum RTO is not
#: stated: 1 ms, chosen (docs/reproduce_ndp.md).
DCTCP = {
    "network__queue": "ecn",
    "network__ecn_threshold": "30pkt",
    "network__buffer": "200pkt",
    "network__nic_queue": "droptail",
    "network__nic_buffer": "200pkt",
    "network__load_balancing": "ecmp",
    "transport__protocol": "dctcp",
    "transport__min_rto": "1ms",
    "unset": ["network.trim_threshold", "transport.ndp"],
}
#: the schemes, as overrides of the scenario files (NDP as they are written)
SCHEMES = {
    "ndp": {},
    "dctcp": DCTCP,
    # beside the paper's: DCTCP with every packet sprayed at random and RACK's reordering window
    "dctcp_spray": {**DCTCP, "network__load_balancing": "spray", "transport__rack": True},
}
LABEL = {"ndp": "NDP", "dctcp": "DCTCP (ECMP)", "dctcp_spray": "DCTCP (sprayed, RACK)"}
INCAST_SCHEMES = ("ndp", "dctcp")


@dataclass
class Mode:
    quick: bool
    #: the fat-tree's k (432 hosts at 12)
    k: int
    #: how long the permutation runs
    permutation_stop: str
    #: the numbers of servers replying in the incast
    servers: tuple

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


QUICK = Mode(True, 4, "5ms", (4, 8, 15))
FULL = Mode(False, 12, "20ms", (10, 50, 100, 200, 431))


def throughputs(flows, sim_time_s: float) -> np.ndarray:
    """Each long-running flow's throughput over its life, bits per second (its bytes delivered
    in order over the time from its start to the end of the run)."""
    d = flows.sort_values("flow_id")
    return (d["bytes_delivered"] * 8 / (sim_time_s - d["start_s"])).to_numpy(float)


def optimal_last(flows, servers: int) -> float:
    """The incast's optimal completion time: a response's ideal alone from the nearest server (its
    first packet across the fabric, then its packets back to back, then its last ACK back), plus
    the time the frontend's link takes for every other response's packets: the frontend's link
    busy from the first moment a packet can reach it until every packet has crossed it."""
    ideal = float(flows["ideal_fct_s"].min())
    packets = -(-RESPONSE_BYTES // (WIRE_BYTES - 64))
    return ideal + (servers - 1) * packets * WIRE_BYTES * 8 / LINK_BPS


def incast_servers(hosts: int, n: int, seed: int = 1) -> list:
    """`n` distinct backend servers other than the frontend h0, drawn at random (seeded)."""
    rng = np.random.default_rng([seed, 0x4D9])
    return [f"h{h}" for h in sorted(rng.choice(np.arange(1, hosts), n, replace=False))]


def _permutation(r: Runner, mode: Mode) -> dict:
    out = {}
    for s, ov in SCHEMES.items():
        run = r.run("permutation.toml", f"permutation {s}", network__k=mode.k, stop_time=mode.permutation_stop, **ov)
        thr = throughputs(run.flows, float(run.summary["sim_time_s"]))
        out[s] = {
            "mean_share": float(thr.mean() / LINK_BPS),
            "slowest_gbps": float(thr.min() / 1e9),
            "below_1gbps": int((thr < 1e9).sum()),
            "sorted_gbps": [round(float(x) / 1e9, 4) for x in np.sort(thr)],
        }
    return out


def _incast(r: Runner, mode: Mode) -> dict:
    hosts = mode.k**3 // 4
    res = {s: [] for s in INCAST_SCHEMES}
    for n in mode.servers:
        servers = incast_servers(hosts, n)
        for s in INCAST_SCHEMES:
            run = r.run(
                "incast.toml", f"incast {n} {s}", network__k=mode.k, workloads__0__servers=servers, **SCHEMES[s]
            )
            f = run.flows
            if not f["completed"].all():
                raise RuntimeError(
                    f"incast of {n} under {s}: {int((~f['completed']).sum())} responses did not complete"
                )
            last, first = float(f["fct_s"].max()), float(f["fct_s"].min())
            best = optimal_last(f, n)
            res[s].append(
                {
                    "servers": n,
                    "last_s": last,
                    "fastest_s": first,
                    "optimal_s": best,
                    "overhead": last / best - 1,
                    "spread": last / first,
                    "timeouts": int(f["timeouts"].sum()),
                    "retransmits": int(f["retransmits"].sum()),
                    "drops": int(run.links["drops"].sum()),
                    "trimmed": int(run.links["trimmed_packets"].sum()),
                }
            )
    return res


def _item1(r: Runner, mode: Mode, out) -> Item:
    hosts = mode.k**3 // 4
    it = r.new_item(
        1,
        f"`permutation.toml`: a k = {mode.k} FatTree ({hosts} hosts) of 10 Gb/s links, one long-running connection "
        f"from every host, {mode.permutation_stop} of simulated time; NDP as written, DCTCP over ECMP and DCTCP "
        "sprayed with RACK by overrides (seed 1)",
    )
    res = _permutation(r, mode)
    it.numbers = res
    ex = r.expected
    ndp, dctcp = res["ndp"], res["dctcp"]
    it.rows.append(
        ex.row(
            "item1.ndp_utilization",
            fctlab=f"{ndp['mean_share']:.1%}",
            verdict=MATCH if abs(ndp["mean_share"] - 0.92) <= 0.05 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item1.ndp_slowest",
            fctlab=f"{ndp['slowest_gbps']:.2f} Gb/s",
            verdict=MATCH if ndp["slowest_gbps"] >= 9.0 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item1.dctcp_utilization",
            fctlab=f"{dctcp['mean_share']:.1%}",
            verdict=MATCH if abs(dctcp["mean_share"] - 0.40) <= 0.05 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item1.dctcp_below_1gbps",
            fctlab=f"{dctcp['below_1gbps']} of {hosts} flows",
            verdict=MATCH if dctcp["below_1gbps"] > 0 else NO_MATCH,
        )
    )
    fig = new_figure(7, 3.8)
    ax = fig.subplots()
    for s in SCHEMES:
        ax.plot(res[s]["sorted_gbps"], label=LABEL[s])
    ax.set_xlabel("flow rank")
    ax.set_ylabel("throughput (Gb/s)")
    ax.set_ylim(0, 10.5)
    ax.set_title(f"Per-flow throughput, permutation, {hosts}-host FatTree", fontsize=9)
    ax.legend(fontsize=8)
    save_figure(fig, Path(out) / "ndp_item1.png")
    it.figures.append(("ndp_item1.png", "Per-flow throughput in increasing order (the paper's Fig. 14)"))
    it.explanation.append(
        "Mean utilization and slowest flow: "
        + "; ".join(
            f"{LABEL[s]} {v['mean_share']:.1%}, {v['slowest_gbps']:.2f} Gb/s, {v['below_1gbps']} flows under 1 Gb/s"
            for s, v in res.items()
        )
        + "."
    )
    return it


def _item2(r: Runner, mode: Mode, out) -> Item:
    hosts = mode.k**3 // 4
    it = r.new_item(
        2,
        f"`incast.toml`: on a k = {mode.k} FatTree ({hosts} hosts), "
        + ", ".join(str(n) for n in mode.servers)
        + " servers reply 450 KB each at once to h0; NDP as written, DCTCP over ECMP by overrides (seed 1)",
    )
    res = _incast(r, mode)
    it.numbers = res
    ex = r.expected
    mean_over = {s: float(np.mean([x["overhead"] for x in res[s]])) for s in INCAST_SCHEMES}
    spread = {s: max(x["last_s"] / x["fastest_s"] for x in res[s]) for s in INCAST_SCHEMES}
    it.rows.append(
        ex.row(
            "item2.ndp_vs_optimal",
            fctlab=f"{mean_over['ndp']:.1%} on average (" + ", ".join(f"{x['overhead']:.1%}" for x in res["ndp"]) + ")",
            verdict=MATCH if abs(mean_over["ndp"] - 0.01) <= 0.02 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item2.dctcp_vs_optimal",
            fctlab=f"{mean_over['dctcp']:.1%} on average ("
            + ", ".join(f"{x['overhead']:.1%}" for x in res["dctcp"])
            + ")",
            verdict=MATCH if abs(mean_over["dctcp"] - 0.05) <= 0.05 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item2.ndp_balance",
            fctlab=f"at most {spread['ndp']:.2f} times the fastest",
            verdict=MATCH if spread["ndp"] <= 1.2 else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item2.dctcp_spread",
            fctlab=f"up to {spread['dctcp']:.2f} times the fastest (NDP: {spread['ndp']:.2f})",
            verdict=MATCH if spread["dctcp"] >= 2.0 and spread["dctcp"] > spread["ndp"] else NO_MATCH,
        )
    )
    fig = new_figure(7, 3.8)
    ax = fig.subplots()
    for s in INCAST_SCHEMES:
        n = [x["servers"] for x in res[s]]
        ax.plot(n, [x["last_s"] * 1e3 for x in res[s]], marker="o", label=f"{LABEL[s]}, last")
        ax.plot(n, [x["fastest_s"] * 1e3 for x in res[s]], marker=".", ls=":", label=f"{LABEL[s]}, fastest")
    ax.plot(
        [x["servers"] for x in res["ndp"]],
        [x["optimal_s"] * 1e3 for x in res["ndp"]],
        color="grey",
        lw=0.8,
        label="optimal (last)",
    )
    ax.set_xlabel("servers replying")
    ax.set_ylabel("completion time (ms)")
    ax.set_title(f"Incast of 450 KB responses, {hosts}-host FatTree", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, Path(out) / "ndp_item2.png")
    it.figures.append(("ndp_item2.png", "Completion time of the last and fastest response (the paper's Fig. 16)"))
    it.explanation.append(
        "Slowest response over the fastest, by servers: "
        + "; ".join(
            f"{LABEL[s]} " + ", ".join(f"{x['servers']}: {x['spread']:.2f}" for x in res[s]) for s in INCAST_SCHEMES
        )
        + "."
    )
    it.explanation.append(
        "Drops, timeouts and retransmissions (trimmed packets), by servers: "
        + "; ".join(
            f"{LABEL[s]} "
            + ", ".join(
                f"{x['servers']}: {x['drops']}, {x['timeouts']}, {x['retransmits']} ({x['trimmed']})" for x in res[s]
            )
            for s in INCAST_SCHEMES
        )
        + "."
    )
    it.explanation.append(
        "Last response over the optimal, by servers: "
        + "; ".join(
            f"{LABEL[s]} " + ", ".join(f"{x['servers']}: {x['overhead']:+.1%}" for x in res[s]) for s in INCAST_SCHEMES
        )
        + "."
    )
    return it


ITEMS: dict = {1: _item1, 2: _item2}


def _intro(mode: Mode) -> list:
    intro = [
        "Items 1 and 2 run the paper's permutation (Fig. 14) and incast (Fig. 16) on its 432-node FatTree "
        "(`scenarios/papers/ndp/`), NDP against DCTCP over ECMP; the permutation also runs DCTCP with every packet "
        "sprayed and RACK's reordering window, the baseline spraying calls for. The paper's figures are not "
        "available to fctlab in numbers; its text states the findings, so every row is a claim with the check "
        "written in it.",
        "Settings are listed in docs/reproduce_ndp.md.",
    ]
    if mode.quick:
        intro.append(
            "This is a `--quick` run: a k = 4 FatTree (16 hosts) and short runs; the numbers are not the paper's scale."
        )
    return intro


def paper():
    """The NDP reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper(
        "ndp", ITEMS, ITEM_ORDER, QUICK, FULL, intro=_intro, required_files=("permutation.toml", "incast.toml")
    )


if __name__ == "__main__":  # python -m fctlab.reproduce.ndp [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["ndp"] + sys.argv[1:]))
