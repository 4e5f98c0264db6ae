"""The report of a sweep directory (``fctlab report DIR`` on a directory written by
``fctlab sweep``): a metric against one swept key, one line per value of another, with 95%
confidence intervals over the seeds, and the table behind the plot."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Optional

import pandas as pd

#: Metrics computed from each run's flows (completed flows only), besides any numeric column
#: of runs.parquet.
FLOW_METRICS = {
    "fct_p99": ("p99 FCT (s)", lambda f: f["fct_s"].quantile(0.99)),
    "fct_median": ("median FCT (s)", lambda f: f["fct_s"].median()),
    "fct_mean": ("mean FCT (s)", lambda f: f["fct_s"].mean()),
    "slowdown_p99": ("p99 slowdown (FCT / ideal)", lambda f: (f["fct_s"] / f["ideal_fct_s"]).quantile(0.99)),
}


def is_sweep_dir(d) -> bool:
    return (Path(d) / "runs.parquet").is_file() and (Path(d) / "flows").is_dir()


def _swept(runs: pd.DataFrame) -> list:
    """The swept keys: the columns between run_id and seed, in order."""
    cols = list(runs.columns)
    return cols[cols.index("run_id") + 1 : cols.index("seed")]


def sweep_table(d, metric: str, x: Optional[str], by: Optional[str]):
    """Per (by, x): the metric's mean over seeds, its 95% interval half-width and the number of
    seeds. Returns (table, x, by, metric label)."""
    import pyarrow.parquet as pq

    d = Path(d)
    runs = pd.read_parquet(d / "runs.parquet")
    runs = runs[runs["status"] == "done"]
    if runs.empty:
        raise ValueError(f"{d}: no completed run in runs.parquet")
    keys = _swept(runs)
    varied = [k for k in keys if runs[k].nunique() > 1]
    if x is None:
        if not varied:
            raise ValueError(f"{d}: no swept key takes more than one value; nothing to plot against")
        x = varied[0]
    if by is None:
        rest = [k for k in varied if k != x]
        by = rest[0] if rest else None
    for name, k in (("--x", x), ("--by", by)):
        if k is not None and k not in keys:
            raise ValueError(f"{name} {k!r}: not a swept key of {d} (swept: {', '.join(keys) or 'none'})")
    if metric in FLOW_METRICS:
        label, fn = FLOW_METRICS[metric]
        vals = []
        for rid in runs["run_id"]:
            f = pq.read_table(
                d / "flows" / f"run_id={rid}" / "flows.parquet", columns=["fct_s", "ideal_fct_s", "completed"]
            ).to_pandas()
            f = f[f["completed"].astype(bool)]
            vals.append(float(fn(f)) if len(f) else math.nan)
        runs = runs.assign(_m=vals)
    elif metric in runs.columns and pd.api.types.is_numeric_dtype(runs[metric]):
        label = metric
        runs = runs.assign(_m=runs[metric].astype(float))
    else:
        numeric = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c]) and c not in keys and c != "seed"]
        raise ValueError(f"--metric {metric!r}: not known (known: {', '.join(list(FLOW_METRICS) + numeric)})")
    group = [by, x] if by else [x]
    g = runs.groupby(group, dropna=False)["_m"]
    t = g.agg(["mean", "std", "count"]).reset_index()
    t["ci95"] = 1.96 * t["std"].fillna(0.0) / t["count"].pow(0.5)
    return t, x, by, label


def write_sweep_report(
    d,
    out,
    metric: str = "fct_p99",
    x: Optional[str] = None,
    by: Optional[str] = None,
    fmt: str = "html",
    title: Optional[str] = None,
) -> Path:
    """Writes the report of sweep directory `d` into `out`; returns its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..numfmt import number
    from .render import Heading, Image, Paragraph, Table, render_html, render_markdown

    t, x, by, label = sweep_table(d, metric, x, by)
    fig = Figure(figsize=(7, 4), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    lines = [(None, t)] if by is None else list(t.groupby(by, dropna=False))
    numeric_x = pd.api.types.is_numeric_dtype(t[x])
    for val, part in lines:
        part = part.sort_values(x) if numeric_x else part
        xs = part[x] if numeric_x else part[x].astype(str)
        ax.errorbar(
            xs, part["mean"], yerr=part["ci95"], marker="o", capsize=3, label=None if by is None else f"{by} = {val}"
        )
    ax.set_xlabel(x)
    ax.set_ylabel(label)
    if by is not None:
        ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    (outp / "sweep.png").write_bytes(png)
    seeds = int(t["count"].max())
    blocks = [
        Heading(f"{label} against {x}" + (f", by {by}" if by else "")),
        Paragraph(
            f"Sweep `{d}`: each point is the mean over the seeds of the runs with those values (up to {seeds}); "
            "the bars are 95% intervals of that mean (1.96 standard deviations over the square root of the "
            "number of seeds). Failed runs are left out."
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
    title = title or f"Sweep report: {Path(d).name}"
    if fmt == "md":
        path = outp / "report.md"
        path.write_text(render_markdown(title, blocks))
    else:
        path = outp / "report.html"
        path.write_text(render_html(title, blocks))
    return path
