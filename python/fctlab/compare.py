"""Comparing two runs: FCT statistics side by side and a flow-by-flow comparison.

:func:`compare_runs` loads two run directories and returns a JSON-ready dict;
:func:`format_comparison` renders it as text; :func:`main_compare` is the
``fctlab compare`` command line. Run A is the reference: changes are those of
B relative to A. The definitions are in ``docs/metrics.md``.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

import numpy as np
import pandas as pd

from . import metrics
from . import numfmt
from .cli import main
from .report.runs import Run, load_run

__all__ = ["compare_runs", "format_comparison", "main_compare"]

_STAT_COLUMNS = (
    "count",
    "completed",
    "excluded_incomplete",
    "mean_fct_s",
    "median_fct_s",
    "p95_fct_s",
    "p99_fct_s",
    "max_fct_s",
    "mean_slowdown",
    "median_slowdown",
    "p95_slowdown",
    "p99_slowdown",
    "max_slowdown",
)


def _plain(x: Any) -> Any:
    """numpy/pandas scalars to JSON-ready Python values, NaN to None."""
    if x is None or x is pd.NA:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) else float(x)
    return x


def _run_info(run: Run) -> dict[str, Any]:
    s = run.summary
    fct = run.flows["fct_s"].to_numpy(dtype="float64", na_value=np.nan)
    done = run.flows["completed"].astype("boolean").fillna(False).to_numpy(dtype=bool) & ~np.isnan(fct)
    return {
        "dir": str(run.path),
        "label": run.label,
        "scenario_name": s.get("scenario_name"),
        "flows": int(len(run.flows)),
        "completed": int(done.sum()),
        "sim_time_s": _plain(s.get("sim_time_s")),
        "wall_time_s": _plain(s.get("wall_time_s")),
        "events_per_s": _plain(s.get("events_per_s")),
        "drops": _plain(s.get("drops")),
        "figures": run.figures().headline(),
    }


def _bucket_stats(flows: pd.DataFrame) -> dict[str, dict[str, Any]]:
    overall = metrics.fct_stats(flows)
    overall.insert(0, "bucket", "all")
    table = pd.concat([overall, metrics.fct_stats(flows, by="bucket")], ignore_index=True)
    return {row["bucket"]: {c: _plain(row[c]) for c in _STAT_COLUMNS} for _, row in table.iterrows()}


def compare_runs(
    dir_a: str | os.PathLike[str],
    dir_b: str | os.PathLike[str],
    tolerance: float = 0.05,
) -> dict[str, Any]:
    """Compare run B against reference run A.

    Parameters
    ----------
    dir_a, dir_b : path
        Run directories written by ``fctlab run`` (each needs
        ``flows.parquet`` and ``summary.json``). A is the reference.
    tolerance : float, default 0.05
        Relative tolerance of the paired comparison: a flow whose FCT in B
        is within ``tolerance * fct_a`` of its FCT in A counts as equal.

    Returns
    -------
    dict
        JSON-ready (statistics over no flows are ``None``):

        - ``"tolerance"``: the tolerance used;
        - ``"runs"``: ``{"a": info, "b": info}`` with ``dir``, ``label``,
          ``scenario_name``, ``flows``, ``completed``, ``sim_time_s``,
          ``wall_time_s``, ``events_per_s``, ``drops`` and ``figures`` (the
          run's headline figures in one line, as ``fctlab run`` prints them);
        - ``"buckets"``: a list, first ``"all"`` then each size bucket, of
          ``{"bucket": name, "a": stats, "b": stats}`` where stats are the
          columns of :func:`fctlab.metrics.fct_stats`;
        - ``"paired"``: the result of :func:`fctlab.metrics.paired_comparison`
          (relative tolerance), or ``None`` when the runs do not hold the
          same flows;
        - ``"paired_skipped_reason"``: why the paired comparison was skipped,
          or ``None``.

    Raises
    ------
    RunLoadError
        If a directory or one of its required files is missing or unreadable.
    ValueError
        If `tolerance` is negative.
    """
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    run_a = load_run(dir_a)
    run_b = load_run(dir_b)
    if run_a.label == run_b.label:
        run_a.label, run_b.label = f"A ({run_a.label})", f"B ({run_b.label})"
    stats_a = _bucket_stats(run_a.flows)
    stats_b = _bucket_stats(run_b.flows)
    order = list(stats_a) + [b for b in stats_b if b not in stats_a]
    empty = {c: (0 if c in ("count", "completed", "excluded_incomplete") else None) for c in _STAT_COLUMNS}
    buckets = [{"bucket": b, "a": stats_a.get(b, dict(empty)), "b": stats_b.get(b, dict(empty))} for b in order]
    reason = None
    missing = [c for c in ("src", "dst") if c not in run_a.flows.columns or c not in run_b.flows.columns]
    if missing:
        reason = f"the flow tables lack column(s) {', '.join(missing)}"
    else:
        reason = metrics.flow_set_mismatch(run_a.flows, run_b.flows)
    paired = None
    if reason is None:
        paired = {
            k: _plain(v)
            for k, v in metrics.paired_comparison(run_a.flows, run_b.flows, tolerance=tolerance, rel=True).items()
        }
    return {
        "tolerance": float(tolerance),
        "runs": {"a": _run_info(run_a), "b": _run_info(run_b)},
        "buckets": buckets,
        "paired": paired,
        "paired_skipped_reason": reason,
        "throughput_shares": _throughput_shares(run_a, run_b) if reason is None else None,
    }


def _throughput_shares(run_a: Run, run_b: Run) -> list[dict[str, Any]] | None:
    """Per-flow share of the delivered bytes of the flows that did not complete (long-lived
    flows, or flows still running at the end), in both runs; None when there are none."""
    fa, fb = run_a.flows, run_b.flows
    open_a = ~fa["completed"].astype(bool)
    open_b = ~fb["completed"].astype(bool)
    if not open_a.any() or not open_b.any() or "flow_id" not in fa.columns:
        return None
    ia = fa[open_a].set_index("flow_id")["bytes_delivered"].astype(float)
    ib = fb[open_b].set_index("flow_id")["bytes_delivered"].astype(float)
    ids = sorted(set(ia.index) & set(ib.index))
    if len(ids) < 2 or ia.loc[ids].sum() <= 0 or ib.loc[ids].sum() <= 0:
        return None
    sa, sb = ia.loc[ids] / ia.loc[ids].sum(), ib.loc[ids] / ib.loc[ids].sum()
    return [
        {
            "flow_id": int(i),
            "bytes_a": float(ia[i]),
            "bytes_b": float(ib[i]),
            "share_a": float(sa[i]),
            "share_b": float(sb[i]),
            "relative_difference": float((sb[i] - sa[i]) / sa[i]) if sa[i] > 0 else None,
        }
        for i in ids
    ]


def _change(a: Any, b: Any) -> str:
    if not (numfmt.is_number(a) and numfmt.is_number(b)) or float(a) == 0:
        return ""
    return numfmt.signed_percent((float(b) - float(a)) / float(a))


def format_comparison(result: dict[str, Any]) -> str:
    """Render the result of :func:`compare_runs` as plain text.

    Parameters
    ----------
    result : dict
        As returned by :func:`compare_runs` (or read back from its JSON).

    Returns
    -------
    str
        The runs, a side-by-side table of FCT statistics per size bucket
        with B's relative change from A, and the paired comparison (or why
        it was skipped). Ends with a newline.
    """
    ra, rb = result["runs"]["a"], result["runs"]["b"]
    lines = []
    for key, r in (("A", ra), ("B", rb)):
        scen = f", scenario {r['scenario_name']}" if r.get("scenario_name") else ""
        lines.append(
            f"Run {key}: {r['label']} ({r['dir']}{scen}): {numfmt.count(r['flows'])} flows, "
            f"{numfmt.count(r['completed'])} completed"
        )
    lines += [f"  {key}: {r['figures']}" for key, r in (("A", ra), ("B", rb)) if r.get("figures")]
    lines.append("")
    lines.append("FCT statistics per size bucket (completed flows only; change = (B - A) / A)")
    w_bucket, w_metric, w_val = 12, 16, 12
    header = f"{'bucket':<{w_bucket}}{'metric':<{w_metric}}{'A':>{w_val}}{'B':>{w_val}}{'change':>{w_val}}"
    lines.append(header)
    lines.append("-" * len(header))
    metrics_rows = [
        ("mean FCT", "mean_fct_s", numfmt.seconds),
        ("median FCT", "median_fct_s", numfmt.seconds),
        ("p95 FCT", "p95_fct_s", numfmt.seconds),
        ("p99 FCT", "p99_fct_s", numfmt.seconds),
        ("max FCT", "max_fct_s", numfmt.seconds),
        ("mean slowdown", "mean_slowdown", numfmt.number),
        ("median slowdown", "median_slowdown", numfmt.number),
        ("p99 slowdown", "p99_slowdown", numfmt.number),
    ]
    for entry in result["buckets"]:
        a, b = entry["a"], entry["b"]
        name = str(entry["bucket"])
        rows = [
            ("flows", numfmt.count(a["count"]), numfmt.count(b["count"]), ""),
            ("completed", numfmt.count(a["completed"]), numfmt.count(b["completed"]), ""),
        ]
        if a["completed"] or b["completed"]:
            rows += [(label, f(a[col]), f(b[col]), _change(a[col], b[col])) for label, col, f in metrics_rows]
        for i, (label, va, vb, ch) in enumerate(rows):
            first = name if i == 0 else ""
            lines.append(f"{first:<{w_bucket}}{label:<{w_metric}}{va:>{w_val}}{vb:>{w_val}}{ch:>{w_val}}".rstrip())
    lines.append("")
    shares = result.get("throughput_shares")
    if shares:
        lines.append("Throughput shares of the flows still open at the end (share of their delivered bytes)")
        lines.append(f"  {'flow':>6}{'A':>10}{'B':>10}{'B vs A':>10}")
        for sh in shares:
            lines.append(
                f"  {sh['flow_id']:>6}{numfmt.percent(sh['share_a']):>10}{numfmt.percent(sh['share_b']):>10}"
                f"{_change(sh['share_a'], sh['share_b']):>10}"
            )
        lines.append("")
    paired = result.get("paired")
    if paired is None:
        lines.append(f"Paired comparison skipped: {result.get('paired_skipped_reason') or 'no data'}.")
        return "\n".join(lines) + "\n"
    tol = paired["tolerance"]
    tol_text = f"within {tol * 100:g}% of A's FCT" if paired["rel"] else f"within {numfmt.seconds(tol)}"
    lines.append(
        f"Paired comparison of B against A ({numfmt.count(paired['completed_both'])} flows "
        f"completed in both; equal when {tol_text})"
    )
    if paired["completed_both"] == 0:
        lines.append("  no flow completed in both runs")
    else:
        lines.append(f"  {'':<8}{'share':>8}{'flows':>9}   mean change of FCT")
        gain = (
            f"{numfmt.signed_percent(-paired['mean_gain'])} ({numfmt.signed_seconds(-paired['mean_gain_s'])})"
            if paired["mean_gain"] is not None
            else numfmt.NA
        )
        loss = (
            f"{numfmt.signed_percent(paired['mean_loss'])} ({numfmt.signed_seconds(paired['mean_loss_s'])})"
            if paired["mean_loss"] is not None
            else numfmt.NA
        )
        for label, key, change in (("faster", "faster", gain), ("slower", "slower", loss), ("equal", "equal", "")):
            lines.append(
                f"  {label:<8}{numfmt.percent(paired['share_' + key]):>8}"
                f"{numfmt.count(paired[key]):>9}   {change}".rstrip()
            )
    lines.append(
        f"  completed only in A: {numfmt.count(paired['completed_only_a'])}, "
        f"only in B: {numfmt.count(paired['completed_only_b'])}, "
        f"in neither: {numfmt.count(paired['completed_neither'])}"
    )
    return "\n".join(lines) + "\n"


def configure(parser) -> None:
    """The arguments of ``fctlab compare DIR_A DIR_B [--tolerance 0.05] [--json]``."""
    parser.description = (
        "Compare run B against reference run A: FCT statistics per size bucket "
        "and, when both runs hold the same flows, a flow-by-flow comparison."
    )
    parser.add_argument("dir_a", metavar="DIR_A", help="reference run directory")
    parser.add_argument("dir_b", metavar="DIR_B", help="run directory compared against DIR_A")
    parser.add_argument(
        "--tolerance", type=float, default=0.05, help="relative FCT difference still counted as equal (default: 0.05)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args) -> int:
    """Runs ``fctlab compare``: 0 on success (the comparison is printed as text, or as JSON
    with ``--json``), 2 on bad input (a missing run directory or file, an unreadable file),
    with a one-line message on stderr."""
    try:
        result = compare_runs(args.dir_a, args.dir_b, tolerance=args.tolerance)
    except (ValueError, OSError) as exc:
        print(f"fctlab compare: error: {numfmt.one_line(exc)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
    else:
        print(format_comparison(result), end="")
    return 0


def main_compare(argv: list[str]) -> int:
    """``fctlab compare`` with the arguments after ``compare``; returns the exit status."""
    return main(["compare", *argv])
