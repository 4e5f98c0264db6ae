"""Reproduction of Wilson, Ballani, Karagiannis and Rowstron, "Better never than late: meeting
deadlines in datacenter networks" (SIGCOMM 2011), its headline benchmark at reduced scale: the
fraction of flows that meet their deadline ("application throughput") against the number of
senders into one receiver, under D3, RCP and TCP, for tight, moderate and lax deadlines. See
``docs/reproduce_d3.md``.

Every sender sends one flow to the receiver, starting at a random time within the first
millisecond; sizes are uniform in [2 KB, 50 KB] and deadlines exponential with a mean of
20, 30 or 40 ms (the paper's benchmark, section 6). The flows of a run are written as a trace
file (``fanin.toml`` replays it) so that every protocol runs the same flows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import MATCH, NO_MATCH, Item, Runner, new_figure, save_figure
from .runner import Paper

#: item -> (mean deadline in ms, the paper's name for it)
DEADLINES = {1: (20, "tight"), 2: (30, "moderate"), 3: (40, "lax")}
ITEM_ORDER = [1, 2, 3]
SCHEMES = ("d3", "rcp", "tcp")
LABEL = {"d3": "D3", "rcp": "RCP", "tcp": "TCP", "d2tcp": "D2TCP", "dctcp": "DCTCP"}
SIZE_MIN, SIZE_MAX = 2_000, 50_000
#: the window in which the senders start, seconds
START_WINDOW_S = 1e-3
#: the share of flows that must meet their deadline for a number of senders to count as
#: supported (the paper's threshold)
SUPPORTED = 0.99


@dataclass
class Mode:
    quick: bool
    senders: tuple
    seeds: tuple

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


QUICK = Mode(True, (5, 20, 40), (1,))
FULL = Mode(False, (5, 10, 15, 20, 25, 30, 35, 40), tuple(range(1, 21)))


def trace_rows(n: int, mean_deadline_s: float, seed: int, first_host: int = 1) -> list:
    """The flows of one run: `n` senders h<first_host>.. to h0, one flow each, sizes uniform in
    [SIZE_MIN, SIZE_MAX] bytes, deadlines exponential with mean `mean_deadline_s`, start times
    uniform within START_WINDOW_S; rows (start_s, src, dst, size_bytes, deadline_s) by start."""
    rng = np.random.default_rng(seed)
    starts = rng.uniform(0.0, START_WINDOW_S, n)
    sizes = rng.integers(SIZE_MIN, SIZE_MAX + 1, n)
    deadlines = rng.exponential(mean_deadline_s, n)
    rows = [
        (float(starts[i]), f"h{first_host + i}", "h0", int(sizes[i]), max(float(deadlines[i]), 1e-6)) for i in range(n)
    ]
    return sorted(rows)


def write_trace(path: Path, rows: list) -> Path:
    """`rows` (from :func:`trace_rows`) as a trace file of the `trace` workload."""
    lines = ["start_s,src,dst,size_bytes,deadline_s"]
    lines += [f"{s:.9f},{src},{dst},{size},{d:.9f}" for s, src, dst, size, d in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def met_fraction(flows) -> float:
    """The share of the flows with a deadline that completed within it."""
    f = flows[flows["deadline_s"].notna()]
    if len(f) == 0:
        return float("nan")
    ok = f["completed"] & (f["fct_s"] <= f["deadline_s"])
    return float(ok.sum()) / len(f)


def fan_in(r: Runner, scenario: str, schemes: dict, mode: Mode, mean_deadline_s: float, tag: str, out) -> dict:
    """scheme -> number of senders -> mean over seeds of the share of flows that met their
    deadline: each scheme (`schemes`: scheme -> scenario overrides) on the same flows."""
    res: dict = {s: {} for s in schemes}
    traces = Path(out) / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    for n in mode.senders:
        per: dict = {s: [] for s in schemes}
        for seed in mode.seeds:
            rows = trace_rows(n, mean_deadline_s, seed)
            path = write_trace(traces / f"{tag}_n{n}_seed{seed}.csv", rows).resolve()
            for s, kw in schemes.items():
                flows = r.run(scenario, f"{tag} {s} {n} senders seed {seed}", workloads__0__file=str(path), **kw).flows
                per[s].append(met_fraction(flows))
        for s in schemes:
            res[s][n] = float(np.mean(per[s]))
    return res


def most_supported(series: dict) -> int:
    """The largest number of senders up to which every run met SUPPORTED (0: none)."""
    best = 0
    for n in sorted(series):
        if series[n] < SUPPORTED:
            break
        best = n
    return best


def fan_in_figure(res: dict, out, name: str, title: str, ylabel: str, key=lambda v: v) -> None:
    fig = new_figure(6, 3.6)
    ax = fig.subplots()
    for s, series in res.items():
        ns = sorted(series)
        ax.plot(ns, [key(series[n]) for n in ns], marker="o", label=LABEL.get(s, s))
    ax.set_xlabel("number of senders")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    save_figure(fig, out / name)


OVERRIDES = {
    "d3": {"transport__protocol": "d3"},
    "rcp": {"transport__protocol": "rcp"},
    "tcp": {"transport__protocol": "tcp"},
}


def _claims(it: Item, r: Runner, n: int, res: dict) -> None:
    ex = r.expected
    d3 = res["d3"]
    for other in ("tcp", "rcp"):
        o = res[other]
        ns = sorted(d3)
        at_least = all(d3[k] >= o[k] for k in ns)
        above_at_most = d3[ns[-1]] > o[ns[-1]]
        it.rows.append(
            ex.row(
                f"item{n}.vs_{other}",
                fctlab=", ".join(f"{k}: {d3[k]:.3f} vs {o[k]:.3f}" for k in ns),
                verdict=MATCH if at_least and above_at_most else NO_MATCH,
            )
        )
    sup = {s: most_supported(res[s]) for s in SCHEMES}
    it.rows.append(
        ex.row(
            f"item{n}.supported",
            fctlab=", ".join(f"{LABEL[s]} {sup[s]}" for s in SCHEMES),
            verdict=MATCH if sup["d3"] > max(sup["rcp"], sup["tcp"]) else NO_MATCH,
        )
    )


def _item(n: int):
    mean_ms, name = DEADLINES[n]

    def item(r: Runner, mode: Mode, out) -> Item:
        it = r.new_item(
            n,
            f"`fanin.toml` (a star of 1 Gbps links, 25 us each) with {', '.join(map(str, mode.senders))} senders of "
            f"one flow each into h0, sizes uniform in [2 KB, 50 KB], deadlines exponential with mean {mean_ms} ms, "
            f"starting within 1 ms; D3, RCP and TCP on the same flows; seeds {', '.join(map(str, mode.seeds))}",
        )
        res = fan_in(r, "fanin.toml", OVERRIDES, mode, mean_ms / 1000, f"item{n}", out)
        it.numbers = {s: {str(k): v for k, v in series.items()} for s, series in res.items()}
        _claims(it, r, n, res)
        fig = f"d3_item{n}.png"
        fan_in_figure(res, out, fig, f"{name} deadlines (mean {mean_ms} ms)", "application throughput")
        it.figures.append((fig, f"Application throughput against the number of senders, {name} deadlines"))
        it.explanation.append(
            "Share of flows meeting their deadline by number of senders: "
            + "; ".join(f"{LABEL[s]} " + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(res[s].items())) for s in SCHEMES)
            + "."
        )
        return it

    return item


ITEMS: dict = {n: _item(n) for n in DEADLINES}


def _intro(mode: Mode) -> list:
    intro = [
        "Items 1 to 3 run the paper's deadline benchmark on one 1 Gbps star (`scenarios/papers/d3/fanin.toml`): "
        "senders into one receiver with tight, moderate and lax deadlines, under D3, RCP and TCP on the same flows. "
        "The paper's figures are not available to fctlab in numbers, so every row is a claim with its check written "
        "in it.",
        "Settings are listed in docs/reproduce_d3.md.",
    ]
    if mode.quick:
        intro.append("This is a `--quick` run: one seed and three numbers of senders.")
    return intro


def paper():
    """The D3 reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper("d3", ITEMS, ITEM_ORDER, QUICK, FULL, intro=_intro, required_files=("fanin.toml",))


if __name__ == "__main__":  # python -m fctlab.reproduce.d3 [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["d3"] + sys.argv[1:]))
