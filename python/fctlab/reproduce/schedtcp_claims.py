"""Claims of the SCHED_TCP paper beyond its Table 2: items 8 to 11 of ``fctlab reproduce schedtcp``.

Item 8 runs the mu-rule (priority by class, Proposition 2's last case) against SRPT and the
reverse order; item 9 the "only if" of Proposition 1 (a pair that takes more than its
connections' share changes what another pair gets); item 10 Fig. 7 as a distribution and the
per-flow gains against tcp as a CDF; item 11 Table 2 with CUBIC as the underlying TCP. The
items are registered in :data:`fctlab.reproduce.schedtcp.ITEMS`; see
``docs/reproduce_schedtcp.md``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats import interval
from .common import MATCH, NO_MATCH, NOT_MEASURED, Item, Runner, fmt_pct, fmt_time, new_figure, save_figure
from .schedtcp_runs import LABEL, POLICIES, Mode, _flows, _table_rows, _time_weighted_active, compare

#: changes below this (relative) count as none, as everywhere in the reproductions
NO_CHANGE = 0.02
#: item 8's arrival window per run (quick, full): at the classes' arrival rates about 470 and
#: 2,350 flows, of the order of item 1's flows per run
CLASS_WINDOW = {True: "60s", False: "300s"}
#: item 8's policies: scheduler overrides
CLASS_POLICIES = {
    "tcp": {},
    "mu": {
        "transport__scheduler": "priority",
        "transport__priority_tags": ["short"],
        "transport__priority_then": "las",
    },
    "reverse": {
        "transport__scheduler": "priority",
        "transport__priority_tags": ["long"],
        "transport__priority_then": "las",
    },
    "srpt": {"transport__scheduler": "srpt"},
}
CLASS_LABEL = {"tcp": "tcp", "mu": "mu-rule", "reverse": "long class first", "srpt": "SRPT"}
#: item 10's quantiles of the number of flows in progress
QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99)
#: item 10: a flow whose transfer-time ratio to tcp is within this of 1 is equal (the ratio's
#: counterpart of item 1's 1 ms)
RATIO_EQUAL = 0.01


# =========================================================================== item 8


def _class_runs(r: Runner, mode: Mode, policy: str) -> list:
    w = CLASS_WINDOW[mode.quick]
    out = []
    for seed in range(1, mode.runs + 1):
        res = r.run(
            "pair_classes.toml",
            f"{CLASS_LABEL[policy]} seed {seed}",
            seed=seed,
            workloads__0__until=w,
            workloads__1__until=w,
            **CLASS_POLICIES[policy],
        )
        out.append(res.flows)
    return out


def _mean_in_progress(f: pd.DataFrame) -> float:
    """The time-average number of flows in progress over the run (Little: the arrival rate
    times the mean transfer time)."""
    span = float(f["finish_s"].max() - f["start_s"].min())
    return float(f["fct_s"].sum() / span) if span > 0 else float("nan")


def _below(a: list, b: list, margin: float = -NO_CHANGE) -> tuple:
    """Per run, (a - b) / b of the mean number in progress: (mean, half-width, below), where
    below is the mean change under `margin`."""
    m, h = interval([(_mean_in_progress(x) - _mean_in_progress(y)) / _mean_in_progress(y) for x, y in zip(a, b)])
    return m, h, bool(np.isfinite(m) and m < margin)


def item8(r: Runner, mode: Mode, out) -> Item:
    it = r.new_item(
        8,
        f"scenario `pair_classes.toml`: item 1's pair with two classes of Pareto flows (alpha 3): 'short' (mean 500 kB, "
        f"load 0.3) and 'long' (mean 5 MB, load 0.6), total load 0.9 as the paper's; {mode.runs} seeds, Poisson arrivals "
        f"over {CLASS_WINDOW[mode.quick]} per seed. Policies on the same arrivals: tcp; the mu-rule (`scheduler = "
        '"priority"`, `priority_tags = ["short"]`: the class of the smaller mean first); the reverse order '
        '(`priority_tags = ["long"]`); SRPT. Within a class the mu-rule knows no sizes, so `priority_then = "las"` '
        "(the layer's size-unaware rank). Sizes within a class are Lomax, as in the paper's experiment, so the classical "
        "conditions of the c-mu rule (exponential sizes within a type) do not hold: the bullet is tested as stated. Compared: the mean number of flows in progress per run (its transfer times "
        f"summed over the run's span), per-run relative differences, mean ± 95% half-width; 'below' is under "
        f"-{NO_CHANGE:.0%}, 'at or below' under +{NO_CHANGE:.0%}.",
    )
    runs = {p: _class_runs(r, mode, p) for p in CLASS_POLICIES}
    ex = r.expected
    checks = (
        ("item8.mu_below_tcp", "mu", "tcp", -NO_CHANGE),
        ("item8.mu_below_reverse", "mu", "reverse", -NO_CHANGE),
        ("item8.srpt_at_or_below_mu", "srpt", "mu", NO_CHANGE),
    )
    it.numbers = {"mean_in_progress": {p: [_mean_in_progress(f) for f in v] for p, v in runs.items()}}
    for rid, a, b, margin in checks:
        m, h, ok = _below(runs[a], runs[b], margin)
        it.numbers[rid] = [m, h]
        it.rows.append(
            ex.row(
                rid,
                fctlab=f"{CLASS_LABEL[a]} against {CLASS_LABEL[b]}: {fmt_pct(m)}"
                + (f" ± {fmt_pct(h, False)}" if np.isfinite(h) else ""),
                verdict=(MATCH if ok else NO_MATCH) if np.isfinite(m) else NOT_MEASURED,
                samples=mode.runs,
                unit="run",
            )
        )
    by_class = {
        p: {
            c: float(np.mean(np.concatenate([f[f["tag"] == c]["fct_s"].to_numpy() for f in v])))
            for c in ("short", "long")
        }
        for p, v in runs.items()
    }
    it.numbers["mean_fct_by_class_s"] = by_class
    it.explanation.append(
        "Mean transfer time by class (short / long): "
        + "; ".join(f"{CLASS_LABEL[p]} {fmt_time(v['short'])} / {fmt_time(v['long'])}" for p, v in by_class.items())
        + ". The mu-rule serves the short class at once and leaves the long class about where tcp leaves it; "
        "SRPT also orders the flows inside each class, which the mu-rule cannot without sizes."
    )
    return it


# =========================================================================== item 9


def _sample_rate(res, fid: int, t1: float, t0: float = 1.0) -> float:
    c = res.cwnd[(res.cwnd["flow_id"] == fid) & (res.cwnd["time_s"] >= t0) & (res.cwnd["time_s"] <= t1)]
    return float(c["rate_bps"].mean())


def _pair_done(res) -> float:
    f = res.flows
    return float(f[f["tag"].isin(["long", "short"])]["finish_s"].max())


WEIGHTED = {
    "transport__scheduler": "srpt",
    **{f"flows__{i}__protocol": "atcp" for i in (0, 1)},
    **{f"flows__{i}__atcp__weight_function": "fixed" for i in (0, 1)},
    **{f"flows__{i}__atcp__weight": 4.0 for i in (0, 1)},
}


def item9(r: Runner, mode: Mode, out) -> Item:
    it = r.new_item(
        9,
        "item 4's `competing.toml` (Fig. 6: long and short through the pair, sample through plain tcp, 2.8 Mbps, "
        "50 ms of round trip). The pair under tcp; under SRPT (the layer: the same connections, the same windows); "
        "under SRPT with the pair's connections opening their windows four times as fast (ATCP's fixed weight 4, "
        "four segments per round trip in congestion avoidance instead of one); and `competing_parallel.toml`, "
        "the same two flows each sent over four connections, under SRPT. Sample's throughput is its mean delivery "
        "rate (1 s samples) from 1 s until the pair's last byte under tcp or under the variant, whichever comes "
        f"first, against tcp's over the same time; a change below {NO_CHANGE:.0%} is none.",
    )
    tcp = r.run("competing.toml", "tcp")
    variants = {
        "srpt": (r.run("competing.toml", "srpt", transport__scheduler="srpt"), 2),
        "windows": (r.run("competing.toml", "SRPT, windows x4", **WEIGHTED), 2),
        "parallel": (r.run("competing_parallel.toml", "SRPT, 4 connections per flow", transport__scheduler="srpt"), 0),
    }
    ex = r.expected
    it.numbers = {"pair_done_tcp_s": _pair_done(tcp)}
    for name, (res, fid) in variants.items():
        t1 = min(_pair_done(tcp), _pair_done(res))
        base, new = _sample_rate(tcp, 2, t1), _sample_rate(res, fid, t1)
        ch = (new - base) / base if base > 0 else float("nan")
        it.numbers[name] = {"sample_bps": new, "tcp_sample_bps": base, "change": ch, "pair_done_s": _pair_done(res)}
        changed = abs(ch) >= NO_CHANGE
        ok = (not changed) if name == "srpt" else changed
        it.rows.append(
            ex.row(
                f"item9.{name}",
                fctlab=f"{new / 1e6:.3f} against {base / 1e6:.3f} Mbps ({fmt_pct(ch)}); the pair's last byte at "
                f"{_pair_done(res):.1f} s against {_pair_done(tcp):.1f} s",
                verdict=(MATCH if ok else NO_MATCH) if np.isfinite(ch) else NOT_MEASURED,
            )
        )
    it.explanation.append(
        "The pair's aggregate rate is what the other pairs see: the layer changes whose bytes the connections "
        "carry and leaves their number and windows to TCP, so sample's rate does not move; more connections, or "
        "windows that grow faster than TCP's, take a larger share of the bottleneck, and sample's rate falls while "
        "the pair is active (and the pair finishes sooner)."
    )
    return it


# =========================================================================== item 10


def _ratios(tcp: list, other: list) -> np.ndarray:
    return np.concatenate([o["fct_s"].to_numpy() / t["fct_s"].to_numpy() for t, o in zip(tcp, other)])


def _active_order(active: dict) -> tuple:
    """Whether the quantiles of the number of flows in progress order as Fig. 7: SRPT and FAIR
    at or below LAS, LAS at or below tcp at every quantile, and each strictly below at one."""
    q = {p: np.quantile(a, QUANTILES) for p, a in active.items()}
    le = all(np.all(q[p] <= q["las"]) for p in ("srpt", "fair")) and np.all(q["las"] <= q["tcp"])
    strict = all(np.any(q[p] < q["las"]) for p in ("srpt", "fair")) and np.any(q["las"] < q["tcp"])
    return bool(le and strict), q


def item10(r: Runner, mode: Mode, out) -> Item:
    it = r.new_item(
        10,
        "item 1's runs (`pair.toml`, the ideal gtcp). Fig. 7: the number of flows in progress sampled every 10 ms, "
        f"its quantiles {', '.join(f'{q:g}' for q in QUANTILES)} per policy. Per-flow gains: each flow's transfer time "
        "under the policy over its own under tcp (same seed), pooled over the runs; Table 2's shares bound this "
        "ratio's quantiles: more than half of the flows faster under every policy puts the median below 1, fewer "
        "than 10% slower (SRPT 3.2%, FAIR 2.4%) puts the 90th percentile at 1 or below, and LAS's 25.6% slower puts "
        f"its 90th percentile above 1. A ratio within {RATIO_EQUAL:.0%} of 1 counts as 1.",
    )
    runs = {p: _flows(r, mode, p) for p in ("tcp", *POLICIES)}
    active = {p: _time_weighted_active(f) for p, f in runs.items()}
    ok, q = _active_order(active)
    ratios = {p: _ratios(runs["tcp"], runs[p]) for p in POLICIES}
    it.numbers = {
        "active_quantiles": {p: list(map(float, v)) for p, v in q.items()},
        "ratio_quantiles": {
            p: {f"{k:g}": float(np.quantile(v, k)) for k in (0.1, 0.25, 0.5, 0.75, 0.9)} for p, v in ratios.items()
        },
    }
    ex = r.expected
    it.rows.append(
        ex.row(
            "item10.active",
            fctlab="; ".join(f"{LABEL[p]} " + "/".join(f"{x:g}" for x in q[p]) for p in ("srpt", "fair", "las", "tcp")),
            verdict=MATCH if ok else NO_MATCH,
            samples=mode.runs,
            unit="run",
        )
    )
    for p in POLICIES:
        med, p90 = float(np.quantile(ratios[p], 0.5)), float(np.quantile(ratios[p], 0.9))
        it.rows.append(
            ex.row(
                f"item10.{p}_median",
                fctlab=f"{med:.3f}",
                verdict=MATCH if med < 1 - RATIO_EQUAL else NO_MATCH,
                samples=mode.runs,
                unit="run",
            )
        )
        above = p90 > 1 + RATIO_EQUAL
        it.rows.append(
            ex.row(
                f"item10.{p}_p90",
                fctlab=f"{p90:.3f}",
                verdict=MATCH if above == (p == "las") else NO_MATCH,
                samples=mode.runs,
                unit="run",
            )
        )
    _item10_figure(it, active, ratios, out)
    return it


def _item10_figure(it: Item, active: dict, ratios: dict, out) -> None:
    """The complementary CDF of flows in progress (Fig. 7) and the CDF of per-flow ratios."""
    fig = new_figure(11, 3.8)
    a, b = fig.subplots(1, 2)
    color = {p: f"C{k}" for k, p in enumerate(("tcp", *POLICIES))}
    for p in ("tcp", *POLICIES):
        v = np.sort(active[p])
        a.step(v, 1 - np.arange(1, len(v) + 1) / len(v), where="post", label=LABEL[p], color=color[p])
    for p in POLICIES:
        v = np.sort(ratios[p])
        b.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=LABEL[p], color=color[p])
    a.set_xlabel("flows in progress")
    a.set_ylabel("fraction of time above")
    a.set_title("cf. Fig. 7", fontsize=9)
    b.axvline(1.0, color="gray", ls="--", lw=0.8)
    b.set_xscale("log")
    b.set_xlabel("transfer time / transfer time under tcp (same flow)")
    b.set_ylabel("CDF")
    b.set_title("per-flow gains (cf. Table 2)", fontsize=9)
    for x in (a, b):
        x.grid(alpha=0.3)
        x.legend(fontsize=8)
    save_figure(fig, out / "schedtcp_item10.png")
    it.figures.append(
        (
            "schedtcp_item10.png",
            "Flows in progress (complementary CDF, cf. Fig. 7) and the CDF of each flow's transfer time against tcp",
        )
    )


# =========================================================================== item 11


def item11(r: Runner, mode: Mode, out) -> Item:
    it = r.new_item(
        11,
        f"item 1's set-up (`pair.toml`, {mode.runs} seeds x {mode.flows} flows, the ideal gtcp) with "
        "`protocol = \"cubic\"` for every connection, tcp's as the policies': CUBIC as Linux computes it (C = 0.4, "
        "beta = 0.7, fast convergence, the Reno-friendly region), the paper's Table 2 statistics against tcp under "
        "CUBIC, flow by flow; beside them item 1's under NewReno (the `linux` profile's default congestion control).",
    )
    cubic = {p: _flows(r, mode, p, protocol="cubic") for p in ("tcp", *POLICIES)}
    stats = {p: compare(cubic["tcp"], cubic[p]) for p in POLICIES}
    reno_tcp = _flows(r, mode, "tcp")
    reno = {p: compare(reno_tcp, _flows(r, mode, p)) for p in POLICIES}
    it.numbers = {"stats": stats, "newreno": reno, "tcp_mean_fct_s": compare(cubic["tcp"], cubic["tcp"])["mean_fct_s"]}
    _table_rows(it, r.expected, "item11", stats, runs=mode.runs)
    it.explanation.append(
        "Faster / slower / equal under NewReno (item 1's runs): "
        + "; ".join(
            f"{LABEL[p]} {fmt_pct(s['faster'], False)} / {fmt_pct(s['slower'], False)} / {fmt_pct(s['equal'], False)}"
            for p, s in reno.items()
        )
        + ". Mean transfer time under CUBIC: tcp "
        + fmt_time(it.numbers["tcp_mean_fct_s"])
        + ", "
        + ", ".join(f"{LABEL[p]} {fmt_time(stats[p]['mean_fct_s'])}" for p in POLICIES)
        + ". The layer leaves the congestion control to the connections, so the comparison needs no change to it; "
        "the paper's implementation ran on Linux 3.2, whose default congestion control is CUBIC."
    )
    return it


ITEMS: dict = {8: item8, 9: item9, 10: item10, 11: item11}
#: where the new items run: after item 5, before the kernel items
ORDER = [8, 9, 10, 11]
