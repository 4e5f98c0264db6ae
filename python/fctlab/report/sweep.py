"""The report of a sweep directory (``fctlab report DIR`` on a directory written by
``fctlab sweep``).

By default the figure data-center transport papers print: mean and 99th-percentile slowdown
(FCT / ideal FCT) per flow-size bucket against the swept numeric key (the load, usually), one
line per combination of the other swept keys (never averaged over a key that is not plotted),
each point the geometric mean over seeds with a 95% interval computed on the log scale, and
the table behind it (``slowdown_by_size.csv``). ``--metric`` plots one run-level metric
instead."""

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
from ..stats import interval, log_interval
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


#: Units of quantities as scenario files write them (lower case), by the unit their axis shows.
_UNITS = {
    "bps": {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12},
    "s": {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0},
    "B": {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30},
    "pkt": {"pkt": 1.0, "pkts": 1.0, "packet": 1.0, "packets": 1.0, "p": 1.0},
}


def quantity(values: pd.Series) -> Optional[tuple]:
    """A swept column as numbers: (floats, unit) for numbers (unit None) or for strings that
    are all quantities of one kind ("10Gbps", "25us", "100pkt"; in bps, s, B or pkt); None
    for categories (protocols, schedulers, base files)."""
    if pd.api.types.is_bool_dtype(values):
        return None
    if pd.api.types.is_numeric_dtype(values):
        return values.astype(float), None
    parsed = values.astype(str).str.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z\u00b5]+)\s*")
    if not parsed.all():
        return None
    parts = values.astype(str).str.extract(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z\u00b5]+)\s*")
    # Sizes are case-sensitive (Mb is a rate's bit, not a size): "B"-ending units only.
    for unit, scale in _UNITS.items():
        units = parts[1] if unit != "B" else parts[1].where(parts[1].str.endswith("B"))
        factor = units.str.lower().map(scale)
        if factor.notna().all():
            return parts[0].astype(float) * factor, unit
    return None


def axis_label(key: str, keys: list, runs: pd.DataFrame) -> str:
    """A swept key's short name with the unit its axis shows ("load", "link_rate (bps)")."""
    q = quantity(runs[key]) if key in runs.columns else None
    return _short(key, keys) + (f" ({q[1]})" if q and q[1] else "")


def _pick_x(runs: pd.DataFrame, keys: list, x: Optional[str], d, taken: tuple = ()) -> str:
    """The x axis: `x` (full or last name) if given, else the one varied numeric key (the
    load, a rate); with none, the first varied key. Two or more numeric keys need --x."""
    if x is not None:
        return _resolve("--x", x, keys, d)
    varied = [k for k in keys if runs[k].nunique() > 1 and k not in taken]
    if not varied:
        raise ValueError(f"{d}: no swept key takes more than one value; nothing to plot against")
    numeric = [k for k in varied if quantity(runs[k]) is not None]
    if len(numeric) > 1:
        names = ", ".join(_short(k, keys) for k in numeric)
        raise ValueError(
            f"{d}: {len(numeric)} swept keys are numeric ({names}); choose the x axis with --x, one of {names}"
        )
    return numeric[0] if numeric else varied[0]


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


#: Fewest seeds a point needs for its interval to be drawn (fewer: each seed's value is).
MIN_SEEDS = 3


def _seed_interval(values: list, floor: float) -> tuple:
    """(geometric mean, low, high) over seeds on the log scale (:func:`log_interval`); the
    bounds are NaN with fewer than :data:`MIN_SEEDS` values."""
    gmean, lo, hi = log_interval(values, floor=floor)
    return (gmean, lo, hi) if len(values) >= MIN_SEEDS else (gmean, math.nan, math.nan)


