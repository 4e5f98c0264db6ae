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

from ..numfmt import time_unit

__all__ = [
    "fct_cdf",
    "bucket_boxes",
    "active_flows",
    "queue_lengths",
    "cwnd_traces",
    "utilization_bars",
    "drops",
    "pauses",
]

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
    """The unit that reads naturally for times in seconds (their median's): (divisor, name)."""
    v = values[np.isfinite(values) & (values > 0)]
    return time_unit(float(np.median(v)) if v.size else 1.0)


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


def fct_cdf(fcts: Mapping[str, np.ndarray], unit: tuple | None = None, which: str = "all flows") -> bytes | None:
    """CDF of the FCT of completed flows, one line per run, log x axis.

    `fcts` maps a run label to its completed flows' FCTs in seconds. Runs
    without positive values are left out; ``None`` when none is left. Times are
    in `unit` (``numfmt.time_unit``; by default the one their median needs);
    `which` ("measured flows" or "all flows") goes into the title.
    """
    series = {k: np.sort(v[np.isfinite(v) & (v > 0)]) for k, v in fcts.items()}
    series = {k: v for k, v in series.items() if v.size}
    if not series:
        return None
    scale, unit = unit or _time_unit(np.concatenate(list(series.values())))
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
    ax.set_title(f"FCT distribution ({which}, completed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    return _png(fig)


def _positive(v) -> bool:
    return v is not None and bool(np.any(np.isfinite(v) & (np.asarray(v, dtype=float) > 0)))


def bucket_boxes(
    values: Mapping[str, Mapping[str, np.ndarray]], ylabel: str, title: str, *, unit: tuple | None = None
) -> bytes | None:
    """Box plots of a per-flow value per size bucket, one box per run, log y axis.

    `values` maps a run label to {bucket: values}, buckets in size order (the
    order of their first appearance is kept); times in
    seconds when `unit` is given (``numfmt.time_unit``), drawn in it, with
    "(s)" in `ylabel` replaced by its name. A box spans the 25th to 75th
    percentile with a line at the median; its whiskers reach the 1st and 99th
    percentiles. Non-positive values are left out (a log axis cannot show
    them). ``None`` when no run has a value.
    """
    scale = unit[0] if unit else 1.0
    if unit:
        ylabel = ylabel.replace("(s)", f"({unit[1]})")
    buckets: list[str] = []
    for per_bucket in values.values():
        buckets += [b for b in per_bucket if b not in buckets]
    buckets = [b for b in buckets if any(_positive(per.get(b)) for per in values.values())]
    if not buckets:
        return None
    n = len(values)
    width = 0.8 / max(n, 1)
    fig = _new(width=max(8.0, 1.4 * len(buckets) * max(n, 1)), height=4.5)
    ax = fig.add_subplot()
    x = np.arange(len(buckets))
    for i, (label, per_bucket) in enumerate(values.items()):
        data, pos = [], []
        for j, b in enumerate(buckets):
            v = np.asarray(per_bucket.get(b, np.array([])), dtype=float)
            v = v[np.isfinite(v) & (v > 0)] / scale
            if v.size:
                data.append(v)
                pos.append(x[j] + (i - (n - 1) / 2) * width)
        if not data:
            continue
        color = f"C{i % 10}"
        stats = []
        for v in data:  # whiskers at the percentiles themselves, not at the data points inside them
            p1, q1, med, q3, p99 = np.percentile(v, [1, 25, 50, 75, 99])
            stats.append({"whislo": p1, "q1": q1, "med": med, "q3": q3, "whishi": p99, "fliers": []})
        ax.bxp(
            stats,
            positions=pos,
            widths=width * 0.8,
            showfliers=False,
            patch_artist=True,
            boxprops={"facecolor": color, "alpha": 0.5, "edgecolor": color},
            medianprops={"color": "black"},
            whiskerprops={"color": color},
            capprops={"color": color},
        )
        ax.plot([], [], color=color, linewidth=6, alpha=0.5, label=label)
    ax.set_yscale("log")
    _plain_log_ticks(ax.yaxis)
    ax.set_xticks(x, buckets)
    ax.set_xlim(-0.5, len(buckets) - 0.5)
    ax.set_xlabel("Flow size bucket")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(title="Run", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def active_flows(
    series: Mapping[str, pd.DataFrame], unit: tuple = (1.0, "s"), which: str = "all flows"
) -> bytes | None:
    """Number of active flows over time, one line per run.

    `series` maps a run label to :func:`fctlab.metrics.active_flows_over_time`
    output; times are drawn in `unit` (``numfmt.time_unit``); `which` ("measured
    flows" or "all flows") says in the title which flows are counted.
    """
    series = {k: v for k, v in series.items() if len(v)}
    if not series:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for label, df in series.items():
        ax.plot(
            df["time_s"].to_numpy(dtype=float) / unit[0],
            df["active_flows"].to_numpy(dtype=float),
            drawstyle="steps-post",
            linewidth=1.2,
            label=label,
        )
    ax.set_xlabel(f"Time ({unit[1]})")
    ax.set_ylabel("Active flows")
    ax.set_title(f"Active flows over time ({which} counted)")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(title="Run", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def queue_lengths(
    queues: pd.DataFrame, label: str, links: list, names: Mapping, unit: tuple = (1.0, "s")
) -> bytes | None:
    """Queue length over time of the given links of one run (step lines), times in `unit`.

    `links` lists the link ids to draw, `names` maps a link id to its name.
    """
    if not links:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for lid in links:
        q = queues[queues["link_id"] == lid].sort_values("time_s", kind="stable")
        ax.plot(
            q["time_s"].to_numpy(dtype=float) / unit[0],
            q["queue_pkts"].to_numpy(dtype=float),
            drawstyle="steps-post",
            linewidth=1.0,
            label=str(names.get(lid, lid)),
        )
    ax.set_xlabel(f"Time ({unit[1]})")
    ax.set_ylabel("Queue length (packets)")
    ax.set_title(f"Queue length over time: {label}")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(title="Link", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def cwnd_traces(cwnd: pd.DataFrame, label: str, flow_ids: list, unit: tuple = (1.0, "s")) -> bytes | None:
    """Congestion window over time of the given flows of one run (step lines), times in `unit`."""
    if not flow_ids:
        return None
    fig = _new()
    ax = fig.add_subplot()
    for fid in flow_ids:
        c = cwnd[cwnd["flow_id"] == fid].sort_values("time_s", kind="stable")
        ax.plot(
            c["time_s"].to_numpy(dtype=float) / unit[0],
            c["cwnd_bytes"].to_numpy(dtype=float) / 1000.0,
            drawstyle="steps-post",
            linewidth=1.0,
            label=f"flow {fid}",
        )
    ax.set_xlabel(f"Time ({unit[1]})")
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


def drops(drops: pd.DataFrame, label: str, unit: tuple = (1.0, "s"), top: int = 10) -> bytes | None:
    """Where and when one run dropped packets (``drops.parquet``): the `top` ports by drops
    (horizontal bars, the other ports' drops summed into one bar) and the drops over time (a
    histogram, times in `unit`), every dropped packet counted. ``None`` without drops."""
    if not len(drops):
        return None
    fig = _new(width=11.0, height=4.5)
    where, when = fig.subplots(1, 2, width_ratios=[1, 1.4])
    by_port = drops["link"].astype(str).value_counts()
    shown = by_port.head(top)
    if len(by_port) > top:
        shown = pd.concat([shown, pd.Series({f"{len(by_port) - top} other ports": int(by_port.iloc[top:].sum())})])
    y = np.arange(len(shown))
    bars = where.barh(y, shown.to_numpy(dtype=float), color="C3")
    where.bar_label(bars, labels=[f"{int(v):,}" for v in shown], padding=3, fontsize="small")
    where.set_yticks(y, shown.index.tolist(), fontsize="small")
    where.invert_yaxis()
    where.set_xlabel("Dropped packets")
    where.set_title("Where: drops by port")
    where.grid(True, axis="x", alpha=0.3)
    t = drops["time_s"].to_numpy(dtype=float) / unit[0]
    when.hist(t[np.isfinite(t)], bins=min(60, max(10, int(np.sqrt(len(t))))), color="C3")
    when.set_xlabel(f"Time ({unit[1]})")
    when.set_ylabel("Dropped packets")
    when.set_title("When: drops over time")
    when.grid(True, alpha=0.3)
    fig.suptitle(f"Dropped packets (all packets of the run): {label}")
    return _png(fig)


def pause_intervals(pfc: pd.DataFrame, end_s: float) -> dict:
    """(port, priority) -> [(start_s, length_s)] of a run's pause monitor (``pfc.parquet``),
    in time order; a pause not resumed by the end lasts to `end_s`."""
    out: dict = {}
    open_at: dict = {}
    for t, link, prio, event in pfc[["time_s", "link", "prio", "event"]].itertuples(index=False):
        key = (str(link), int(prio))
        if event == "pause":
            open_at.setdefault(key, float(t))
        elif key in open_at:
            start = open_at.pop(key)
            out.setdefault(key, []).append((start, float(t) - start))
    for key, start in open_at.items():
        out.setdefault(key, []).append((start, max(end_s - start, 0.0)))
    return out


def pauses(pfc: pd.DataFrame, label: str, unit: tuple = (1.0, "s"), end_s: float = 0.0, top: int = 16):
    """When each port of a lossless run was paused (``pfc.parquet``): one row per paused port
    and priority, a bar over each pause, the `top` ports paused longest, in the order they were
    first paused (so that a pause spreading toward the senders reads from top to bottom).
    Returns (PNG bytes, {port: (pauses, seconds paused)} over every port, longest first)."""
    spans = pause_intervals(pfc, end_s)
    total = {k: sum(length for _, length in v) for k, v in spans.items()}
    shown = sorted(sorted(total, key=lambda k: -total[k])[:top], key=lambda k: spans[k][0][0])
    fig = _new(width=11.0, height=1.2 + 0.35 * max(len(shown), 2))
    ax = fig.subplots()
    for y, key in enumerate(shown):
        bars = [(s / unit[0], max(length / unit[0], 1e-12)) for s, length in spans[key]]
        ax.broken_barh(bars, (y - 0.35, 0.7), color="C3")
    ax.set_yticks(range(len(shown)), [f"{link} (priority {prio})" for link, prio in shown], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel(f"Time ({unit[1]})")
    more = f"; the {top} paused longest of {len(spans)}" if len(spans) > top else ""
    ax.set_title(f"Paused ports (priority flow control), by when first paused{more}: {label}")
    ax.grid(True, axis="x", alpha=0.3)
    per_port: dict = {}
    for (link, _), v in spans.items():
        n, s = per_port.get(link, (0, 0.0))
        per_port[link] = (n + len(v), s + sum(length for _, length in v))
    per_port = dict(sorted(per_port.items(), key=lambda kv: -kv[1][1]))
    return _png(fig), per_port
