"""Reproduction of Vamanan, Hasan and Vijaykumar, "Deadline-aware datacenter TCP" (SIGCOMM
2012), its headline comparison at reduced scale: the fraction of missed deadlines against the
fan-in degree under D2TCP, DCTCP and D3, with long-lived background flows into the same
receiver. See ``docs/reproduce_d2tcp.md``.

The fan-in flows are those of the D3 benchmark (:mod:`.d3`: sizes uniform in [2 KB, 50 KB],
exponential deadlines with a mean of 20, 30 or 40 ms, one flow per sender starting within the
first millisecond), written as a trace file per run so that every protocol runs the same flows;
two long-lived flows from other hosts share the receiver's link with them.
"""

from __future__ import annotations

from .common import MATCH, NO_MATCH, Item, Runner
from .d3 import DEADLINES, FULL, LABEL, QUICK, Mode, fan_in, fan_in_figure
from .runner import Paper

ITEM_ORDER = [1, 2, 3]
SCHEMES = ("d2tcp", "dctcp", "d3")
OVERRIDES = {s: {"transport__protocol": s} for s in SCHEMES}


def _claims(it: Item, r: Runner, n: int, res: dict) -> None:
    ex = r.expected
    miss = {s: {k: 1.0 - v for k, v in res[s].items()} for s in SCHEMES}
    d2, ns = miss["d2tcp"], sorted(miss["d2tcp"])
    dc = miss["dctcp"]
    it.rows.append(
        ex.row(
            f"item{n}.vs_dctcp",
            fctlab=", ".join(f"{k}: {d2[k]:.3f} vs {dc[k]:.3f}" for k in ns),
            verdict=MATCH if all(d2[k] <= dc[k] for k in ns) and d2[ns[-1]] < dc[ns[-1]] else NO_MATCH,
        )
    )
    d3 = miss["d3"]
    it.rows.append(
        ex.row(
            f"item{n}.vs_d3",
            fctlab=", ".join(f"{k}: {d2[k]:.3f} vs {d3[k]:.3f}" for k in ns),
            verdict=MATCH if d2[ns[-1]] < d3[ns[-1]] else NO_MATCH,
        )
    )


def _item(n: int):
    mean_ms, name = DEADLINES[n]

    def item(r: Runner, mode: Mode, out) -> Item:
        it = r.new_item(
            n,
            f"`fanin.toml` (a star of 1 Gbps links, 25 us each, ECN marking at 20 packets) with "
            f"{', '.join(map(str, mode.senders))} senders of one flow each into h0 beside two long-lived flows, "
            f"sizes uniform in [2 KB, 50 KB], deadlines exponential with mean {mean_ms} ms; D2TCP, DCTCP and D3 on "
            f"the same flows; seeds {', '.join(map(str, mode.seeds))}",
        )
        res = fan_in(r, "fanin.toml", OVERRIDES, mode, mean_ms / 1000, f"item{n}", out)
        it.numbers = {s: {str(k): 1.0 - v for k, v in series.items()} for s, series in res.items()}
        _claims(it, r, n, res)
        fig = f"d2tcp_item{n}.png"
        fan_in_figure(
            res, out, fig, f"{name} deadlines (mean {mean_ms} ms)", "missed deadlines (fraction)", key=lambda v: 1.0 - v
        )
        it.figures.append((fig, f"Missed deadlines against the fan-in degree, {name} deadlines"))
        it.explanation.append(
            "Fraction of flows missing their deadline by fan-in: "
            + "; ".join(
                f"{LABEL[s]} " + ", ".join(f"{k}: {1.0 - v:.3f}" for k, v in sorted(res[s].items())) for s in SCHEMES
            )
            + "."
        )
        return it

    return item


ITEMS: dict = {n: _item(n) for n in DEADLINES}


def _intro(mode: Mode) -> list:
    intro = [
        "Items 1 to 3 run a fan-in with deadlines on one 1 Gbps star (`scenarios/papers/d2tcp/fanin.toml`) beside "
        "two long-lived flows, for tight, moderate and lax deadlines, under D2TCP, DCTCP and D3 on the same flows. "
        "The paper's figures are not available to fctlab in numbers, so every row is a claim with its check written "
        "in it.",
        "Settings are listed in docs/reproduce_d2tcp.md.",
    ]
    if mode.quick:
        intro.append("This is a `--quick` run: one seed and three fan-in degrees.")
    return intro


def paper():
    """The D2TCP reproduction for :func:`fctlab.reproduce.runner.run_paper`."""
    return Paper("d2tcp", ITEMS, ITEM_ORDER, QUICK, FULL, intro=_intro, required_files=("fanin.toml",))


if __name__ == "__main__":  # python -m fctlab.reproduce.d2tcp [--quick] [--out DIR] [--items ...]
    import sys

    from . import main_reproduce

    sys.exit(main_reproduce(["d2tcp"] + sys.argv[1:]))