def slowdown_by_size(d, x: Optional[str] = None, where: list = (), buckets=None) -> tuple:
    """Per run: the mean and 99th-percentile slowdown of its completed measured flows in each
    size bucket; then per (other swept values, x, bucket, statistic): the geometric mean over
    seeds, the bounds of its 95% interval on the log scale (``lo``, ``hi``: clipped at 1, NaN
    with fewer than 3 seeds) and the seeds. Returns (table, per-run table, x, line keys, FCTs)."""
    d = Path(d)
    runs, keys = _done_runs(d, list(where))
    varied = [k for k in keys if runs[k].nunique() > 1]
    x = _pick_x(runs, keys, x, d)
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
        gmean, lo, hi = _seed_interval(part["slowdown"].tolist(), floor=1.0)
        rows.append(
            {
                **dict(zip(lines + [x, "bucket", "stat"], gkey if isinstance(gkey, tuple) else (gkey,))),
                "gmean": gmean,
                "lo": lo,
                "hi": hi,
                "seeds": int(part["seed"].nunique()),
                "flows": int(part["flows"].sum()),
            }
        )
    t = pd.DataFrame(rows)
    t = _sorted(t.assign(_b=t["bucket"].map(order)), ["stat", "_b"] + lines, x).drop(columns="_b")
    return t, pr, x, lines, fcts


def _sorted(t: pd.DataFrame, by: list, x: str) -> pd.DataFrame:
    """`t` sorted by the columns `by`, then by `x` in its axis order (quantities by value:
    "2Gbps" before "10Gbps")."""
    q = quantity(t[x])
    t = t.assign(_x=q[0] if q is not None else t[x]).sort_values(by + ["_x"], kind="stable")
    return t.drop(columns="_x").reset_index(drop=True)


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
    fig = Figure(figsize=(3.2 * len(xs) + (2.2 if lines else 0), 3.2), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(xs), squeeze=False)[0]
    colors: dict = {}  # line -> colour, the same in every panel
    name = {k: ", ".join(str(val) for val in k[:-1]) or "all runs" for k in fcts}
    sorted_fcts = {k: np.sort(np.asarray(vals, dtype=float)) for k, vals in fcts.items()}
    same = legend_labels(
        pd.DataFrame(
            [{"line": name[k], "x": str(k[-1]), "fcts": hash(v.tobytes()), "seeds": 0} for k, v in sorted_fcts.items()]
        )
    )
    for ax, xv in zip(axes, xs):
        for key, v in sorted_fcts.items():
            if key[-1] != xv or not len(v):
                continue
            color = colors.setdefault(name[key], f"C{len(colors) % 10}")
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=same[name[key]], color=color)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # (minor labels collide on short ranges)
        ax.set_title(f"{_short(x, keys)} = {xv}", fontsize=9)
        ax.set_xlabel("FCT (s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of flows")
    handles = {h.get_label(): h for ax in axes for h in ax.get_lines()}
    _legend(fig, list(handles.values()), list(handles), ", ".join(_short(k, keys) for k in lines))
    return _png(fig)


def _quantity_of(metric: str, spec) -> Optional[str]:
    """The quantity a metric measures, "slowdown" or "fct" (averaged on the log scale), or
    None for others."""
    if spec is None:
        return {"slowdown_p99": "slowdown"}.get(metric, "fct" if metric in FLOW_METRICS else None)
    col, stat = metric.split(":")[:2]
    return None if stat == "count" else col


def sweep_table(d, metric: str, x: Optional[str], by: Optional[str], where: list = ()):
    """Per (by, x): the metric over seeds and the number of seeds. Slowdown and FCT metrics: the
    geometric mean and its 95% interval on the log scale (slowdown bounds clipped at 1); other
    metrics: the mean and its 95% Student-t interval; ``lo`` and ``hi`` NaN with fewer than 3
    seeds. Returns (table, per-run table, x, by, metric label, quantity: "slowdown", "fct" or
    None)."""
    d = Path(d)
    runs, _ = _done_runs(d, list(where))
    keys = _swept(runs)
    varied = [k for k in keys if runs[k].nunique() > 1]
    by = _resolve("--by", by, keys, d)
    x = _pick_x(runs, keys, x, d, taken=(by,))
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
    kind = _quantity_of(metric, spec)
    # Every other varied key is a line too (never averaged over a key that is not plotted).
    others = [k for k in varied if k not in (x, by)]
    group = ([by] if by else []) + others + [x]
    rows = []
    for gkey, part in runs.groupby(group, dropna=False, sort=True):
        vals = part["_m"].tolist()
        if kind is None:
            mean, half = interval(vals)
            lo, hi = (mean - half, mean + half) if len(vals) >= MIN_SEEDS else (math.nan, math.nan)
        else:
            mean, lo, hi = _seed_interval(vals, floor=1.0 if kind == "slowdown" else 0.0)
        rows.append(
            {**dict(zip(group, gkey if isinstance(gkey, tuple) else (gkey,))), "mean": mean, "lo": lo, "hi": hi}
        )
        rows[-1]["seeds"] = len(part)
    t = _sorted(pd.DataFrame(rows), group[:-1], x)
    per_run = runs[["run_id"] + group + ["seed", "_m"]].rename(columns={"_m": "value"})
    if others:
        for frame in (t, per_run):
            frame[by or "lines"] = frame[([by] if by else []) + others].astype(str).agg(", ".join, axis=1)
        by = by or "lines"
    return t, per_run, x, by, label, kind


