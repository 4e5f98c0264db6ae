"""The report of a sweep directory (``fctlab report DIR`` on a directory written by
``fctlab sweep``).

By default the figure data-center transport papers print: mean and 99th-percentile slowdown
(FCT / ideal FCT) per flow-size bucket against the first swept key (the load, usually), one
line per combination of the other swept keys (never averaged over a key that is not plotted),
each point the mean over seeds with a 95% Student-t interval, and the table behind it
(``slowdown_by_size.csv``). ``--metric`` plots one run-level metric instead."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .._extras import extra
from ..metrics import DEFAULT_BUCKETS, assign_buckets, describe_buckets, measured, parse_size
from ..numfmt import number
from ..stats import interval
from ..sweeps import short_key as _short
from ..sweepstore import check_store, refusal
from .render import Heading, Image, Paragraph, Table, render_html, render_markdown

#: Metrics computed from each run's flows (completed flows only), besides any numeric column
#: of runs.parquet.
FLOW_METRICS = {
    "fct_p99": ("p99 FCT (s)", lambda f: f["fct_s"].quantile(0.99)),
    "fct_median": ("median FCT (s)", lambda f: f["fct_s"].median()),
    "fct_mean": ("mean FCT (s)", lambda f: f["fct_s"].mean()),
    "slowdown_p99": ("p99 slowdown (FCT / ideal)", lambda f: (f["fct_s"] / f["ideal_fct_s"]).quantile(0.99)),
}


#: The default report: slowdown per size bucket.
BY_SIZE = "slowdown_by_size"


#: Statistics a metric spec may name.
STATS = {
    "mean": lambda x: x.mean(),
    "median": lambda x: x.median(),
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "count": lambda x: float(len(x)),
}
#: Columns a metric spec may name (slowdown is computed).
SPEC_COLUMNS = {
    "fct": ("FCT (s)", lambda f: f["fct_s"]),
    "slowdown": ("slowdown (FCT / ideal)", lambda f: f["fct_s"] / f["ideal_fct_s"]),
}


def parse_metric(spec: str):
    """``COLUMN:STAT[:FILTER]`` (``slowdown:p99:size<100KB``, ``fct:mean:size>=1MB``) as
    (label, function of a run's completed flows). STAT is mean, median, min, max, count or
    pNN (a percentile, ``p99``, ``p99.9``); FILTER compares the flow size with a size."""
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"--metric {spec!r}: expected COLUMN:STAT[:FILTER], e.g. slowdown:p99:size<100KB")
    col, stat = parts[0], parts[1]
    if col not in SPEC_COLUMNS:
        raise ValueError(f"--metric {spec!r}: column {col!r} is not one of {', '.join(SPEC_COLUMNS)}")
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)", stat)
    if m and 0 < float(m.group(1)) < 100:
        q = float(m.group(1)) / 100
        agg = lambda x: x.quantile(q)  # noqa: E731
    elif stat in STATS:
        agg = STATS[stat]
    else:
        raise ValueError(f"--metric {spec!r}: statistic {stat!r} is not mean, median, min, max, count or pNN (p99)")
    keep = lambda f: f  # noqa: E731
    label = f"{stat} {SPEC_COLUMNS[col][0]}"
    if len(parts) == 3:
        fm = re.fullmatch(r"size\s*(<=|>=|<|>)\s*(\S+)", parts[2])
        if not fm:
            raise ValueError(f"--metric {spec!r}: filter {parts[2]!r} is not size<SIZE, size>=SIZE, ...")
        try:
            op, limit = fm.group(1), parse_size(fm.group(2))
        except ValueError as e:
            raise ValueError(f"--metric {spec!r}: {e}") from None
        ops = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
        keep = lambda f: f[getattr(f["size_bytes"], ops[op])(limit)]  # noqa: E731
        label += f", flows of size {op} {fm.group(2)}"
    values = SPEC_COLUMNS[col][1]
    return label, lambda f: agg(values(keep(f)))


def is_sweep_dir(d) -> bool:
    return (Path(d) / "runs.parquet").is_file() and (Path(d) / "flows").is_dir()


def _swept(runs: pd.DataFrame) -> list:
    """The swept keys: the columns between run_id and seed, in order."""
    cols = list(runs.columns)
    return cols[cols.index("run_id") + 1 : cols.index("seed")]


def _resolve(flag: str, key: Optional[str], keys: list, d) -> Optional[str]:
    """A swept key named by its full or its last name (None stays None)."""
    if key is None or key in keys:
        return key
    match = [k for k in keys if _short(k, keys) == key]
    if not match:
        raise ValueError(f"{flag} {key!r}: not a swept key of {d} (swept: {', '.join(keys) or 'none'})")
    return match[0]


def _where(runs: pd.DataFrame, where: list, keys: list, d) -> pd.DataFrame:
    """The runs that match every ``key=value`` of `where` (values compared as text)."""
    for w in where:
        k, sep, v = w.partition("=")
        match = [c for c in keys if c == k or _short(c, keys) == k]
        if not sep or not match:
            raise ValueError(f"--where {w!r}: expected KEY=VALUE with a swept key of {d} (swept: {', '.join(keys)})")
        runs = runs[runs[match[0]].astype(str) == v]
        if runs.empty:
            raise ValueError(f"--where {w!r}: no completed run has {match[0]} = {v}")
    return runs


def _done_runs(d: Path, where: list) -> tuple:
    """The completed runs (those `where` selects) and the swept keys, once the store's files
    match their checksums (a store that fails its check is an error naming the first file)."""
    problems = check_store(d)[0]
    if problems:
        raise ValueError(refusal(d, problems))
    runs = pd.read_parquet(d / "runs.parquet")
    runs = runs[runs["status"] == "done"]
    if runs.empty:
        raise ValueError(f"{d}: no completed run in runs.parquet")
    keys = _swept(runs)
    return _where(runs, where, keys, d), keys


def _run_flows(d: Path, run_id: str) -> pd.DataFrame:
    """A run's measured flows (its [measure] window, if its summary has one)."""
    rd = d / "flows" / f"run_id={run_id}"
    f = pq.read_table(
        rd / "flows.parquet", columns=["size_bytes", "start_s", "fct_s", "ideal_fct_s", "completed"]
    ).to_pandas()
    summary = json.loads((rd / "summary.json").read_text()) if (rd / "summary.json").is_file() else {}
    return measured(f, summary.get("summary", summary))


def slowdown_by_size(d, x: Optional[str] = None, where: list = (), buckets=None) -> tuple:
    """Per run: the mean and 99th-percentile slowdown of its completed measured flows in each
    size bucket; then per (other swept values, x, bucket, statistic): the mean over seeds, the
    95% Student-t half-width and the seeds. Returns (table, per-run table, x, line keys)."""
    d = Path(d)
    runs, keys = _done_runs(d, list(where))
    varied = [k for k in keys if runs[k].nunique() > 1]
    if x is None:
        if not varied:
            raise ValueError(f"{d}: no swept key takes more than one value; nothing to plot against")
        x = varied[0]
    elif x not in keys:
        match = [k for k in keys if _short(k, keys) == x]
        if not match:
            raise ValueError(f"--x {x!r}: not a swept key of {d} (swept: {', '.join(keys) or 'none'})")
        x = match[0]
    lines = [k for k in varied if k != x]
    buckets = buckets or DEFAULT_BUCKETS
    per_run = []
    fcts: dict = {}  # (line values..., x) -> FCTs of the completed measured flows, all seeds
    for _, r in runs.iterrows():
        f = _run_flows(d, r["run_id"])
        f = f[f["completed"].astype(bool) & f["size_bytes"].notna()]
        fcts.setdefault(tuple(r[k] for k in lines + [x]), []).extend(f["fct_s"].tolist())
        f = f.assign(bucket=assign_buckets(f["size_bytes"], buckets), slowdown=f["fct_s"] / f["ideal_fct_s"])
        for b, part in f.groupby("bucket", observed=True):
            for stat, v in (("mean", part["slowdown"].mean()), ("p99", part["slowdown"].quantile(0.99))):
                per_run.append(
                    {
                        **{k: r[k] for k in keys},
                        "seed": r["seed"],
                        "run_id": r["run_id"],
                        "bucket": b,
                        "stat": stat,
                        "flows": len(part),
                        "slowdown": float(v),
                    }
                )
    if not per_run:
        raise ValueError(f"{d}: no completed flow with a size in any run")
    pr = pd.DataFrame(per_run)
    order = {b[0]: i for i, b in enumerate(buckets)}
    rows = []
    for gkey, part in pr.groupby(lines + [x, "bucket", "stat"], dropna=False, sort=False):
        mean, half = interval(part["slowdown"].tolist())
        rows.append(
            {
                **dict(zip(lines + [x, "bucket", "stat"], gkey if isinstance(gkey, tuple) else (gkey,))),
                "mean": mean,
                "ci95": half,
                "seeds": int(part["seed"].nunique()),
                "flows": int(part["flows"].sum()),
            }
        )
    t = pd.DataFrame(rows)
    t = t.assign(_b=t["bucket"].map(order)).sort_values(["stat", "_b"] + lines + [x]).drop(columns="_b")
    return t.reset_index(drop=True), pr, x, lines, fcts


def _cdf_figure(fcts: dict, x: str, lines: list, keys: list) -> bytes:
    """FCT CDFs, one panel per value of `x`, one line per combination of `lines`."""
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullFormatter

    xs = list(dict.fromkeys(k[-1] for k in fcts))
    try:
        xs = sorted(xs)
    except TypeError:
        pass
    fig = Figure(figsize=(3.2 * len(xs), 3.2), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(xs), squeeze=False)[0]
    for ax, xv in zip(axes, xs):
        for key, vals in fcts.items():
            if key[-1] != xv or not vals:
                continue
            v = np.sort(np.asarray(vals))
            label = ", ".join(f"{_short(k, keys)}={val}" for k, val in zip(lines, key[:-1])) or "all runs"
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # (minor labels collide on short ranges)
        ax.set_title(f"{_short(x, keys)} = {xv}", fontsize=9)
        ax.set_xlabel("FCT (s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of flows")
    if lines:
        axes[-1].legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def sweep_table(d, metric: str, x: Optional[str], by: Optional[str], where: list = ()):
    """Per (by, x): the metric's mean over seeds, its 95% interval half-width and the number of
    seeds. Returns (table, x, by, metric label)."""
    d = Path(d)
    runs, _ = _done_runs(d, list(where))
    keys = _swept(runs)
    varied = [k for k in keys if runs[k].nunique() > 1]
    x, by = (_resolve(name, k, keys, d) for name, k in (("--x", x), ("--by", by)))
    if x is None:
        if not varied:
            raise ValueError(f"{d}: no swept key takes more than one value; nothing to plot against")
        x = varied[0]
    if by is None:
        rest = [k for k in varied if k != x]
        by = rest[0] if rest else None
    spec = parse_metric(metric) if ":" in metric else None
    if metric in FLOW_METRICS or spec is not None:
        label, fn = FLOW_METRICS[metric] if spec is None else spec
        vals = []
        for rid in runs["run_id"]:
            f = _run_flows(d, rid)
            f = f[f["completed"].astype(bool)]
            vals.append(float(fn(f)) if len(f) else math.nan)
        runs = runs.assign(_m=vals)
    elif metric in runs.columns and pd.api.types.is_numeric_dtype(runs[metric]):
        label = metric
        runs = runs.assign(_m=runs[metric].astype(float))
    else:
        numeric = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c]) and c not in keys and c != "seed"]
        raise ValueError(f"--metric {metric!r}: not known (known: {', '.join(list(FLOW_METRICS) + numeric)})")
    # Every other varied key is a line too (never averaged over a key that is not plotted).
    others = [k for k in varied if k not in (x, by)]
    group = ([by] if by else []) + others + [x]
    rows = []
    for gkey, part in runs.groupby(group, dropna=False, sort=True):
        mean, half = interval(part["_m"].tolist())
        rows.append(
            {
                **dict(zip(group, gkey if isinstance(gkey, tuple) else (gkey,))),
                "mean": mean,
                "ci95": half,
                "count": len(part),
            }
        )
    t = pd.DataFrame(rows)
    if others:
        t[by or "lines"] = t[([by] if by else []) + others].astype(str).agg(", ".join, axis=1)
        by = by or "lines"
    return t, x, by, label


