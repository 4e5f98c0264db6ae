"""The crosscheck's statistics and its side-by-side report.

Per seed, each simulator's flows give per size bucket the median, mean and 99th percentile
FCT of the completed flows; across seeds each figure is reported as its mean with a 95%
Student-t interval, and the verdict compares the means over seeds (fctlab / other). Counters
(drops, ECN marks, timeouts, flows that waited at least the initial RTO, and on lossless
networks the PFC pauses) are compared the same way. Flows completed in both runs of a seed are also paired one by one (fctlab FCT / other
FCT). Tolerances (docs/crosscheck.md): median within 10%, mean within 20%, counters within 25%.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import numpy as np

from ..numfmt import seconds as _fmt_s
from ..stats import interval

KB = 1_000
#: Size buckets of the crosscheck: finer than the reports' default, because the papers' mixes
#: put most flows below 100 KB.
BUCKETS = (
    ("<10KB", 0, 10 * KB),
    ("10-100KB", 10 * KB, 100 * KB),
    ("100KB-1MB", 100 * KB, 1000 * KB),
    ("1-10MB", 1000 * KB, 10_000 * KB),
    (">=10MB", 10_000 * KB, math.inf),
)
#: Every finite flow, whatever its size: the figures an FCT study quotes first.
ALL = "all sizes"
#: A bucket is graded only with at least this many completed flows per seed in both runs.
MIN_FLOWS = 10
TOL_MEDIAN, TOL_MEAN, TOL_COUNT = 0.10, 0.20, 0.25
#: What the other simulator's wall time holds, unless its target says (its WALL_NOTE).
DEFAULT_WALL_NOTE = "(its script run by ns and its output read back)"
#: Counters below this (mean per seed, in both runs) are too few to grade as a ratio.
MIN_COUNT = 5


def _bucket(size) -> Optional[str]:
    if size is None or (isinstance(size, float) and math.isnan(size)):
        return None
    for name, lo, hi in BUCKETS:
        if lo <= size < hi:
            return name
    return None


def _seed_stats(flows, initial_rto_s: float) -> dict:
    """One run's figures: per bucket (n, median, mean, p99), counters, long-lived goodput."""
    out = {"buckets": {}, "counters": {}, "goodput": {}}
    finite = flows[flows["size_bytes"].notna()]
    done = finite[finite["completed"]]
    names = done["size_bytes"].map(_bucket)
    for name in _bucket_names():
        f = done["fct_s"][names == name].to_numpy(dtype=float) if name != ALL else done["fct_s"].to_numpy(dtype=float)
        if f.size:
            out["buckets"][name] = {
                "n": int(f.size),
                "median": float(np.median(f)),
                "mean": float(f.mean()),
                "p99": float(np.quantile(f, 0.99)),
            }
    long = flows[flows["size_bytes"].isna()]
    c = out["counters"]
    c["completed"] = int(finite["completed"].sum())
    c["unfinished"] = int(len(finite) - c["completed"])
    if flows["timeouts"].notna().any() or flows.empty:
        c["timeouts_finite"] = int(finite["timeouts"].sum())
        c["timeouts_long"] = int(long["timeouts"].sum())
        c["flows_with_timeout"] = int((finite["timeouts"] > 0).sum())
    else:  # not measured (the kernel's TCP_INFO counts no timeouts per flow): not graded
        c["timeouts_finite"] = c["timeouts_long"] = c["flows_with_timeout"] = math.nan
    # a response that waited an initial RTO: a lost SYN or a lost first window
    c["waited_initial_rto"] = int((done["fct_s"] >= initial_rto_s).sum() + c["unfinished"])
    for _, r in long.iterrows():
        if r["start_s"] is not None and not math.isnan(r["start_s"]):
            out["goodput"][int(r["flow_id"])] = float(r["bytes_delivered"])
    return out


def _bucket_names() -> list:
    return [name for name, _, _ in BUCKETS] + [ALL]