def _line_names(t: pd.DataFrame, lines: list) -> pd.Series:
    """Each row's line: its values of the line keys ("tcp, srpt"), or "all runs"."""
    if not lines:
        return pd.Series("all runs", index=t.index)
    return t[lines].astype(str).agg(", ".join, axis=1)


def _x_values(t: pd.DataFrame, x: str) -> pd.Series:
    """The x column as the axis draws it: numbers (quantities in their axis unit) or text."""
    q = quantity(t[x])
    return q[0] if q is not None else t[x].astype(str)


def plotted(t: pd.DataFrame, per_run: pd.DataFrame, x: str, lines: list, value: str, panels: list = ()) -> tuple:
    """The data a sweep figure draws, tidy: (points, seeds). points has columns `panels`, x,
    line, mean, lo, hi, seeds (lo and hi NaN where no interval is drawn); seeds has one row per
    run: `panels`, x, line, seed, value (drawn as small markers where a point has fewer than
    3 seeds). `t` is the aggregated table (its mean in column ``gmean`` or ``mean``), `per_run`
    the runs' values in column `value`."""
    mean = "gmean" if "gmean" in t.columns else "mean"
    points = t[list(panels)].assign(
        x=_x_values(t, x), line=_line_names(t, lines), mean=t[mean], lo=t["lo"], hi=t["hi"], seeds=t["seeds"]
    )
    seeds = per_run[list(panels)].assign(
        x=_x_values(per_run, x), line=_line_names(per_run, lines), seed=per_run["seed"], value=per_run[value]
    )
    return points.reset_index(drop=True), seeds.reset_index(drop=True)


def legend_labels(points: pd.DataFrame) -> dict:
    """Each line's legend label: its name, and for a line drawn exactly over an earlier one
    (the same values at every point) that line's name too ("tcp, srpt (same as tcp, tcp)")."""
    first: dict = {}
    labels = {}
    for name, part in points.drop(columns=["seeds"]).groupby("line", sort=False):
        sig = tuple(part.drop(columns=["line"]).astype(str).itertuples(index=False))
        labels[name] = name + (f" (same as {first[sig]})" if sig in first else "")
        first.setdefault(sig, name)
    return labels