def _line_styles(t: pd.DataFrame, lines: list, keys: list) -> dict:
    """A colour and marker per line, distinct for up to 20 lines (the default cycle repeats
    after 10)."""
    if not lines:
        return {}
    labels = list(dict.fromkeys(_line_label(r, lines, keys) for _, r in t.iterrows()))
    if len(labels) <= 10:
        return {label: {"marker": "o"} for label in labels}
    with extra("plot"):
        from matplotlib import colormaps  # lazy: matplotlib costs 300 ms of start-up

    colors = colormaps["tab20"].colors
    markers = "osD^v<>px*h"
    return {label: {"color": colors[i % 20], "marker": markers[i % len(markers)]} for i, label in enumerate(labels)}


def _line_label(row, lines: list, keys: list) -> str:
    return ", ".join(f"{_short(k, keys)}={row[k]}" for k in lines) or "all runs"


def _by_size_blocks(d, out: Path, x: Optional[str], where: list) -> list:
    """The slowdown-by-size figure, its note and its table; writes the PNG and the CSVs."""
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure

    t, per_run, x, lines, fcts = slowdown_by_size(d, x=x, where=where)
    keys = lines + [x]
    t.to_csv(out / "slowdown_by_size.csv", index=False)
    per_run.to_csv(out / "slowdown_by_size_runs.csv", index=False)
    buckets = list(dict.fromkeys(t["bucket"]))
    stats = ["mean", "p99"]
    fig = Figure(figsize=(3.2 * len(buckets), 5.6), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(stats), len(buckets), squeeze=False)
    numeric_x = pd.api.types.is_numeric_dtype(t[x])
    styles = _line_styles(t, lines, keys)
    for i, stat in enumerate(stats):
        for j, b in enumerate(buckets):
            ax = axes[i][j]
            part = t[(t["stat"] == stat) & (t["bucket"] == b)]
            groups = [(None, part)] if not lines else list(part.groupby(lines, dropna=False, sort=False))
            for _, g in groups:
                g = g.sort_values(x) if numeric_x else g
                xs = g[x] if numeric_x else g[x].astype(str)
                label = _line_label(g.iloc[0], lines, keys)
                ax.errorbar(xs, g["mean"], yerr=g["ci95"].fillna(0.0), capsize=3, label=label, **styles.get(label, {}))
            # Slowdowns that span more than a factor of 20 read better on a log scale.
            positive = part["mean"][part["mean"] > 0]
            if len(positive) and positive.max() > 20 * positive.min():
                ax.set_yscale("log")
            ax.set_title(f"{b}: {stat} slowdown", fontsize=9)
            ax.set_xlabel(_short(x, keys))
            if j == 0:
                ax.set_ylabel(f"{stat} slowdown (FCT / ideal)")
            ax.grid(alpha=0.3)
    if lines:
        axes[0][-1].legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    (out / "slowdown_by_size.png").write_bytes(png)
    cdf_png = _cdf_figure(fcts, x, lines, keys)
    (out / "fct_cdf.png").write_bytes(cdf_png)
    seeds = int(t["seeds"].min())
    few = (
        f" Some points have fewer than 3 seeds (as few as {seeds}): their intervals are wide or, with one seed, absent."
        if seeds < 3
        else ""
    )
    return [
        Heading(f"Slowdown by flow size against {_short(x, keys)}"),
        Paragraph(
            f"Sweep `{d}`: each point is the mean over seeds of one run's mean (top) or 99th-percentile (bottom) "
            "slowdown (FCT divided by the ideal FCT of the flow alone on its path) of its completed flows in the size "
            f"bucket; the bars are 95% Student-t intervals over the seeds.{few} One line per combination of the other "
            f"swept keys ({', '.join(_short(k, keys) for k in lines) or 'none'}). Buckets: "
            + "; ".join(describe_buckets())
            + ". Runs with a [measure] window count the flows that started in it. The table is "
            "`slowdown_by_size.csv`, each run's values `slowdown_by_size_runs.csv`; failed runs are left out."
        ),
        Image("slowdown_by_size.png", png, f"Slowdown by flow size against {_short(x, keys)}"),
        Paragraph(
            f"The distribution of FCTs behind it, one panel per {_short(x, keys)}: the completed measured flows of "
            "all seeds of each line, pooled."
        ),
        Image("fct_cdf.png", cdf_png, f"FCT CDFs per {_short(x, keys)}"),
        Table(
            [_short(k, keys) for k in lines]
            + [_short(x, keys), "bucket", "statistic", "mean", "95% +-", "seeds", "flows"],
            [
                [str(r[k]) for k in lines]
                + [
                    str(r[x]),
                    r["bucket"],
                    r["stat"],
                    number(r["mean"]),
                    number(r["ci95"]),
                    str(r["seeds"]),
                    f"{r['flows']:,}",
                ]
                for _, r in t.iterrows()
            ],
        ),
    ]


