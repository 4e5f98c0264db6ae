"""fctlab: flow completion time lab.

A packet-level data-center network simulator (Rust core) with a thin Python front end::

    import fctlab
    res = fctlab.run("scenarios/examples/demo.toml", seed=2)
    res.flows.head()          # one row per flow (pandas DataFrame)
    res.summary["drops"]
    res.write("out/demo")     # flows.parquet, links.parquet, summary.json

    study = fctlab.sweep("sweep.toml", "out/sweep")   # or fctlab.open_sweep("out/sweep")
    study.slowdown_by_size()  # the sweep report's table; study.flows: every run's flows (DuckDB)

See ``docs/scenarios.md`` for the scenario format, ``docs/sweeps.md`` for :func:`sweep`,
:func:`open_sweep` and :func:`query`.
"""

from ._core import VERSION as __version__
from .api import RunResult, ScenarioError, run, validate
from .sweepresult import SweepResult, open_sweep

__all__ = [
    "run",
    "validate",
    "sweep",
    "open_sweep",
    "query",
    "RunResult",
    "SweepResult",
    "ScenarioError",
    "__version__",
]


def sweep(sweep_file, out, workers=None, cluster=None, retries=1, **kwargs) -> SweepResult:
    """Runs a parameter sweep into `out` (resumable); returns its store as a
    :class:`SweepResult` (``.runs``: ``runs.parquet`` as a DataFrame). See
    :func:`fctlab.sweeps.sweep` for the options."""
    from .sweeps import sweep as _sweep  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

    _sweep(sweep_file, out, workers=workers, cluster=cluster, retries=retries, **kwargs)
    return SweepResult(out)


def query(directory, sql):
    """SQL (DuckDB) over a sweep directory's tables ``runs`` and ``flows``; returns a DataFrame.
    See :func:`fctlab.sweeps.query`."""
    from .sweeps import query as _query  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

    return _query(directory, sql)
