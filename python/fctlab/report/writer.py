"""Building a report over one or more run directories."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from .. import numfmt
from .render import Block, Heading, Image, Paragraph, Table, render_html, render_markdown
from .runs import Run, load_run

__all__ = ["write_report", "SECTION_TITLES"]

SECTION_TITLES = {
    "runs": "Runs",
    "fct": "Flow completion times",
    "deadlines": "Deadlines",
    "jobs": "Jobs",
    "links": "Links",
    "queues": "Queues",
    "cwnd": "Congestion windows",
}
"""Headings of the report's sections. Deadlines and Jobs appear only when some
run has flows with a deadline or a group; the others always appear."""

_FORMATS = ("html", "md")
_TOP_LINKS = 10
_TOP_QUEUE_LINES = 8
_TOP_CWND_FLOWS = 8
_ACTIVE_POINTS = 2000


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}-{k + 1}")
    # a renamed label could collide with a given one; rename until unique
    while len(set(out)) != len(out):
        out = _unique(out)
    return out


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_.") or "run"


class _Report:
    def __init__(self, runs: list[Run], out_dir: Path, buckets: Sequence[Sequence[Any]]):
        self.runs = runs
        self.out_dir = out_dir
        self.buckets = buckets
        self.blocks: list[Block] = []
        self.slugs = dict(zip((r.label for r in runs), _unique([_slug(r.label) for r in runs])))
        self.files: list[Path] = []
        # Which flows the flow figures are over, and the one time unit of every time shown.
        windowed = any(metrics.window_text(r.summary) for r in runs)
        self.which = "measured flows" if windowed else "all flows"
        fcts = [r.flows["fct_s"].to_numpy(dtype="float64", na_value=np.nan)[_completed_mask(r.flows)] for r in runs]
        typical = np.concatenate(fcts) if fcts else np.array([])
        typical = typical[typical > 0]
        if not typical.size:
            typical = np.array([r.sim_time_s for r in runs if r.sim_time_s], dtype=float)
        self.unit = numfmt.time_unit(float(np.median(typical)) if typical.size else None)

    def time(self, x: Any) -> str:
        """A time in the report's unit."""
        return numfmt.in_unit(x, self.unit)

    # -- building blocks -------------------------------------------------

    def heading(self, key_or_text: str, level: int = 2) -> None:
        self.blocks.append(Heading(SECTION_TITLES.get(key_or_text, key_or_text), level))

    def para(self, text: str, note: bool = False) -> None:
        self.blocks.append(Paragraph(text, note))

    def table(self, columns: list[str], rows: list[list[str]], caption: str | None = None) -> None:
        self.blocks.append(Table(columns, rows, caption))

    def image(self, name: str, png: bytes | None, alt: str) -> bool:
        if png is None:
            return False
        filename = f"{name}.png"
        path = self.out_dir / filename
        path.write_bytes(png)
        self.files.append(path)
        self.blocks.append(Image(filename, png, alt))
        return True

    # -- sections --------------------------------------------------------

    def runs_section(self) -> None:
        self.heading("runs")
        rows = []
        for r in self.runs:
            s = r.summary
            flows = s.get("flows_total", len(r.flows))
            completed = s.get("flows_completed", int(_completed_mask(r.flows).sum()))
            rows.append(
                [
                    r.label,
                    str(r.path),
                    str(s.get("scenario_name", numfmt.NA)),
                    numfmt.count(flows),
                    numfmt.count(completed),
                    self.time(s.get("sim_time_s")),
                    numfmt.seconds(s.get("wall_time_s")),
                    numfmt.count(s.get("events_per_s")),
                    numfmt.count(s.get("drops")),
                    numfmt.count(s.get("ecn_marks")),
                    str(s.get("seed", numfmt.NA)),
                ]
            )
        self.table(
            [
                "Run",
                "Directory",
                "Scenario",
                "Flows",
                "Completed",
                "Sim time",
                "Wall time",
                "Events/s",
                "Drops",
                "ECN marks",
                "Seed",
            ],
            rows,
        )

    def fct_section(self) -> None:
        self.heading("fct")
        self.para(
            "Size buckets: "
            + "; ".join(metrics.describe_buckets(self.buckets))
            + " (1 KB = 1000 bytes). FCT and slowdown statistics are over completed flows;"
            ' flows that did not complete are counted under "Incomplete" and excluded.'
            " Slowdown is a flow's FCT divided by its ideal FCT (fct_s / ideal_fct_s)."
        )
        for r in self.runs:
            self.para(f"{r.label}: {r.figures().headline()}")
            total = r.summary.get("flows_total")
            if metrics.window_text(r.summary) and isinstance(total, int) and total > len(r.flows):
                self.para(
                    f"{r.label}: {total - len(r.flows):,} more flows ran, outside its [measure] window; they are "
                    "not in these figures.",
                    note=True,
                )
        completed_fcts: dict[str, np.ndarray] = {}
        for r in self.runs:
            overall = metrics.fct_stats(r.flows, buckets=self.buckets)
            buckets = metrics.fct_stats(r.flows, by="bucket", buckets=self.buckets)
            n, done = int(overall.at[0, "count"]), int(overall.at[0, "completed"])
            if n == 0:
                self.para(f"{r.label}: no flows.", note=True)
                continue
            if done == 0:
                self.para(f"{r.label}: no completed flows ({n:,} flows, none completed).", note=True)
                continue
            fct = r.flows["fct_s"].to_numpy(dtype="float64", na_value=np.nan)
            completed_fcts[r.label] = fct[_completed_mask(r.flows)]
            overall.insert(0, "bucket", "all")
            rows = [
                _fct_row(row, self.unit)
                for _, row in pd.concat([overall, buckets]).iterrows()
                if row["count"] > 0 or row["bucket"] in {b[0] for b in self.buckets}
            ]
            self.table(
                [
                    "Bucket",
                    "Flows",
                    "Completed",
                    "Incomplete",
                    "Mean FCT",
                    "Median FCT",
                    "p95 FCT",
                    "p99 FCT",
                    "Max FCT",
                    "Median slowdown",
                    "p99 slowdown",
                ],
                rows,
                caption=r.label,
            )
        if not completed_fcts:
            self.para("No completed flows in any run: no FCT plots.", note=True)
        else:
            self.image(
                "fct_cdf",
                _plots().fct_cdf(completed_fcts, self.unit, self.which),
                f"CDF of flow completion times per run ({self.which})",
            )
            self.bucket_figures()
        self.grouped_tables("protocol", "By protocol", lambda v: v.nunique(dropna=False) > 1)
        self.grouped_tables("tag", "By tag", lambda v: bool((v.notna() & (v.astype(str) != "")).any()))
        self.active_flows()

    def bucket_figures(self) -> None:
        """FCT and slowdown per size bucket, box plots of the completed flows of each run."""
        fct: dict = {}
        slowdown: dict = {}
        for r in self.runs:
            done = r.flows[_completed_mask(r.flows)]
            if not len(done):
                continue
            bucket = metrics.assign_buckets(done["size_bytes"], self.buckets)
            groups = {b: done[(bucket == b).to_numpy()] for b in bucket.cat.categories}
            fct[r.label] = {b: part["fct_s"].to_numpy(dtype=float) for b, part in groups.items()}
            slowdown[r.label] = {
                b: part["slowdown"].to_numpy(dtype=float, na_value=np.nan) for b, part in groups.items()
            }
        spread = "box: 25th-75th percentile and median; whiskers: 1st and 99th percentiles"
        self.image(
            "fct_by_bucket",
            _plots().bucket_boxes(
                fct, "Flow completion time (s)", f"FCT by flow size ({self.which}, completed)", unit=self.unit
            ),
            f"FCT per size bucket ({self.which}; {spread})",
        )
        self.image(
            "slowdown_by_bucket",
            _plots().bucket_boxes(
                slowdown, "Slowdown (FCT / ideal FCT)", f"Slowdown by flow size ({self.which}, completed)"
            ),
            f"Slowdown per size bucket ({self.which}; {spread})",
        )
        if fct:
            self.para(f"FCT and slowdown by size: {spread}.")

    def grouped_tables(self, column: str, title: str, show) -> None:
        runs = [r for r in self.runs if column in r.flows.columns and show(r.flows[column])]
        if not runs:
            return
        self.heading(title, level=3)
        rows = []
        for r in runs:
            st = metrics.fct_stats(r.flows, by=column, buckets=self.buckets)
            for _, row in st.iterrows():
                key = row[column]
                rows.append(
                    [
                        r.label,
                        numfmt.NA if key is None else (str(key) or "(empty)"),
                        numfmt.count(row["count"]),
                        numfmt.count(row["completed"]),
                        self.time(row["median_fct_s"]),
                        self.time(row["p99_fct_s"]),
                        numfmt.number(row["median_slowdown"]),
                        numfmt.number(row["p99_slowdown"]),
                    ]
                )
        self.table(
            [
                "Run",
                column.capitalize(),
                "Flows",
                "Completed",
                "Median FCT",
                "p99 FCT",
                "Median slowdown",
                "p99 slowdown",
            ],
            rows,
        )

    def active_flows(self) -> None:
        series = {}
        for r in self.runs:
            if len(r.flows) == 0:
                continue
            start = r.flows["start_s"].to_numpy(dtype="float64", na_value=np.nan)
            finish = r.flows["finish_s"].to_numpy(dtype="float64", na_value=np.nan)
            points = np.concatenate([start, finish])
            points = points[np.isfinite(points)]
            end = r.sim_time_s
            if end is not None:
                points = np.append(points, end)
            if points.size == 0:
                continue
            times = np.unique(points)
            if times.size > _ACTIVE_POINTS:
                times = np.linspace(times[0], times[-1], _ACTIVE_POINTS)
            series[r.label] = metrics.active_flows_over_time(r.flows, times)
        if series:
            self.image(
                "active_flows",
                _plots().active_flows(series, self.unit, self.which),
                f"Number of active flows over time ({self.which} counted)",
            )

    def deadlines_section(self) -> None:
        runs = [r for r in self.runs if "deadline_s" in r.flows.columns and r.flows["deadline_s"].notna().any()]
        if not runs:
            return
        self.heading("deadlines")
        self.para(
            "A flow meets its deadline when it completes within deadline_s of its start;"
            " a flow that did not complete missed it."
        )
        rows = []
        for r in runs:
            d = metrics.deadline_meet_ratio(r.flows).iloc[0]
            rows.append(
                [
                    r.label,
                    numfmt.count(d["with_deadline"]),
                    numfmt.count(d["met"]),
                    numfmt.count(d["missed"]),
                    numfmt.count(d["missed_incomplete"]),
                    numfmt.percent(d["meet_ratio"]),
                ]
            )
        self.table(["Run", "With deadline", "Met", "Missed", "Missed (incomplete)", "Meet ratio"], rows)

    def jobs_section(self) -> None:
        jobs = {}
        for r in self.runs:
            if "group" in r.flows.columns:
                j = metrics.job_completion_times(r.flows)
                if len(j):
                    jobs[r.label] = j
        if not jobs:
            return
        self.heading("jobs")
        self.para(
            "A job is the set of flows sharing a group id (an incast round, a shuffle)."
            " Its completion time (JCT) runs from its first flow's start to its last flow's"
            " finish; a job with an incomplete flow is incomplete and has no JCT."
        )
        rows = []
        for label, j in jobs.items():
            jct = j["jct_s"].to_numpy(dtype=float)
            jct = jct[np.isfinite(jct)]
            stats = [numfmt.NA] * 4
            if jct.size:
                p50, p99 = np.percentile(jct, [50, 99])
                stats = [
                    self.time(jct.mean()),
                    self.time(p50),
                    self.time(p99),
                    self.time(jct.max()),
                ]
            rows.append([label, numfmt.count(len(j)), numfmt.count(int(j["completed"].sum())), *stats])
        self.table(["Run", "Jobs", "Completed jobs", "Mean JCT", "Median JCT", "p99 JCT", "Max JCT"], rows)

    def links_section(self) -> None:
        self.heading("links")
        runs = [r for r in self.runs if r.links is not None]
        if not runs:
            self.para("No link statistics (links.parquet) in any run.", note=True)
            return
        rows = []
        utils = {}
        for r in runs:
            links = r.links
            loss = metrics.loss_rate(links)
            util = metrics.link_utilization(links)
            busiest = f"{util.at[0, 'link']} ({numfmt.percent(util.at[0, 'utilization'])})" if len(util) else numfmt.NA
            ecn = int(links["ecn_marks"].sum()) if "ecn_marks" in links.columns else None
            rows.append(
                [
                    r.label,
                    numfmt.count(len(links)),
                    numfmt.count(links["tx_packets"].sum()),
                    numfmt.count(links["drops"].sum()),
                    numfmt.percent(loss.overall, 3),
                    numfmt.count(ecn),
                    numfmt.percent(util["utilization"].mean()),
                    busiest,
                ]
            )
            utils[r.label] = util.head(_TOP_LINKS)
        self.para(
            "Loss rate is drops / (packets sent + drops) summed over all output ports;"
            " utilization is the fraction of the simulated time a link spent sending."
        )
        self.table(
            ["Run", "Links", "Packets sent", "Drops", "Loss rate", "ECN marks", "Mean utilization", "Busiest link"],
            rows,
        )
        for r in self.runs:
            if r.links is None:
                self.para(f"{r.label}: no links.parquet.", note=True)
        self.image(
            "link_utilization",
            _plots().utilization_bars(utils),
            f"Utilization of the {_TOP_LINKS} most utilized links per run",
        )

    def drops_figures(self) -> None:
        """Where and when each run with a drop trace (drops.parquet) dropped packets."""
        for r in self.runs:
            if r.drops is None:
                continue
            if not len(r.drops):
                self.para(f"{r.label}: drops.parquet holds no drops.", note=True)
                continue
            self.image(
                f"drops_{self.slugs[r.label]}",
                _plots().drops(r.drops, r.label, self.unit),
                f"Dropped packets by port and over time, {r.label}",
            )

    def pause_figures(self) -> None:
        """When each port of a lossless run (pfc.parquet) was paused, and how long in all."""
        for r in self.runs:
            if r.pfc is None:
                continue
            if not len(r.pfc):
                self.para(f"{r.label}: lossless, and no port was ever paused.", note=True)
                continue
            png, totals = _plots().pauses(r.pfc, r.label, self.unit, float(r.summary.get("sim_time_s") or 0.0))
            self.image(
                f"pauses_{self.slugs[r.label]}", png, f"Priority flow control: when each port was paused, {r.label}"
            )
            self.para(
                f"{r.label}: {len(totals)} ports paused, "
                + "; ".join(f"{k} {n:,} times, {numfmt.seconds(s)} in all" for k, (n, s) in list(totals.items())[:8])
                + ("; ..." if len(totals) > 8 else "")
                + ". A port is named by its link: the switch at the far end sent the pauses."
            )

    def timeouts_section(self) -> None:
        """Each run's timeouts by what led to them, when any run had one."""
        causes = {
            r.label: metrics.timeout_causes(r.flows) for r in self.runs if {"timeouts", "drops"} <= set(r.flows.columns)
        }
        if not any(c["timeouts"] for c in causes.values()):
            return
        self.heading("Timeouts by cause", level=3)
        self.para(
            "Per flow: every timeout of a flow that lost a packet counts as after a loss. A timeout"
            " in a flow that lost none fired because the flow's packets or ACKs waited longer than"
            " the RTO: behind higher strict-priority bands (a flow demoted to a low band starves"
            " while the higher ones are busy), or in a queue longer than the RTO."
        )
        rows = [
            [
                label,
                numfmt.count(c["timeouts"]),
                numfmt.count(c["after_loss"]),
                f"{numfmt.count(c['without_loss'])} ({numfmt.count(c['flows_without_loss'])} flows)",
                numfmt.count(c["first"]),
                numfmt.count(c["after_ecn_cut"]),
            ]
            for label, c in causes.items()
        ]
        self.table(
            [
                "Run",
                "Timeouts",
                "In flows that lost packets",
                "In flows that lost none",
                "Before any ACK",
                "After an ECN cut",
            ],
            rows,
        )

    def queues_section(self) -> None:
        self.heading("queues")
        if all(r.queues is None for r in self.runs):
            self.para("No queue samples (queues.parquet) in any run.", note=True)
            return
        self.para(
            "Queue samples are piecewise constant: each holds until the link's next sample"
            " (the last one until the end of the run). Mean and percentiles are weighted by"
            " that time."
        )
        for r in self.runs:
            if r.queues is None:
                self.para(f"{r.label}: no queues.parquet.", note=True)
                continue
            if len(r.queues) == 0:
                self.para(f"{r.label}: queues.parquet has no samples.", note=True)
                continue
            end = r.sim_time_s
            latest = float(r.queues["time_s"].max())
            st = metrics.queue_stats(r.queues, end_time_s=end if end is not None and end >= latest else None)
            st = st.sort_values(["mean_queue_pkts", "link_id"], ascending=[False, True], kind="stable")
            top = st.head(_TOP_LINKS)
            rows = [
                [
                    str(row["link"]),
                    numfmt.count(row["samples"]),
                    numfmt.number(row["mean_queue_pkts"]),
                    numfmt.number(row["p50_queue_pkts"]),
                    numfmt.number(row["p90_queue_pkts"]),
                    numfmt.number(row["p99_queue_pkts"]),
                    numfmt.number(row["max_queue_pkts"]),
                ]
                for _, row in top.iterrows()
            ]
            caption = (
                f"{r.label}: {len(top)} of {len(st)} sampled links, by time-weighted mean"
                if len(st) > len(top)
                else f"{r.label}"
            )
            self.table(
                ["Link", "Samples", "Mean (pkts)", "p50 (pkts)", "p90 (pkts)", "p99 (pkts)", "Max (pkts)"],
                rows,
                caption=caption,
            )
            lines = top.head(_TOP_QUEUE_LINES)
            names = dict(zip(st["link_id"], st["link"]))
            self.image(
                f"queues_{self.slugs[r.label]}",
                _plots().queue_lengths(r.queues, r.label, list(lines["link_id"]), names, self.unit),
                f"Queue length over time, {r.label}",
            )

    def cwnd_section(self) -> None:
        self.heading("cwnd")
        if all(r.cwnd is None for r in self.runs):
            self.para("No congestion window traces (cwnd.parquet) in any run.", note=True)
            return
        for r in self.runs:
            if r.cwnd is None:
                self.para(f"{r.label}: no cwnd.parquet.", note=True)
                continue
            ids = sorted(pd.unique(r.cwnd["flow_id"].dropna()).tolist())
            if not ids:
                self.para(f"{r.label}: cwnd.parquet has no samples.", note=True)
                continue
            shown = ids[:_TOP_CWND_FLOWS]
            if len(ids) > len(shown):
                self.para(f"{r.label}: showing the {len(shown)} lowest flow ids of {len(ids)} traced flows.")
            self.image(
                f"cwnd_{self.slugs[r.label]}",
                _plots().cwnd_traces(r.cwnd, r.label, shown, self.unit),
                f"Congestion window over time, {r.label}",
            )

    def build(self) -> list[Block]:
        self.runs_section()
        self.fct_section()
        self.deadlines_section()
        self.jobs_section()
        self.links_section()
        self.drops_figures()
        self.pause_figures()
        self.timeouts_section()
        self.queues_section()
        self.cwnd_section()
        return self.blocks