def _draw(axes: dict, points: pd.DataFrame, seeds: pd.DataFrame, panels: list, log_y: bool) -> tuple:
    """Draws each line in its panel's axes (`axes`: panel values -> axes): the mean, its
    interval where there is one, each seed's value where there is none. Returns the legend's
    (handles, labels), a line drawn over another named with it."""
    names = list(dict.fromkeys(points["line"]))
    if len(names) <= 10:
        styles = {n: {"color": f"C{i}", "marker": "o"} for i, n in enumerate(names)}
    else:
        with extra("plot"):
            from matplotlib import colormaps  # lazy: matplotlib costs 300 ms of start-up

        colors, markers = colormaps["tab20"].colors, "osD^v<>px*h"
        styles = {n: {"color": colors[i % 20], "marker": markers[i % len(markers)]} for i, n in enumerate(names)}
    label = legend_labels(points)
    # Quantities that span decades (rates, sizes) read better on a log x axis.
    xs = points["x"] if pd.api.types.is_numeric_dtype(points["x"]) else pd.Series(dtype=float)
    log_x = bool(len(xs)) and xs.min() > 0 and xs.max() >= 10 * xs.min()
    joined = "-" if pd.api.types.is_numeric_dtype(points["x"]) else "none"  # (categories are not joined)
    handles = {}
    for pk, ax in axes.items():
        sel = np.ones(len(points), bool) if not panels else (points[panels] == pd.Series(pk, index=panels)).all(axis=1)
        ssel = np.ones(len(seeds), bool) if not panels else (seeds[panels] == pd.Series(pk, index=panels)).all(axis=1)
        for name in names:
            g = points[sel & (points["line"] == name)]
            g = g.sort_values("x") if pd.api.types.is_numeric_dtype(g["x"]) else g
            if g.empty:
                continue
            (h,) = ax.plot(g["x"], g["mean"], ls=joined, **styles[name])
            handles.setdefault(name, h)
            ok = g["lo"].notna() & g["hi"].notna()
            if ok.any():
                lo, hi = g["mean"][ok] - g["lo"][ok], g["hi"][ok] - g["mean"][ok]
                ax.errorbar(
                    g["x"][ok], g["mean"][ok], yerr=[lo, hi], fmt="none", capsize=3, color=styles[name]["color"]
                )
            few = seeds[ssel & (seeds["line"] == name) & seeds["x"].isin(g["x"][~ok])]
            if len(few):
                ax.plot(few["x"], few["value"], ls="none", marker=".", ms=4, alpha=0.6, color=styles[name]["color"])
        if log_y or log_x:
            from .plots import _plain_log_ticks  # lazy: fctlab.report.plots loads matplotlib at its top

            for axis, set_scale, log in ((ax.yaxis, ax.set_yscale, log_y), (ax.xaxis, ax.set_xscale, log_x)):
                if log:
                    set_scale("log")
                    _plain_log_ticks(axis)
        ax.grid(alpha=0.3)
    return list(handles.values()), [label[n] for n in handles]