def _paired(a, b) -> dict:
    m = a[["flow_id", "fct_s", "completed"]].merge(
        b[["flow_id", "fct_s", "completed"]], on="flow_id", suffixes=("_a", "_b")
    )
    m = m[m["completed_a"] & m["completed_b"]]
    if m.empty:
        return {"n": 0}
    r = (m["fct_s_a"] / m["fct_s_b"]).to_numpy(dtype=float)
    return {
        "n": int(r.size),
        "median_ratio": float(np.median(r)),
        "p10_ratio": float(np.quantile(r, 0.1)),
        "p90_ratio": float(np.quantile(r, 0.9)),
        "within_10pct": float(np.mean(np.abs(r - 1) <= 0.10)),
    }


def _check(what: str, a: float, b: float, tol: float, unit: str) -> dict:
    if b == 0 and a == 0:
        ratio, ok = 1.0, True
    elif b == 0 or math.isnan(a) or math.isnan(b):
        ratio, ok = math.inf, False
    else:
        ratio = a / b
        ok = abs(ratio - 1) <= tol + 1e-12
    return {"what": what, "fctlab": a, "other": b, "ratio": ratio, "tolerance": tol, "ok": ok, "unit": unit}


def _pauses(run_dir: Path) -> int:
    """The pauses of a lossless run (the pause rows of its pfc.parquet; NaN without one: not measured)."""
    import pyarrow.parquet as pq  # lazy: pyarrow costs 80 ms of start-up

    f = Path(run_dir) / "pfc.parquet"
    if not f.is_file():
        return math.nan
    events = pq.read_table(f, columns=["event"]).column("event").to_pylist()
    return sum(e == "pause" for e in events)


def statistics(runs: list, plan) -> dict:
    import pandas as pd  # lazy: pandas costs 250 ms of start-up

    rto = plan.tcp["initial_rto_s"]
    per = {"fctlab": [], "other": []}
    paired, wall = [], {"fctlab": [], "other": [], "own": []}
    summaries = {"fctlab": [], "other": []}
    for r in runs:
        fa = pd.read_parquet(r.fctlab_dir / "flows.parquet")
        fb = pd.read_parquet(r.other_dir / "flows.parquet")
        la = pd.read_parquet(r.fctlab_dir / "links.parquet")
        sa = json.loads((r.fctlab_dir / "summary.json").read_text())
        sb = json.loads((r.other_dir / "summary.json").read_text())
        a, b = _seed_stats(fa, rto), _seed_stats(fb, rto)
        a["counters"]["drops"], b["counters"]["drops"] = int(la["drops"].sum()), int(sb["drops"])
        a["counters"]["ecn_marks"], b["counters"]["ecn_marks"] = int(sa["ecn_marks"]), int(sb["ecn_marks"])
        if getattr(plan, "pfc", None) is not None:
            a["counters"]["pfc_pauses"] = _pauses(r.fctlab_dir)
            b["counters"]["pfc_pauses"] = _pauses(r.other_dir)
        per["fctlab"].append(a)
        per["other"].append(b)
        paired.append(_paired(fa, fb))
        wall["fctlab"].append(r.fctlab_wall_s)
        wall["other"].append(r.other_wall_s)
        wall["own"].append(r.own_wall_s)
        summaries["fctlab"].append(sa)
        summaries["other"].append(sb)
    stats = {
        "seeds": [r.seed for r in runs],
        "buckets": [],
        "counters": [],
        "goodput": [],
        "checks": [],
        "paired": paired,
        "wall_s": {k: interval(v) for k, v in wall.items()},
    }
    for name in _bucket_names():
        rows = {}
        for sim in ("fctlab", "other"):
            seeds = [s["buckets"].get(name) for s in per[sim]]
            if not any(seeds):
                continue
            rows[sim] = {k: interval([x[k] if x else math.nan for x in seeds]) for k in ("n", "median", "mean", "p99")}
        if not rows or (name == ALL and len(stats["buckets"]) < 2):
            continue  # "all sizes" only beside two or more buckets, not as a copy of one
        stats["buckets"].append({"bucket": name, **rows})
        if len(rows) == 2 and min(rows["fctlab"]["n"][0], rows["other"]["n"][0]) >= MIN_FLOWS:
            stats["checks"].append(
                _check(f"{name} median FCT", rows["fctlab"]["median"][0], rows["other"]["median"][0], TOL_MEDIAN, "s")
            )
            stats["checks"].append(
                _check(f"{name} mean FCT", rows["fctlab"]["mean"][0], rows["other"]["mean"][0], TOL_MEAN, "s")
            )
    lossless = getattr(plan, "pfc", None) is not None
    for key in (
        "completed",
        "unfinished",
        "waited_initial_rto",
        "flows_with_timeout",
        "timeouts_finite",
        "timeouts_long",
        "drops",
        "ecn_marks",
    ) + (("pfc_pauses",) if lossless else ()):
        a = interval([s["counters"][key] for s in per["fctlab"]])
        b = interval([s["counters"][key] for s in per["other"]])
        stats["counters"].append({"counter": key, "fctlab": a, "other": b})
        if (
            key in ("drops", "timeouts_finite", "timeouts_long", "waited_initial_rto", "ecn_marks", "pfc_pauses")
            and not (math.isnan(a[0]) or math.isnan(b[0]))
            and max(a[0], b[0]) >= MIN_COUNT
        ):
            stats["checks"].append(_check(key.replace("_", " "), a[0], b[0], TOL_COUNT, "count"))
    long_ids = sorted(set().union(*[s["goodput"].keys() for s in per["fctlab"]]))
    T = [s.get("sim_time_s") for s in summaries["other"]]
    for fid in long_ids:
        a = interval([s["goodput"].get(fid, math.nan) * 8 / t for s, t in zip(per["fctlab"], T)])
        b = interval([s["goodput"].get(fid, math.nan) * 8 / t for s, t in zip(per["other"], T)])
        stats["goodput"].append({"flow_id": fid, "fctlab": a, "other": b})
    return stats


