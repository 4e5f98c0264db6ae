"""Report figures, drawn with matplotlib's Agg canvas.

Figures are built with the object-oriented API (``Figure`` plus
``FigureCanvasAgg``), never through ``pyplot``: nothing here changes the
caller's matplotlib backend or leaves figures open. Each function returns
PNG bytes, or ``None`` when there is nothing to draw.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .._extras import extra

with extra("plot"):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

__all__ = ["fct_cdf", "bucket_bars", "active_flows", "queue_lengths", "cwnd_traces", "utilization_bars"]

_DPI = 110


def _new(width: float = 8.0, height: float = 4.5, **kwargs) -> Figure:
    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return buf.getvalue()


def _time_unit(values: np.ndarray) -> tuple[float, str]:
    """The unit that reads naturally for times in seconds: (divisor, name)."""
    v = values[np.isfinite(values) & (values > 0)]
    mid = float(np.median(v)) if v.size else 1.0
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if mid >= scale:
            return scale, unit
    return 1e-9, "ns"


def _plain_log_ticks(axis) -> None:
    """Tick labels of a log axis as plain numbers (20, 50, 100), not 2 x 10^1: every decade,
    and 2 and 5 in between when the axis spans at most two decades."""

    def minor(v: float, _pos) -> str:
        lo, hi = sorted(axis.get_view_interval())
        if v <= 0 or lo <= 0 or math.log10(hi / lo) > 2.0:
            return ""
        mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9)
        return f"{v:g}" if round(mantissa) in (2, 5) and abs(mantissa - round(mantissa)) < 1e-6 else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(minor))


def fct_cdf(fcts: Mapping[str, np.ndarray]) -> bytes | None:
    """CDF of the FCT of completed flows, one line per run, log x axis.

    `fcts` maps a run label to its completed flows' FCTs in seconds. Runs
    without positive values are left out; ``None`` when none is left.
    """
    series = {k: np.sort(v[np.isfinite(v) & (v > 0)]) for k, v in fcts.items()}
    series = {k: v for k, v in series.items() if v.size}
    if not series:
        return None
    scale, unit = _time_unit(np.concatenate(list(series.values())))
    fig = _new()
    ax = fig.add_subplot()
    for label, x in series.items():
        y = np.arange(1, x.size + 1) / x.size
        x = x / scale
        ax.step(
            np.concatenate([[x[0]], x]), np.concatenate([[0.0], y]), where="post", label=f"{label} ({x.size} flows)"
        )
    ax.set_xscale("log")
    lo = min(float(x[0]) for x in series.values()) / scale
    hi = max(float(x[-1]) for x in series.values()) / scale
    if hi <= lo * 1.01:  # one completion time in all: a log axis needs a range around it
        ax.set_xlim(lo / 2, lo * 2)
    _plain_log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"Flow completion time ({unit})")
    ax.set_ylabel("Fraction of completed flows")
    ax.set_title("FCT distribution (completed flows)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    return _png(fig)


def bucket_bars(
    stats: Mapping[str, pd.DataFrame], metric: str, ylabel: str, title: str, *, plain_ticks: bool = False
) -> bytes | None:
    """Grouped bars of the median and p99 of `metric` per size bucket.

    `stats` maps a run label to :func:`fctlab.metrics.fct_stats` output grouped
    by ``"bucket"``; `metric` is ``"fct_s"`` or ``"slowdown"``. Two panels
    (median, p99), buckets on the x axis, one bar per run; log y axis, with
    tick labels as plain numbers (1, 10, 100) when `plain_ticks` is set.
    A run's bucket without completed flows gets no bar, and buckets without
    a value in any run are left out. ``None`` when no run has a value.
    """
    buckets: list[str] = []
    for df in stats.values():
        for b in df["bucket"]:
            if b not in buckets:
                buckets.append(b)
    panels = (("median", "Median"), ("p99", "99th percentile"))
    values = {
        stat: {
            label: df.set_index("bucket")[f"{stat}_{metric}"].reindex(buckets).to_numpy(dtype=float)
            for label, df in stats.items()
        }
        for stat, _ in panels
    }
    if metric.endswith("_s"):  # times: in the unit the values need, named in the label
        scale, unit = _time_unit(np.concatenate([v for per_run in values.values() for v in per_run.values()]))
        values = {stat: {label: v / scale for label, v in per_run.items()} for stat, per_run in values.items()}
        ylabel = ylabel.replace("(s)", f"({unit})")
    has_value = np.zeros(len(buckets), dtype=bool)
    for per_run in values.values():
        for v in per_run.values():
            has_value |= np.isfinite(v) & (v > 0)
    if not has_value.any():
        return None
    buckets = [b for b, keep in zip(buckets, has_value) if keep]
    values = {stat: {label: v[has_value] for label, v in per_run.items()} for stat, per_run in values.items()}
    fig = _new(width=max(8.0, 1.6 * len(buckets) * 2), height=4.5)
    axes = fig.subplots(1, 2, sharey=True)
    n = len(stats)
    width = 0.8 / max(n, 1)
    x = np.arange(len(buckets))
    colors = [f"C{i % 10}" for i in range(n)]
    for ax, (stat, name) in zip(axes, panels):
        drawn = False
        for i, (label, v) in enumerate(values[stat].items()):
            ok = np.isfinite(v) & (v > 0)
            if ok.any():
                ax.bar(x[ok] + (i - (n - 1) / 2) * width, v[ok], width=width, color=colors[i], label=label)
                drawn = True
        if drawn:
            ax.set_yscale("log")
            if plain_ticks or metric.endswith("_s"):
                _plain_log_ticks(ax.yaxis)
        ax.set_xticks(x, buckets)
        ax.set_xlabel("Flow size bucket")
        ax.set_title(name)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    handles, labels = axes[0].get_legend_handles_labels()
    h2, l2 = axes[1].get_legend_handles_labels()
    for h, lab in zip(h2, l2):
        if lab not in labels:
            handles.append(h)
            labels.append(lab)
    if handles:
        fig.legend(handles, labels, title="Run", loc="outside right upper")
    fig.suptitle(title)
    return _png(fig)


def active_flows(series: Mapping[str, pd.DataFrame]) -> bytes | None:
    """Number of active flows over time, one line per run.

    `series` maps a run label to :func:`fctlab.metrics.active_flows_over_time`
    output.
    """
    series = {k: v for k, v in series.items() if len(v)}
    if not series:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for label, df in series.items():
        ax.plot(
            df["time_s"].to_numpy(dtype=float),
            df["active_flows"].to_numpy(dtype=float),
            drawstyle="steps-post",
            linewidth=1.2,
            label=label,
        )
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Active flows")
    ax.set_title("Active flows over time")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(title="Run", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def queue_lengths(queues: pd.DataFrame, label: str, links: list, names: Mapping) -> bytes | None:
    """Queue length over time of the given links of one run (step lines).

    `links` lists the link ids to draw, `names` maps a link id to its name.
    """
    if not links:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for lid in links:
        q = queues[queues["link_id"] == lid].sort_values("time_s", kind="stable")
        ax.plot(
            q["time_s"].to_numpy(dtype=float),
            q["queue_pkts"].to_numpy(dtype=float),
            drawstyle="steps-post",
            linewidth=1.0,
            label=str(names.get(lid, lid)),
        )
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Queue length (packets)")
    ax.set_title(f"Queue length over time: {label}")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(title="Link", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def cwnd_traces(cwnd: pd.DataFrame, label: str, flow_ids: list) -> bytes | None:
    """Congestion window over time of the given flows of one run (step lines)."""
    if not flow_ids:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for fid in flow_ids:
        c = cwnd[cwnd["flow_id"] == fid].sort_values("time_s", kind="stable")
        ax.plot(
            c["time_s"].to_numpy(dtype=float),
            c["cwnd_bytes"].to_numpy(dtype=float) / 1000.0,
            drawstyle="steps-post",
            linewidth=1.0,
            label=f"flow {fid}",
        )
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Congestion window (KB, 1 KB = 1000 bytes)")
    ax.set_title(f"Congestion window over time: {label}")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(title="Flow", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def utilization_bars(utils: Mapping[str, pd.DataFrame]) -> bytes | None:
    """Horizontal bars of the most utilized links, one panel per run.

    `utils` maps a run label to :func:`fctlab.metrics.link_utilization`
    output, already cut to the links to show.
    """
    utils = {k: v for k, v in utils.items() if len(v)}
    if not utils:
        return None
    heights = [max(1.6, 0.3 * len(v) + 0.9) for v in utils.values()]
    fig = _new(width=8.0, height=sum(heights))
    axes = fig.subplots(len(utils), 1, squeeze=False, height_ratios=heights)[:, 0]
    finite = np.concatenate([v["utilization"].to_numpy(dtype=float) for v in utils.values()])
    finite = finite[np.isfinite(finite)]
    top = max(100.0, float(finite.max()) * 100.0 if finite.size else 0.0)
    for ax, (label, df) in zip(axes, utils.items()):
        pct = np.nan_to_num(df["utilization"].to_numpy(dtype=float) * 100.0)
        y = np.arange(len(df))
        bars = ax.barh(y, pct, color="C0")
        ax.bar_label(bars, labels=[f"{p:.1f}%" for p in pct], padding=3, fontsize="small")
        ax.set_yticks(y, df["link"].astype(str).tolist(), fontsize="small")
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.08)
        ax.set_xlabel("Utilization (%)")
        ax.set_title(f"Most utilized links: {label}")
        ax.grid(True, axis="x", alpha=0.3)
    return _png(fig)
