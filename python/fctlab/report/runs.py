"""Loading a run directory written by ``fctlab run``."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ..flowstats import COLUMNS, FctSummary, run_figures
from ..metrics import measured
from ..rundir import RunDirError, read_summary

__all__ = ["Run", "RunLoadError", "load_run", "REQUIRED_FLOW_COLUMNS", "REQUIRED_LINK_COLUMNS"]

REQUIRED_FLOW_COLUMNS = ("flow_id", "size_bytes", "start_s", "finish_s", "fct_s", "slowdown", "completed")
"""Columns of ``flows.parquet`` that reports and comparisons need."""
REQUIRED_LINK_COLUMNS = ("link_id", "src", "dst", "tx_packets", "drops", "utilization")
"""Columns of ``links.parquet`` that reports need (the file itself is optional)."""
_REQUIRED_QUEUE_COLUMNS = ("time_s", "link_id", "queue_pkts")
_REQUIRED_CWND_COLUMNS = ("time_s", "flow_id", "cwnd_bytes")
_REQUIRED_DROP_COLUMNS = ("time_s", "link")


class RunLoadError(ValueError):
    """A run directory is missing, incomplete or unreadable.

    The message names the directory and the file.
    """


@dataclass
class Run:
    """The result files of one run.

    Attributes
    ----------
    path : pathlib.Path
        The run directory.
    label : str
        Short name for tables and legends (the directory name by default).
    summary : dict
        Contents of ``summary.json``.
    flows : pandas.DataFrame
        ``flows.parquet``.
    links, queues, cwnd, drops, pfc : pandas.DataFrame or None
        ``links.parquet``, ``queues.parquet``, ``cwnd.parquet``,
        ``drops.parquet`` and ``pfc.parquet`` when present.
    """

    path: Path
    label: str
    summary: dict[str, Any]
    flows: pd.DataFrame
    links: pd.DataFrame | None = None
    queues: pd.DataFrame | None = None
    cwnd: pd.DataFrame | None = field(default=None)
    drops: pd.DataFrame | None = None
    pfc: pd.DataFrame | None = None

    def figures(self) -> FctSummary:
        """The run's headline figures, as ``fctlab run`` and a RunResult's repr show them
        (:func:`fctlab.flowstats.run_figures` over its measured flows)."""
        cols = [c for c in COLUMNS if c in self.flows.columns]
        table = pa.Table.from_pandas(self.flows[cols], preserve_index=False)
        return run_figures(lambda: table.to_batches(), self.summary)

    @property
    def sim_time_s(self) -> float | None:
        """``sim_time_s`` from the summary, if it is a finite number."""
        v = self.summary.get("sim_time_s")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
        return None


def _read_parquet(path: Path, run_dir: Path, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise RunLoadError(f"cannot read {path.name} in run directory '{run_dir}': {exc}") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise RunLoadError(f"{path.name} in run directory '{run_dir}' is missing column(s) {', '.join(missing)}")
    return df


def load_run(run_dir: str | os.PathLike[str], *, label: str | None = None) -> Run:
    """Load the result files of a run directory.

    ``flows.parquet`` and ``summary.json`` are required; ``links.parquet``,
    ``queues.parquet``, ``cwnd.parquet`` and ``drops.parquet`` are loaded when
    present.

    Parameters
    ----------
    run_dir : str or path-like
        Directory written by ``fctlab run``.
    label : str, optional
        Name of the run in tables and plots; default the directory name.

    Returns
    -------
    Run

    Raises
    ------
    RunLoadError
        If the directory or a required file is missing, a file cannot be
        read, ``summary.json`` is not a JSON object, or a table lacks a
        column the reports need. The message names the directory and file.
    """
    path = Path(run_dir)
    if not path.exists():
        raise RunLoadError(f"run directory '{path}' does not exist")
    if not path.is_dir():
        raise RunLoadError(f"run directory '{path}' is not a directory")
    for name in ("flows.parquet", "summary.json"):
        if not (path / name).is_file():
            raise RunLoadError(f"run directory '{path}' has no {name}")
    try:
        summary = read_summary(path)
    except RunDirError as exc:
        raise RunLoadError(f"summary.json in run directory '{path}': {exc}") from None
    flows = _read_parquet(path / "flows.parquet", path, REQUIRED_FLOW_COLUMNS)
    optional: dict[str, pd.DataFrame | None] = {}
    for key, name, required in (
        ("links", "links.parquet", REQUIRED_LINK_COLUMNS),
        ("queues", "queues.parquet", _REQUIRED_QUEUE_COLUMNS),
        ("cwnd", "cwnd.parquet", _REQUIRED_CWND_COLUMNS),
        ("drops", "drops.parquet", _REQUIRED_DROP_COLUMNS),
        ("pfc", "pfc.parquet", ("time_s", "link", "prio", "event")),
    ):
        f = path / name
        optional[key] = _read_parquet(f, path, required) if f.is_file() else None
    if label is None:
        label = path.resolve().name or str(path)
    # A run with a measurement window is reported on the flows it measures.
    flows = measured(flows, summary)
    return Run(path=path, label=label, summary=summary, flows=flows, **optional)