def _fmt_iv(iv: tuple, fmt) -> str:
    m, h = iv
    if math.isnan(m):
        return "-"
    return fmt(m) + ("" if math.isnan(h) else f" ± {fmt(h)}")


def _count(x: float) -> str:
    return f"{x:,.1f}" if x != int(x) else f"{int(x):,}"


def _ratio(a: float, b: float) -> str:
    if b == 0 or math.isnan(a) or math.isnan(b):
        return "-"
    return f"{a / b:.2f}"


def verdict_lines(stats: dict) -> list:
    other = stats["against"]
    lines = []
    for c in stats["checks"]:
        f = _fmt_s if c["unit"] == "s" else _count
        r = "inf" if math.isinf(c["ratio"]) else f"{c['ratio']:.2f}"
        lines.append(
            f"{'ok  ' if c['ok'] else 'MISS'} {c['what']}: fctlab {f(c['fctlab'])}, {other} {f(c['other'])} "
            f"(ratio {r}, tolerance {c['tolerance']:.0%})"
        )
    n_ok = sum(c["ok"] for c in stats["checks"])
    lines.append(f"{n_ok} of {len(stats['checks'])} figures within tolerance over {len(stats['seeds'])} seeds")
    return lines


def _stat_blocks(stats: dict, plan, other: str) -> list:
    """The report's tables: the verdict, FCT by size bucket, counters, goodput, flow by flow."""
    from ..report.render import Heading, Paragraph, Table  # lazy: fctlab.report loads pandas (250 ms)

    blocks: list = []
    blocks.append(Heading("Verdict"))
    blocks.append(
        Table(
            ["figure", "fctlab", other, "ratio", "tolerance", "within"],
            [
                [
                    c["what"],
                    (_fmt_s if c["unit"] == "s" else _count)(c["fctlab"]),
                    (_fmt_s if c["unit"] == "s" else _count)(c["other"]),
                    "inf" if math.isinf(c["ratio"]) else f"{c['ratio']:.2f}",
                    f"{c['tolerance']:.0%}",
                    "yes" if c["ok"] else "**no**",
                ]
                for c in stats["checks"]
            ],
            text=True,
        )
    )
    blocks.append(Heading("FCT by size bucket (completed flows)"))
    rows = []
    for b in stats["buckets"]:
        for k in ("median", "mean", "p99"):
            a, o = b.get("fctlab", {}).get(k, (math.nan, math.nan)), b.get("other", {}).get(k, (math.nan, math.nan))
            n = f"{b.get('fctlab', {}).get('n', (math.nan,))[0]:.0f} / {b.get('other', {}).get('n', (math.nan,))[0]:.0f}"
            rows.append([f"{b['bucket']} {k}", n, _fmt_iv(a, _fmt_s), _fmt_iv(o, _fmt_s), _ratio(a[0], o[0])])
    blocks.append(
        Table(
            ["bucket, statistic", "flows per seed (fctlab / " + other + ")", "fctlab", other, "ratio"], rows, text=True
        )
    )
    blocks.append(Heading("Counters per seed"))
    blocks.append(
        Table(
            ["counter", "fctlab", other, "ratio"],
            [
                [
                    c["counter"].replace("_", " "),
                    _fmt_iv(c["fctlab"], _count),
                    _fmt_iv(c["other"], _count),
                    _ratio(c["fctlab"][0], c["other"][0]),
                ]
                for c in stats["counters"]
            ],
            text=True,
        )
    )
    blocks.append(
        Paragraph(
            "waited initial rto: completed flows whose FCT is at least the initial RTO "
            f"({plan.tcp['initial_rto_s']:g} s: a lost SYN or first window), plus unfinished ones. ecn marks: fctlab counts "
            f"the marks its ports set; {other} counts CE packets as they leave the last port before their host"
            + (
                " (ns-2's QueueMonitor pmarks_ counts CE departures), which is the same number when a packet is marked "
                f"once. timeouts: {other}'s nrexmit_ does not count a timeout in a window that an ECN echo already "
                "halved (TcpAgent::timeout, tcp/tcp.cc line 1918); fctlab counts every timeout, so with ECN the two "
                "counts differ by those."
                if other == "ns2"
                else ", which is the same number when a packet is marked once."
            ),
            note=True,
        )
    )
    if stats["goodput"]:
        blocks.append(Heading("Long-lived flows: goodput"))
        if not stats.get("pairs_flows", True):
            blocks.append(Paragraph("Not comparable flow by flow: the runs route flows differently.", note=True))
        blocks.append(
            Table(
                ["flow", "fctlab", other, "ratio"],
                [
                    [
                        str(g["flow_id"]),
                        _fmt_iv(g["fctlab"], lambda x: f"{x / 1e6:.1f} Mbps"),
                        _fmt_iv(g["other"], lambda x: f"{x / 1e6:.1f} Mbps"),
                        _ratio(g["fctlab"][0], g["other"][0]),
                    ]
                    for g in stats["goodput"]
                ],
                text=True,
            )
        )
    blocks.append(Heading("Flow by flow"))
    if not stats.get("pairs_flows", True):
        blocks.append(
            Paragraph(
                f"Not comparable flow by flow (and not graded): {other} and fctlab route a flow over different "
                "equal-cost paths, so the same flow meets different traffic; the verdict grades the distributions.",
                note=True,
            )
        )
    blocks.append(
        Table(
            ["seed", "flows completed in both", "median ratio", "10th-90th percentile", "within 10%"],
            [
                [
                    str(s),
                    str(p["n"]),
                    f"{p.get('median_ratio', math.nan):.3f}",
                    f"{p.get('p10_ratio', math.nan):.3f} - {p.get('p90_ratio', math.nan):.3f}",
                    f"{p.get('within_10pct', math.nan):.0%}",
                ]
                for s, p in zip(stats["seeds"], stats["paired"])
            ],
            text=True,
        )
    )
    return blocks