def write_sweep_report(
    d,
    out,
    metric: str = BY_SIZE,
    x: Optional[str] = None,
    by: Optional[str] = None,
    fmt: str = "html",
    title: Optional[str] = None,
    where: list = (),
) -> Path:
    """Writes the report of sweep directory `d` into `out`; returns its path."""
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    if metric == BY_SIZE:
        if by is not None:
            raise ValueError("--by applies to --metric plots; the slowdown-by-size figure draws every combination")
        blocks = _by_size_blocks(d, outp, x, list(where))
    else:
        blocks = _metric_blocks(d, outp, metric, x, by, list(where))
    title = title or f"Sweep report: {Path(d).name}"
    if fmt == "md":
        path = outp / "report.md"
        path.write_text(render_markdown(title, blocks))
    else:
        path = outp / "report.html"
        path.write_text(render_html(title, blocks))
    return path


def _metric_blocks(d, outp: Path, metric: str, x, by, where: list) -> list:
    """One run-level metric against `x`, one line per value of `by` (and of every other
    varied key)."""
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure

    t, x, by, label = sweep_table(d, metric, x, by, where)
    fig = Figure(figsize=(7, 4), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    lines = [(None, t)] if by is None else list(t.groupby(by, dropna=False))
    numeric_x = pd.api.types.is_numeric_dtype(t[x])
    for val, part in lines:
        part = part.sort_values(x) if numeric_x else part
        xs = part[x] if numeric_x else part[x].astype(str)
        ax.errorbar(
            xs,
            part["mean"],
            yerr=part["ci95"].fillna(0.0),
            marker="o",
            capsize=3,
            label=None if by is None else f"{by} = {val}",
        )
    ax.set_xlabel(x)
    ax.set_ylabel(label)
    if by is not None:
        ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    (outp / "sweep.png").write_bytes(png)
    seeds = int(t["count"].max())
    return [
        Heading(f"{label} against {x}" + (f", by {by}" if by else "")),
        Paragraph(
            f"Sweep `{d}`: each point is the mean over the seeds of the runs with those values (up to {seeds}); "
            "the bars are 95% Student-t intervals of that mean (none with one seed). Every swept key that varies "
            "is either the x axis or a line. Failed runs are left out."
        ),
        Image("sweep.png", png, f"{label} against {x}"),
        Table(
            ([by] if by else []) + [x, "mean", "95% interval +-", "seeds"],
            [
                ([str(r[by])] if by else []) + [str(r[x]), number(r["mean"]), number(r["ci95"]), str(int(r["count"]))]
                for _, r in t.iterrows()
            ],
        ),
    ]
