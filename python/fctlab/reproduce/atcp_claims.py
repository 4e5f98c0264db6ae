"""Claims of the ATCP paper beyond its tables: items 12 to 17 of ``fctlab reproduce atcp``.

Each item runs the scenario files of ``scenarios/papers/atcp/`` (the set-ups of items 1, 3, 5,
6 and 8 where the paper's section allows) and grades a statement of the paper's text against
fctlab's numbers: the motivating web-service example (12), the general weight-size function
W'(s) against the step (13), W_H + W_L and the throughput's oscillation (14), which case of the
disjoint chain gains more (15), the MapReduce job time as its last shuffle flow (16),
Theorem 1 with weights 1 : 3 and 1 : 2 : 4 (17) and ATCP beside D3 on item 7's incast (18). The items are registered in
:data:`fctlab.reproduce.atcp.ITEMS`; see ``docs/reproduce_atcp.md``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..stats import interval
from .atcp_runs import (
    SYNTHETIC_WORKLOAD,
    Mode,
    _atcp_flows,
    _drop_events,
    _medium,
    _small,
    _tcp_flows,
)
from .common import (
    MATCH,
    NO_MATCH,
    NOT_MEASURED,
    Item,
    Runner,
    fmt_change,
    fmt_pct,
    fmt_time,
    meet_ratio,
    new_figure,
    per_seed,
    rel_change,
    save_figure,
    seed_change,
)

#: the sums of W_H + W_L item 14 sweeps (the paper's 1 to 5; the two-flow runs are cheap, so
#: both modes run all five)
SUMS = (1, 2, 3, 4, 5)
#: T2 of the general weight function (item 13): T1 = 10 MB plus the widest interval the paper
#: allows ("T2 is in [1MB, 10MB]", read as the width of [T1, T2])
T2 = "20MB"
#: a share of flows the paper calls "a very small portion" is taken to be under this
SMALL_PORTION = 0.10
#: flows whose completion times differ by less than this (relative) are counted as equal, as
#: `fctlab compare` counts them
EQUAL_REL = 0.05


def _interval_text(m: float, h: float, fmt=lambda x: fmt_pct(x, False)) -> str:
    return f"{fmt(m)} ± {fmt(h)}" if np.isfinite(h) else fmt(m)


# =========================================================================== item 12

WEB_TAGS = ("web", "database")
LARGE_TAGS = ("backup", "background_large")


def _paired(tcp: pd.DataFrame, atcp: pd.DataFrame, tags) -> dict:
    """Per seed, the flows of `tags` completed in both runs, joined on (seed, flow id)."""
    cols = ["seed", "flow_id", "fct_s", "size_bytes"]
    a = tcp[tcp["tag"].isin(tags) & tcp["completed"].astype(bool)][cols]
    b = atcp[atcp["tag"].isin(tags) & atcp["completed"].astype(bool)][cols]
    return a.merge(b, on=["seed", "flow_id", "size_bytes"], suffixes=("_tcp", "_atcp"))


def _benefit(pairs: pd.DataFrame) -> dict:
    """Per seed: the share of flows faster under ATCP (by more than EQUAL_REL) and equal."""
    faster, equal = {}, {}
    for s, p in pairs.groupby("seed"):
        d = (p["fct_s_atcp"] - p["fct_s_tcp"]) / p["fct_s_tcp"]
        faster[int(s)] = float((d < -EQUAL_REL).mean())
        equal[int(s)] = float((d.abs() <= EQUAL_REL).mean())
    return {"faster": faster, "equal": equal}


def _web_numbers(tcp: pd.DataFrame, atcp: pd.DataFrame) -> dict:
    """Item 12's numbers: the web-service median's change, the shares of web flows faster and
    equal per seed, the large flows' mean completion time's change, and the share of web
    flows whose window left slow start."""
    web = lambda f: f[f["tag"].isin(WEB_TAGS)]  # noqa: E731
    share = _benefit(_paired(tcp, atcp, WEB_TAGS))
    large = _paired(tcp, atcp, LARGE_TAGS)
    return {
        "median": seed_change(web(tcp), web(atcp), lambda f: f["fct_s"].median()),
        "faster": share["faster"],
        "equal": share["equal"],
        "large": seed_change(
            large.rename(columns={"fct_s_tcp": "fct_s"}),
            large.rename(columns={"fct_s_atcp": "fct_s"}),
            lambda f: f["fct_s"].mean(),
        ),
        "large_flows": len(large),
        "web_left_slow_start": float(web(atcp)["left_slow_start"].astype(bool).mean()),
    }


def item12(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        12,
        "`tree_web.toml`, item 6's set-up (the section's web service of Figure 'Various Flows in Data Center "
        "Applications'(a) in a tree: web server h0, database h4 with its backup h4 -> h8, web and database flows, "
        f"background flows; arrival window {mode.web_until}, backup {mode.web_backup}, seeds {mode.seeds}), under "
        "TCP and under the section's modified TCP: ATCP's step function with W_H = 1.5 and W_L = 0.5 at T = 10 MB "
        "(the increases of 1.5 and 0.5 segments per RTT the section's source states, a ratio of 3). The web "
        "service's flows are the web and database flows, all sizes; 'benefit' is a flow that finishes more than "
        f"{EQUAL_REL:.0%} sooner under the modified TCP on the same seed (flow by flow, as `fctlab compare` counts); "
        "large flows are the backup and the background flows of 10 MB and more, completed in both runs.",
    )
    ov = {f"workloads__{i}__until": mode.web_until for i in range(4)}
    ov["flows__0__size"] = mode.web_backup
    tcp = rn.run_seeds("tree_web.toml", "TCP", mode.seeds, transport__protocol="tcp", **ov)
    atcp = rn.run_seeds(
        "tree_web.toml",
        "ATCP W_H=1.5 W_L=0.5",
        mode.seeds,
        transport__protocol="atcp",
        transport__atcp__w_high=1.5,
        transport__atcp__w_low=0.5,
        **ov,
    )
    it.numbers = _web_numbers(tcp, atcp)
    med, lch, left = it.numbers["median"], it.numbers["large"], it.numbers["web_left_slow_start"]
    fm, fh = interval(list(it.numbers["faster"].values()))
    em, _ = interval(list(it.numbers["equal"].values()))
    n_large = it.numbers.pop("large_flows")
    ex = rn.expected
    it.rows.append(
        ex.row(
            "item12.median",
            med["change"],
            f"{fmt_time(med['base'])} -> {fmt_time(med['new'])} ({fmt_change(med)})",
            half_width=med["half_width"],
            samples=med["seeds"],
        )
    )
    ok = np.isfinite(fm) and fm + (fh if np.isfinite(fh) else 0.0) > 0.9
    it.rows.append(
        ex.row(
            "item12.benefit",
            fctlab=f"{_interval_text(fm, fh)} faster, {fmt_pct(em, False)} equal (within {EQUAL_REL:.0%}); "
            f"{fmt_pct(left, False)} of the web flows left slow start (where a weight acts)",
            verdict=(MATCH if ok else NO_MATCH) if np.isfinite(fm) else NOT_MEASURED,
            samples=len(it.numbers["faster"]),
        )
    )
    it.rows.append(
        ex.row(
            "item12.large",
            lch["change"],
            f"{fmt_time(lch['base'])} -> {fmt_time(lch['new'])} ({fmt_change(lch)}), "
            f"{n_large // max(len(mode.seeds), 1)} flows per seed",
            half_width=lch["half_width"],
            samples=lch["seeds"],
        )
    )
    it.explanation.append(
        "Every web flow is under 10 MB here (the web and database flows are drawn from the non-large part of the "
        "synthetic trace), so every one sends with the higher weight. The modified TCP acts only in congestion avoidance: web flows that finish in slow start are not given "
        "more bandwidth, and their times move only with the queues they share, so a flow-by-flow count finds "
        "many of them equal. The paper's sentence after its 90% ('More than 90% of the web flows are smaller "
        "than 10MB and they benefit') suggests that it counted every flow under the threshold as benefiting."
    )
    it.explanation.append(SYNTHETIC_WORKLOAD)
    return it


# =========================================================================== item 13


def _general(rn: Runner, mode: Mode, kind: str) -> pd.DataFrame:
    return _atcp_flows(
        rn,
        mode,
        "chain_campus.toml",
        3.0,
        1.0,
        {
            "transport__atcp__weight_function": kind,
            "transport__atcp__threshold_low": "10MB",
            "transport__atcp__threshold_high": T2,
            "unset": ("transport.atcp.threshold",),
        },
    )


def overlap_share(flows: pd.DataFrame, t1: float, t2: float) -> float:
    """The share of completed non-large flows (< t1 bytes) that overlap in time a large flow
    (> t1 bytes) while it has sent between t1 and t2 bytes, per seed, averaged. A large flow's
    bytes sent are taken to grow evenly over its completion time (its average rate), which
    places that interval at start + fct * t1 / size to start + fct * min(t2, size) / size."""
    done = flows[flows["completed"].astype(bool)]
    shares = []
    for _, f in done.groupby("seed") if "seed" in done.columns else [(0, done)]:
        sz = f["size_bytes"].astype(float)
        big = f[sz > t1]
        small = f[sz < t1]
        if small.empty:
            continue
        bs = big["size_bytes"].to_numpy(float)
        a = big["start_s"].to_numpy() + big["fct_s"].to_numpy() * t1 / bs
        b = big["start_s"].to_numpy() + big["fct_s"].to_numpy() * np.minimum(t2, bs) / bs
        s0, s1 = small["start_s"].to_numpy()[:, None], small["finish_s"].to_numpy()[:, None]
        hit = ((s0 < b[None, :]) & (s1 > a[None, :])).any(axis=1) if len(a) else np.zeros(len(small), bool)
        shares.append(float(hit.mean()))
    return float(np.mean(shares)) if shares else float("nan")


def item13(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        13,
        "`chain_campus.toml`, item 3's set-up (W_H = 3, W_L = 1, arrival window "
        f"{mode.chain_until}, seeds {mode.seeds}), with the general weight-size function against the step at "
        f'T = 10 MB: `weight_function = "linear"` and `"exponential"` (W\'(s) falling from W_H at T1 to W_L at '
        f"T2, the two forms the section names), `threshold_low` = T1 = 10 MB (the section's small-flow threshold) "
        f"and `threshold_high` = T2 = {T2}. The section puts T2 'in [1MB, 10MB]', below its own T1; read as the width "
        "of [T1, T2] (the sentence before asks the interval to be a small portion of a flow of hundreds of MB), "
        f"T2 lies between 11 and 20 MB, and {T2}, the widest, gives W'(s) the most room to matter. Changes are "
        "against the step function on the same seeds. Overlap: the share of non-large flows (< 10 MB) that run "
        f"while a large flow has sent between T1 and T2, each large flow's progress taken as even over its "
        f"completion time; 'a very small portion' is taken as under {SMALL_PORTION:.0%}.",
    )
    step = _atcp_flows(rn, mode, "chain_campus.toml", 3.0, 1.0)
    ex = rn.expected
    it.numbers = {}
    for kind in ("linear", "exponential"):
        gen = _general(rn, mode, kind)
        for name, fn in (("small", _small), ("medium", _medium)):
            c = seed_change(step, gen, fn)
            it.numbers[f"{kind}_{name}"] = c
            it.rows.append(
                ex.row(
                    f"item13.{kind}.{name}",
                    c["change"],
                    f"{fmt_time(c['base'])} -> {fmt_time(c['new'])} ({fmt_change(c)})",
                    half_width=c["half_width"],
                    samples=c["seeds"],
                )
            )
    ov = overlap_share(step, 10e6, 20e6)
    it.numbers["overlap_share"] = ov
    it.rows.append(
        ex.row(
            "item13.overlap",
            fctlab=f"{fmt_pct(ov, False)} of the non-large flows",
            verdict=(MATCH if ov < SMALL_PORTION else NO_MATCH) if np.isfinite(ov) else NOT_MEASURED,
            samples=len(mode.seeds),
        )
    )
    it.explanation.append(
        "The general function changes a large flow's weight only while it sends its bytes between T1 and T2; "
        "a non-large flow meets a different weight only if it overlaps a large flow in that interval, which the "
        "overlap row counts."
    )
    it.explanation.append(SYNTHETIC_WORKLOAD)
    return it


# =========================================================================== item 14


def _oscillation(res, t0: float = 1.0, bin_s: float = 0.010) -> dict:
    """Congestion events per second (decreases of either flow's window, merged within 10 ms)
    and the aggregate throughput's mean and coefficient of variation over `bin_s` bins."""
    c = res.cwnd[res.cwnd["time_s"] >= t0]
    ev = np.sort(np.concatenate([_drop_events(c, f) for f in sorted(c["flow_id"].unique())]))
    merged = [x for i, x in enumerate(ev) if i == 0 or x - ev[i - 1] > 0.010]
    span = float(c["time_s"].max() - t0)
    agg = c.groupby("time_s")["rate_bps"].sum()
    tot = c.groupby("time_s")["cwnd_bytes"].sum()
    b = agg.groupby((agg.index // bin_s) * bin_s).mean()
    return {
        "events_per_s": len(merged) / span if span > 0 else float("nan"),
        "mean_bps": float(b.mean()),
        "cv": float(b.std() / b.mean()) if b.mean() > 0 else float("nan"),
        "window_cv": float(tot.std() / tot.mean()) if tot.mean() > 0 else float("nan"),
    }


def rises(values, noise: float = 0.05) -> bool:
    """Whether a sweep's values rise: no step falls by more than `noise` (relative) and the
    last is above the first by more than `noise`."""
    v = [x for x in values]
    if len(v) < 2 or not all(np.isfinite(v)):
        return False
    steps = all(v[i + 1] >= v[i] * (1 - noise) for i in range(len(v) - 1))
    return steps and v[-1] > v[0] * (1 + noise)


def item14(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        14,
        "`two_flow_cwnd.toml`, item 1's two-flow chain (100 Mbps, 50 us, 50-packet DropTail, 5 s), with the section's "
        "'2-flow example': flow 2 with W_H and flow 1 with W_L as fixed weights at W_H : W_L = 3 : 1 (item 3's "
        f"ratio), W_H + W_L = {', '.join(map(str, SUMS))}. From 1 s on, windows sampled every 1 ms: congestion "
        "events (a window falling by a quarter or more, either flow, merged within 10 ms) per second, and the "
        "oscillation of the total throughput: the coefficient of variation of the two flows' summed rate over "
        "10 ms bins. A sweep 'rises' when no step falls by more than 5% and the last point is more than 5% above "
        "the first. Deterministic runs (two explicit flows), so one run per point.",
    )
    res = {}
    for s in SUMS:
        r = rn.run(
            "two_flow_cwnd.toml",
            f"weighted TCP W_H+W_L={s}",
            flows__0__atcp__weight=0.25 * s,
            flows__1__atcp__weight=0.75 * s,
        )
        res[s] = _oscillation(r)
    ev = [res[s]["events_per_s"] for s in SUMS]
    cv = [res[s]["cv"] for s in SUMS]
    it.numbers = {str(s): v for s, v in res.items()}
    ex = rn.expected
    it.rows.append(
        ex.row(
            "item14.events",
            fctlab=", ".join(f"{s}: {e:.1f}/s" for s, e in zip(SUMS, ev)),
            verdict=MATCH if rises(ev) else NO_MATCH,
        )
    )
    it.rows.append(
        ex.row(
            "item14.oscillation",
            fctlab=", ".join(f"{s}: {c:.3f}" for s, c in zip(SUMS, cv)),
            verdict=MATCH if rises(cv) else NO_MATCH,
        )
    )
    it.explanation.append(
        "Mean total throughput: "
        + ", ".join(f"{s}: {res[s]['mean_bps'] / 1e6:.1f} Mbps" for s in SUMS)
        + "; coefficient of variation of the summed windows: "
        + ", ".join(f"{s}: {res[s]['window_cv']:.3f}" for s in SUMS)
        + ". Each congestion event halves both windows, so the summed window swings between about half and all "
        "of what the path holds whatever W_H + W_L is; a larger sum refills it sooner, so the events come more "
        "often. The throughput falls below the link's only when the halved windows no longer cover the "
        "bandwidth-delay product, which the 50-packet buffer mostly prevents here."
    )
    _item14_figure(it, rn, out)
    return it


def _item14_figure(it: Item, rn: Runner, out: Path) -> None:
    """The summed window over one second at the smallest and the largest W_H + W_L."""
    fig = new_figure(8, 3.5)
    ax = fig.subplots()
    for s in (SUMS[0], SUMS[-1]):
        r = rn.run(
            "two_flow_cwnd.toml",
            f"weighted TCP W_H+W_L={s}",
            flows__0__atcp__weight=0.25 * s,
            flows__1__atcp__weight=0.75 * s,
        )
        c = r.cwnd[(r.cwnd["time_s"] >= 2.0) & (r.cwnd["time_s"] < 3.0)]
        tot = c.groupby("time_s")["cwnd_bytes"].sum()
        ax.plot(tot.index, tot.to_numpy() / 1e3, lw=0.8, label=f"W_H + W_L = {s}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("summed congestion window (KB)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out / "item14_oscillation.png")
    it.figures.append(("item14_oscillation.png", "Item 14: the two flows' summed window at W_H + W_L = 1 and 5"))


# =========================================================================== item 15


def item15(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        15,
        "item 5's runs: `chain_disjoint_large.toml` (case 1, large flows on the whole chain) and "
        f"`chain_disjoint_small.toml` (case 2, small and medium flows on the whole chain), arrival window "
        f"{mode.chain_until}, seeds {mode.seeds}, TCP and ATCP (W_H = 3, W_L = 1). Per seed: ATCP's median in case 1 "
        "against case 2 (the same seed in both files), and the difference of ATCP's gain over TCP between the "
        "cases (case 1's change minus case 2's, in points); means over the seeds ± the 95% half-width.",
    )
    runs = {}
    for case, file in (("large", "chain_disjoint_large.toml"), ("small", "chain_disjoint_small.toml")):
        runs[case] = (_tcp_flows(rn, mode, file), _atcp_flows(rn, mode, file, 3.0, 1.0))
    ex = rn.expected
    it.numbers = {}
    for name, fn in (("medium", _medium), ("small", _small)):
        c = seed_change(runs["small"][1], runs["large"][1], fn)
        it.rows.append(
            ex.row(
                f"item15.atcp_{name}",
                c["change"],
                f"{fmt_time(c['base'])} -> {fmt_time(c['new'])} ({fmt_change(c)})",
                half_width=c["half_width"],
                samples=c["seeds"],
            )
        )
        g1 = seed_change(runs["large"][0], runs["large"][1], fn)
        g2 = seed_change(runs["small"][0], runs["small"][1], fn)
        d = [a - b for a, b in zip(g1["per_seed"], g2["per_seed"])]
        m, h = interval(d)
        it.rows.append(
            ex.row(
                f"item15.gain_{name}",
                m,
                f"case 1 {fmt_pct(g1['change'])}, case 2 {fmt_pct(g2['change'])}: "
                + (f"{m * 100:+.1f} ± {h * 100:.1f} points" if np.isfinite(h) else f"{m * 100:+.1f} points"),
                half_width=h,
                samples=len(d),
            )
        )
        it.numbers[name] = {"atcp_case1_vs_case2": c, "gain_case1": g1, "gain_case2": g2, "difference": [m, h]}
    it.explanation.append(
        "The paper's reason for case 1 doing better: a large flow that crosses the whole chain slows down "
        "whenever any of its links is congested, which leaves room for the non-large flows on the other links. "
        "Its table gives the medians of case 1 below case 2's under both protocols, and ATCP's relative gains "
        "within a point of each other."
    )
    it.explanation.append(
        "The non-large flows cross one link in case 1 and four in case 2, so part of the difference between the "
        "cases' medians is the path's length and the other links' queues, under either protocol; the difference "
        "of the gains, each against TCP on the same file, leaves that out."
    )
    it.explanation.append(SYNTHETIC_WORKLOAD)
    return it


# =========================================================================== item 16


def item16(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        16,
        f"item 8's runs (`mapreduce.toml`, {mode.mr_jobs} jobs of 16 blocks of 8 MB, one background flow, TCP, "
        "DCTCP and ATCP). A job's time is the time from its release to the completion of its last shuffle flow: "
        "the job completes when its last shuffle flow does, and its map and reduce computation, which the "
        "simulator does not model, counts as nothing. Changes: each job's time against the same job's under TCP, "
        "the mean over the jobs ± the 95% half-width. Under this reading a job's time is its shuffle's, so a "
        "difference from the paper's job-time changes measures how much of the paper's job is not shuffle.",
    )
    ov = {"workloads__1__jobs": mode.mr_jobs, "stop_time": mode.mr_stop}
    jobs = {}
    for p in ("tcp", "dctcp", "atcp"):
        f = rn.run("mapreduce.toml", p.upper(), transport__protocol=p, **ov).flows
        sh = f[f["tag"] == "shuffle"]
        last = sh.groupby("group")["finish_s"].max()
        release = sh.groupby("group")["start_s"].min()
        done = sh.groupby("group")["completed"].all()
        jobs[p] = (last - release)[done]
    it.numbers = {"job_time_s": {p: v.to_dict() for p, v in jobs.items()}}
    ex = rn.expected
    for p in ("atcp", "dctcp"):
        common = [g for g in jobs["tcp"].index if g in jobs[p].index]
        m, h = interval([rel_change(jobs[p][g], jobs["tcp"][g]) for g in common])
        it.numbers[f"change_{p}"] = [m, h, len(common)]
        it.rows.append(
            ex.row(
                f"item16.job_{p}",
                m,
                f"{fmt_time(float(jobs['tcp'].mean()))} -> {fmt_time(float(jobs[p].mean()))} "
                f"({fmt_change({'change': m, 'half_width': h})})",
                half_width=h,
                samples=len(common),
                unit="job",
            )
        )
    gaps = {p: float((jobs[p] / jobs["tcp"].reindex(jobs[p].index)).median()) for p in ("dctcp", "atcp")}
    it.explanation.append(
        "The paper's own job changes are about a third of its shuffle changes (ATCP 10.5% of 33%, DCTCP 7% of "
        "25%), which fits a shuffle that takes a third of the job (the share its Motivating Example quotes). A "
        "job made of its shuffle alone can therefore change up to three times as much as the paper's jobs: a "
        "'direction matches, size differs' here can come from the missing computation alone. Median job-time "
        "ratio to TCP: " + ", ".join(f"{p.upper()} {v:.3f}" for p, v in gaps.items()) + "."
    )
    if mode.mr_jobs < 5:
        it.explanation.append(f"Only {mode.mr_jobs} jobs in this mode: the rows are shown, not graded.")
    return it


# =========================================================================== item 17


def _rate_shares(res, t0: float = 1.0) -> pd.Series:
    c = res.cwnd[res.cwnd["time_s"] >= t0]
    return c.groupby("flow_id")["rate_bps"].mean()


def item17(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        17,
        "item 1's chain (100 Mbps, 50 us, the sender's 50-packet DropTail queue the bottleneck, 5 s, windows and "
        "rates sampled every 1 ms, means over 1 s to 5 s): `two_flow_cwnd.toml` with weights 1 and 3 "
        "(`flows.1.atcp.weight = 3`), and `three_flow_cwnd.toml`, the same chain with a third flow on the same "
        "path and weights 1, 2 and 4. Theorem 1's rule a : b is applied to each pair of the three flows.",
    )
    two = rn.run("two_flow_cwnd.toml", "weighted TCP 1:3", flows__1__atcp__weight=3.0)
    three = rn.run("three_flow_cwnd.toml", "weighted TCP 1:2:4")
    r2, r3 = _rate_shares(two), _rate_shares(three)
    c2 = two.cwnd[two.cwnd["time_s"] >= 1.0].groupby("flow_id")["cwnd_bytes"].mean()
    ratio13 = float(r2.loc[1] / r2.loc[0])
    cw13 = float(c2.loc[1] / c2.loc[0])
    ratio21, ratio41 = float(r3.loc[1] / r3.loc[0]), float(r3.loc[2] / r3.loc[0])
    shares = (r3 / r3.sum()).tolist()
    it.numbers = {
        "rate_ratio_1_3": ratio13,
        "cwnd_ratio_1_3": cw13,
        "ratio_2_1": ratio21,
        "ratio_4_1": ratio41,
        "shares": shares,
    }
    ex = rn.expected
    it.rows.append(ex.row("item17.ratio13", ratio13, f"{ratio13:.3f} (windows {cw13:.3f})"))
    it.rows.append(ex.row("item17.ratio21", ratio21, f"{ratio21:.3f}"))
    it.rows.append(
        ex.row(
            "item17.ratio41", ratio41, f"{ratio41:.3f} (shares " + " / ".join(f"{s * 100:.1f}%" for s in shares) + ")"
        )
    )
    it.explanation.append(
        "Theorem 1 assumes that every congestion event halves every flow. Where an event hits only some of the "
        "flows, the ratio moves toward the square-root law (sqrt(3) = 1.73 for 1 : 3, "
        "`fctlab.models.atcp.sqrt_law_ratio`), as item 1 discusses for 1 : 2."
    )
    return it


# =========================================================================== item 18


def item18(rn: Runner, mode: Mode, out: Path) -> Item:
    it = rn.new_item(
        18,
        f"item 7's fat-tree incast (`fattree_incast.toml`, {mode.fat_jobs} queries, run until {mode.fat_stop}, "
        f"seeds {', '.join(map(str, mode.seeds))}) under ATCP and under D3 ([protocols.md](protocols.md#d3)) on "
        "the same flows. The responses under 100 KB carry the scenario's 30 ms deadline, which D3's senders ask "
        "their rate from (remaining bytes over the time left); larger responses and the background flow have none "
        "and take D3's fair share. The share of sub-100 KB responses that meet 30 ms, per seed; the difference "
        "ATCP minus D3 is paired by seed.",
    )
    ov = {"workloads__0__jobs": mode.fat_jobs, "stop_time": mode.fat_stop}
    resp = {}
    for p in ("atcp", "d3"):
        f = rn.run_seeds("fattree_incast.toml", p.upper(), mode.seeds, transport__protocol=p, **ov)
        resp[p] = f[f["tag"] == "response"]
    ch = seed_change(resp["d3"], resp["atcp"], meet_ratio, points=True)
    meet = {p: float(np.mean(list(per_seed(f, meet_ratio).values()))) for p, f in resp.items()}
    it.numbers = {"deadline": meet, "atcp_minus_d3": ch, "seeds": list(mode.seeds)}
    ex = rn.expected
    it.rows.append(ex.row("item18.deadline", fctlab=" / ".join(fmt_pct(meet[p], False) for p in ("atcp", "d3"))))
    it.rows.append(
        ex.row(
            "item18.atcp_vs_d3",
            ch["change"],
            fmt_change(ch, points=True),
            half_width=ch["half_width"],
            samples=ch["seeds"],
        )
    )
    it.explanation.append(
        "The paper compares ATCP with D3 by the numbers each paper reports on its own set-up; here both run on "
        "the same flows. D3 needs switches that allocate rates (fctlab's D3 keeps the paper's per-port counters "
        "and carries the allocations in its packets' header); ATCP needs none."
    )
    return it


ITEMS: dict = {12: item12, 13: item13, 14: item14, 15: item15, 16: item16, 17: item17, 18: item18}
#: where the new items run: after item 6, before the kernel items
ORDER = [12, 13, 14, 15, 16, 17, 18]
