"""fctlab: flow completion time lab.

A packet-level data-center network simulator (Rust core) with a thin Python front end::

    import fctlab
    res = fctlab.run("scenarios/examples/demo.toml", seed=2)
    res.flows.head()          # one row per flow (pandas DataFrame)
    res.summary["drops"]
    res.write("out/demo")     # flows.parquet, links.parquet, summary.json

See ``docs/scenarios.md`` for the scenario format.
"""

from ._core import VERSION as __version__
from .api import RunResult, ScenarioError, run, validate

__all__ = ["run", "validate", "RunResult", "ScenarioError", "__version__"]