def write_report(
    scenario: str,
    against: str,
    out: Path,
    runs: list,
    plan,
    notes: list,
    wall_note: str = DEFAULT_WALL_NOTE,
    pairs_flows: bool = True,
) -> dict:
    """Computes the statistics, writes crosscheck.json, report.md, report.html and the plots.
    `pairs_flows` False: the two runs route flows differently, so the flow-by-flow table and the
    long-lived flows' goodput are marked as not comparable (they are never graded)."""
    import pandas as pd  # lazy: pandas and matplotlib (fctlab.report.plots) cost 550 ms of start-up

    from ..report import plots
    from ..report.render import Bullets, Heading, Image, Paragraph, render_html, render_markdown

    stats = statistics(runs, plan)
    stats.update({"scenario": scenario, "against": against, "notes": list(notes), "pairs_flows": pairs_flows})
    other = against
    blocks = [
        Paragraph(
            f"`{scenario}` run by fctlab and by {other} on the identical flow list ({len(plan.flows)} flows), "
            f"seeds {', '.join(map(str, stats['seeds']))}. Figures are means over seeds ± the 95% interval; "
            "ratios are fctlab / " + other + "."
        ),
    ]
    if notes:
        blocks += [Heading("Where the two runs differ in set-up"), Bullets(list(notes))]
    blocks += _stat_blocks(stats, plan, other)
    fcts = {}
    for label, attr in (("fctlab", "fctlab_dir"), (other, "other_dir")):
        v = [
            pd.read_parquet(getattr(r, attr) / "flows.parquet", columns=["fct_s"])["fct_s"].to_numpy(dtype=float)
            for r in runs
        ]
        fcts[label] = np.concatenate(v) if v else np.array([])
    png = plots.fct_cdf(fcts)
    if png:
        blocks.insert(1, Image("fct_cdf.png", png, "FCT distributions of both simulators, all seeds"))
    w = stats["wall_s"]
    blocks.append(
        Paragraph(
            f"Wall time per seed: fctlab {_fmt_iv(w['fctlab'], _fmt_s)}, {other} {_fmt_iv(w['other'], _fmt_s)} "
            f"{wall_note}, the crosscheck's own work (translation, "
            f"writing both runs) {_fmt_iv(w['own'], _fmt_s)}.",
            note=True,
        )
    )
    blocks.append(
        Paragraph(
            f"Regenerate: `fctlab crosscheck {scenario} --against {other} --out {out} --seeds {len(runs)}`", note=True
        )
    )
    title = f"Crosscheck: {Path(scenario).stem} in fctlab and {other}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.html").write_text(render_html(title, blocks))
    md = render_markdown(title, blocks)
    (out / "report.md").write_text(md)
    for blk in blocks:
        if isinstance(blk, Image):
            (out / blk.filename).write_bytes(blk.png)
    (out / "crosscheck.json").write_text(json.dumps(stats, indent=2, default=_json_default) + "\n")
    return stats


