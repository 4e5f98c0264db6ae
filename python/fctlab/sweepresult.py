"""A sweep's store from Python (docs/sweeps.md, "From Python"): :func:`open_sweep` of a store's
directory, or what :func:`fctlab.sweep` returns. The runs table is read when asked for; the
flows (and links, queues, cwnd, drops) stay in the store as DuckDB relations until a query
asks for rows; the slowdown-by-size table and figure are the sweep report's own."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

from .sweeps_query import TABLES, QueryError, connect
from .sweepstore import check_store, refusal

__all__ = ["SweepResult", "Png", "open_sweep"]


class SweepResult:
    """A verified sweep store. ``runs`` is ``runs.parquet`` as a DataFrame; ``flows`` (and
    ``table(name)``) are lazy DuckDB relations over the stored runs' files, each row with its
    run's swept values, seed and run_id (``.df()``, ``.filter(...)``, ``.aggregate(...)``);
    :meth:`query` runs SQL over them; :meth:`slowdown_by_size` and :meth:`plot` give the sweep
    report's table and figure; :meth:`report` writes the report."""

    def __init__(self, directory: "str | os.PathLike"):
        from .sweeps import SweepError  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

        self.directory = Path(directory)
        if not (self.directory / "runs.parquet").is_file():
            raise SweepError(f"{self.directory}: not a sweep directory (no runs.parquet)")
        problems = check_store(self.directory)[0]
        if problems:
            raise SweepError(refusal(self.directory, problems))
        self._runs = None
        self._con = None

    def __repr__(self) -> str:
        runs = self.runs
        done = int((runs["status"] == "done").sum())
        keys = ", ".join(self.swept) or "none"
        return f"SweepResult({str(self.directory)!r}: {done} of {len(runs)} runs done; swept: {keys})"

    @property
    def runs(self):
        """``runs.parquet``: one row per run (swept values, seed, status, summary figures)."""
        if self._runs is None:
            import pandas as pd  # lazy: pandas costs 200 ms of start-up

            self._runs = pd.read_parquet(self.directory / "runs.parquet")
        return self._runs

    @property
    def swept(self) -> list:
        """The swept keys: the runs table's columns between ``run_id`` and ``seed``."""
        cols = list(self.runs.columns)
        return cols[cols.index("run_id") + 1 : cols.index("seed")]

    def _connection(self):
        if self._con is None:
            from .sweeps import SweepError  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

            try:
                self._con = connect(self.directory)[0]
            except QueryError as e:
                raise SweepError(str(e)) from None
        return self._con

    def table(self, name: str):
        """A lazy DuckDB relation over table `name` (runs, flows, links, queues, cwnd, drops)."""
        return self._connection().sql(f"SELECT * FROM {_table_name(name)}")

    @property
    def flows(self):
        """Every stored run's flows, a lazy DuckDB relation (``.df()`` reads it)."""
        return self.table("flows")

    def query(self, sql: str):
        """`sql` over the store's tables (as ``fctlab query``); returns a DataFrame."""
        from .sweeps import query  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

        return query(self.directory, sql)

    def slowdown_by_size(self, x: Optional[str] = None, where: Sequence[str] = ()):
        """The sweep report's slowdown-by-size table, tidy: one row per (other swept values,
        `x`, size bucket, statistic) with the geometric mean over seeds (`gmean`), its interval
        (`lo`, `hi`) and the seeds. `x` defaults as the report's does; `where` selects runs
        (``"load=0.5"``)."""
        from .report.sweep import slowdown_by_size  # lazy: loads pandas and pyarrow

        return slowdown_by_size(self.directory, x=x, where=list(where))[0]

    def plot(self, path: "str | os.PathLike | None" = None, x: Optional[str] = None, where: Sequence[str] = ()):
        """The sweep report's slowdown-by-size figure (the same PNG ``fctlab report`` writes),
        shown in a notebook; written to `path` when given. Returns it as :class:`Png`."""
        from .report.sweep import slowdown_by_size, slowdown_figure  # lazy: loads pandas and pyarrow

        t, per_run, x, lines, _ = slowdown_by_size(self.directory, x=x, where=list(where))
        png = Png(slowdown_figure(t, per_run, x, lines)[0])
        if path is not None:
            Path(path).write_bytes(png)
        return png

    def report(self, out: "str | os.PathLike", **options) -> Path:
        """Writes the sweep report into `out` (as ``fctlab report DIR``); returns its path."""
        from .report.sweep import write_sweep_report  # lazy: loads matplotlib

        return write_sweep_report(self.directory, out, **options)


class Png(bytes):
    """A PNG image's bytes, which a notebook shows as the image."""

    def _repr_png_(self) -> bytes:
        return bytes(self)


def open_sweep(directory: "str | os.PathLike") -> SweepResult:
    """The sweep store in `directory`, verified against its checksums (a store that fails is a
    :class:`fctlab.sweeps.SweepError` naming the first problem)."""
    return SweepResult(directory)


def _table_name(name: str) -> str:
    from .sweeps import SweepError  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

    if name not in ("runs", *TABLES):
        raise SweepError(f"{name!r}: not a table of a sweep's store ({', '.join(('runs', *TABLES))})")
    return name
