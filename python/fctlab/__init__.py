"""fctlab: flow completion time lab.

A packet-level data-center network simulator (Rust core) with a thin Python front end::

    import fctlab
    res = fctlab.run("scenarios/examples/demo.toml", seed=2)
    res.flows.head()          # one row per flow (pandas DataFrame)
    res.summary["drops"]
    res.write("out/demo")     # flows.parquet, links.parquet, summary.json

See ``docs/scenarios.md`` for the scenario format, ``docs/sweeps.md`` for :func:`sweep` and
:func:`query`.
"""

from ._core import VERSION as __version__
from .api import RunResult, ScenarioError, run, validate

__all__ = ["run", "validate", "sweep", "query", "RunResult", "ScenarioError", "__version__"]


def sweep(sweep_file, out, workers=None, cluster=None, retries=1, **kwargs):
    """Runs a parameter sweep into `out` (resumable); returns ``runs.parquet`` as a DataFrame.
    See :func:`fctlab.sweeps.sweep`."""
    from .sweeps import sweep as _sweep  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

    return _sweep(sweep_file, out, workers=workers, cluster=cluster, retries=retries, **kwargs)


def query(directory, sql):
    """SQL (DuckDB) over a sweep directory's tables ``runs`` and ``flows``; returns a DataFrame.
    See :func:`fctlab.sweeps.query`."""
    from .sweeps import query as _query  # lazy: fctlab.sweeps loads pyarrow (80 ms of start-up)

    return _query(directory, sql)