def _json_default(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    raise TypeError(type(x))


def suite_table(results: list, against: str, directory, out, seeds: int) -> str:
    """Markdown: per set-up, every graded figure with both simulators' values and the ratio."""
    lines = [f"| set-up | figure | {against} | fctlab | ratio | tolerance | within |", "|---|---|---|---|---|---|---|"]
    for cc in results:
        name = Path(cc.scenario).stem
        for c in cc.stats["checks"]:
            f = _fmt_s if c["unit"] == "s" else _count
            r = "inf" if math.isinf(c["ratio"]) else f"{c['ratio']:.2f}"
            lines.append(
                f"| {name} | {c['what']} | {f(c['other'])} | {f(c['fctlab'])} | {r} | {c['tolerance']:.0%} | "
                f"{'yes' if c['ok'] else '**no**'} |"
            )
        for g in cc.stats["goodput"]:
            a, o = g["fctlab"][0], g["other"][0]
            lines.append(
                f"| {name} | goodput of flow {g['flow_id']} | {o / 1e6:.1f} Mbps | {a / 1e6:.1f} Mbps | "
                f"{_ratio(a, o)} | - | - |"
            )
    lines.append("")
    lines.append(f"Regenerate: `fctlab crosscheck {directory} --against {against} --out {out} --seeds {seeds}`")
    return "\n".join(lines) + "\n"