def _plots():
    # matplotlib is imported only when a report is drawn
    from . import plots  # lazy: matplotlib costs 300 ms of start-up

    return plots


def _completed_mask(flows: pd.DataFrame) -> np.ndarray:
    fct = flows["fct_s"].to_numpy(dtype="float64", na_value=np.nan)
    done = flows["completed"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return done & ~np.isnan(fct)


def _fct_row(row: pd.Series, unit: tuple) -> list[str]:
    if row["completed"] == 0:
        stats = [numfmt.NA] * 7
    else:
        stats = [
            numfmt.in_unit(row[c], unit) for c in ("mean_fct_s", "median_fct_s", "p95_fct_s", "p99_fct_s", "max_fct_s")
        ]
        stats += [numfmt.number(row["median_slowdown"]), numfmt.number(row["p99_slowdown"])]
    return [
        str(row["bucket"]),
        numfmt.count(row["count"]),
        numfmt.count(row["completed"]),
        numfmt.count(row["excluded_incomplete"]),
        *stats,
    ]


def write_report(
    run_dirs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    title: str | None = None,
    fmt: str = "html",
    *,
    buckets: Sequence[Sequence[Any]] = metrics.DEFAULT_BUCKETS,
) -> Path:
    """Write a report over one or more run directories.

    The report has a summary table per run (from ``summary.json``), FCT and
    slowdown statistics overall and per size bucket (and per protocol and
    tag when there are several), deadline and job completion tables when the
    runs have deadlines or groups, link loss and utilization, queue lengths
    (from ``queues.parquet``) and congestion windows (from ``cwnd.parquet``).
    Every plot is saved as a PNG file in `out_dir`; the HTML report also
    embeds them, so ``report.html`` is self-contained. A run without
    completed flows is reported as such, without FCT statistics or plots.

    Parameters
    ----------
    run_dirs : path or sequence of paths
        Run directories written by ``fctlab run``; each needs
        ``flows.parquet`` and ``summary.json``.
    out_dir : path
        Output directory, created if needed. Existing files of the same
        names are overwritten.
    title : str, optional
        Report title; default ``"fctlab report: <run labels>"``.
    fmt : {"html", "md"}, default "html"
        ``"html"`` writes ``report.html``; ``"md"`` writes ``report.md``
        linking to the PNG files beside it.
    buckets : sequence of (name, lo_bytes, hi_bytes), optional
        Size buckets, see :func:`fctlab.metrics.fct_stats`.

    Returns
    -------
    pathlib.Path
        Path of the report file.

    Raises
    ------
    RunLoadError
        If a run directory, its ``flows.parquet`` or its ``summary.json`` is
        missing or unreadable (nothing is written then).
    ValueError
        If `fmt` is not ``"html"`` or ``"md"`` or no run directory is given.
    """
    if fmt not in _FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    if isinstance(run_dirs, (str, os.PathLike)):
        run_dirs = [run_dirs]
    run_dirs = list(run_dirs)
    if not run_dirs:
        raise ValueError("write_report needs at least one run directory")
    runs = [load_run(d) for d in run_dirs]
    for run, label in zip(runs, _unique([r.label for r in runs])):
        run.label = label
    if title is None:
        title = "fctlab report: " + ", ".join(r.label for r in runs)
    out = Path(out_dir)
    _plots()  # a missing matplotlib is said before anything is written
    out.mkdir(parents=True, exist_ok=True)
    blocks = _Report(runs, out, buckets).build()
    if fmt == "html":
        path = out / "report.html"
        path.write_text(render_html(title, blocks), encoding="utf-8")
    else:
        path = out / "report.md"
        path.write_text(render_markdown(title, blocks), encoding="utf-8")
    return path