def _legend(fig, handles: list, labels: list, title: str) -> None:
    """The legend right of the axes, outside the data (the figure is made wider for it)."""
    if len(labels) > 1 or labels != ["all runs"]:
        fig.legend(handles, labels, title=title, loc="outside right upper", fontsize=7, title_fontsize=7)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def slowdown_figure(t: pd.DataFrame, per_run: pd.DataFrame, x: str, lines: list) -> tuple:
    """The slowdown-by-size figure of :func:`slowdown_by_size`'s tables: a panel per bucket
    (columns) and statistic (rows), log y axes. Returns (PNG bytes, points, seeds), the last
    two the data drawn (:func:`plotted`)."""
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure

    keys = lines + [x]
    points, seeds = plotted(t, per_run, x, lines, "slowdown", panels=["bucket", "stat"])
    buckets = list(dict.fromkeys(t["bucket"]))
    stats = ["mean", "p99"]
    fig = Figure(figsize=(3.2 * len(buckets) + (2.2 if lines else 0), 5.6), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(len(stats), len(buckets), squeeze=False)
    axes = {(b, stat): grid[i][j] for i, stat in enumerate(stats) for j, b in enumerate(buckets)}
    handles, labels = _draw(axes, points, seeds, ["bucket", "stat"], log_y=True)
    for (b, stat), ax in axes.items():
        ax.set_title(f"{b}: {stat} slowdown", fontsize=9)
        ax.set_xlabel(axis_label(x, keys, t))
        if b == buckets[0]:
            ax.set_ylabel(f"{stat} slowdown (FCT / ideal)")
    _legend(fig, handles, labels, ", ".join(_short(k, keys) for k in lines))
    return _png(fig), points, seeds


#: How the figures' points and intervals are computed (the reports' text says it).
LOG_METHOD = (
    "each point is the geometric mean over seeds, and its bars the 95% Student-t interval of the "
    "logarithms of the seeds' values, exponentiated (so never below 0, and for slowdowns clipped "
    "at 1); a point with fewer than 3 seeds has no bars: each seed's value is drawn as a small marker"
)


def _by_size_blocks(d, out: Path, x: Optional[str], where: list) -> list:
    """The slowdown-by-size figure, its note and its table; writes the PNG and the CSVs."""
    t, per_run, x, lines, fcts = slowdown_by_size(d, x=x, where=where)
    keys = lines + [x]
    t.to_csv(out / "slowdown_by_size.csv", index=False)
    per_run.to_csv(out / "slowdown_by_size_runs.csv", index=False)
    png, _, _ = slowdown_figure(t, per_run, x, lines)
    (out / "slowdown_by_size.png").write_bytes(png)
    cdf_png = _cdf_figure(fcts, x, lines, keys)
    (out / "fct_cdf.png").write_bytes(cdf_png)
    seeds = int(t["seeds"].min())
    few = f" Some points have fewer than 3 seeds (as few as {seeds}): no bars there." if seeds < MIN_SEEDS else ""
    xl = axis_label(x, keys, t)
    return [
        Heading(f"Slowdown by flow size against {xl}"),
        Paragraph(
            f"Sweep `{d}`: one run's mean (top) or 99th-percentile (bottom) slowdown (FCT divided by the ideal FCT "
            f"of the flow alone on its path) of its completed flows in the size bucket; {LOG_METHOD}. Log y axes."
            f"{few} One line per combination of the other swept keys "
            f"({', '.join(_short(k, keys) for k in lines) or 'none'}). Buckets: "
            + "; ".join(describe_buckets())
            + ". Runs with a [measure] window count the flows that started in it. The table is "
            "`slowdown_by_size.csv`, each run's values `slowdown_by_size_runs.csv`; failed runs are left out."
        ),
        Image("slowdown_by_size.png", png, f"Slowdown by flow size against {xl}: geometric means over seeds"),
        Paragraph(
            f"The distribution of FCTs behind it, one panel per {_short(x, keys)}: the completed measured flows of "
            "all seeds of each line, pooled."
        ),
        Image("fct_cdf.png", cdf_png, f"FCT CDFs per {_short(x, keys)}"),
        Table(
            [_short(k, keys) for k in lines]
            + [xl, "bucket", "statistic", "geometric mean", "95% low", "95% high", "seeds", "flows"],
            [
                [str(r[k]) for k in lines]
                + [
                    str(r[x]),
                    r["bucket"],
                    r["stat"],
                    number(r["gmean"]),
                    number(r["lo"]),
                    number(r["hi"]),
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
    with extra("plot"):  # a missing matplotlib is said before anything is written
        import matplotlib  # noqa: F401  # lazy: matplotlib costs 300 ms of start-up
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
    varied key); writes the figure and the data it draws (``sweep.csv``)."""
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure

    t, per_run, x, by, label, kind = sweep_table(d, metric, x, by, where)
    keys = [k for k in (by, x) if k]
    lines = [by] if by else []
    points, seeds = plotted(t, per_run, x, lines, "value")
    fig = Figure(figsize=(7 + (2.2 if by else 0), 4), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    handles, labels = _draw({(): ax}, points, seeds, [], log_y=kind is not None)
    xl = axis_label(x, keys, t)
    ax.set_xlabel(xl)
    ax.set_ylabel(label)
    _legend(fig, handles, labels, _short(by, keys) if by else "")
    png = _png(fig)
    (outp / "sweep.png").write_bytes(png)
    points.assign(x_key=x).to_csv(outp / "sweep.csv", index=False)
    seeds_n = int(t["seeds"].max())
    method = (
        LOG_METHOD + "; log y axis"
        if kind is not None
        else "each point is the mean over seeds, and its bars the 95% Student-t interval of that mean; a point "
        "with fewer than 3 seeds has no bars: each seed's value is drawn as a small marker"
    )
    byl = _short(by, keys) if by else None
    return [
        Heading(f"{label} against {xl}" + (f", by {byl}" if by else "")),
        Paragraph(
            f"Sweep `{d}`, the runs with each combination of values (up to {seeds_n} seeds): {method}. Every swept "
            "key that varies is either the x axis or a line. Failed runs are left out. The data drawn is `sweep.csv`."
        ),
        Image("sweep.png", png, f"{label} against {xl}"),
        Table(
            ([byl] if by else []) + [xl, "geometric mean" if kind else "mean", "95% low", "95% high", "seeds"],
            [
                ([str(r[by])] if by else [])
                + [str(r[x]), number(r["mean"]), number(r["lo"]), number(r["hi"]), str(int(r["seeds"]))]
                for _, r in t.iterrows()
            ],
        ),
    ]
