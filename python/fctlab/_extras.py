"""The optional parts of fctlab and the libraries they need.

``pip install fctlab`` brings the core (numpy, pandas, pyarrow): running scenarios and sweeps,
their results as DataFrames and Parquet files, comparing them. The rest comes with an extra,
named in ``pyproject.toml``'s ``[project.optional-dependencies]``::

    pip install 'fctlab[plot]'      # fctlab report's plots, the reproductions' figures (matplotlib)
    pip install 'fctlab[query]'     # fctlab query, fctlab.query, fctlab bench (duckdb)
    pip install 'fctlab[kernel]'    # fctlab kernel, fctlab testbed: the BPF objects' parameters (pyelftools)
    pip install 'fctlab[cluster]'   # fctlab sweep --cluster (dask[distributed])
    pip install 'fctlab[all]'       # all four

Every import of such a library sits in ``with extra(NAME):``, so that a missing one raises
:class:`MissingExtra`, whose message is one line naming the ``pip install`` that brings it
(the command line prints it and exits with status 2)::

    def draw():
        with extra("plot"):
            from matplotlib.figure import Figure  # lazy: matplotlib costs 300 ms of start-up
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["EXTRAS", "MissingExtra", "extra"]

#: extra -> (what needs it, the distribution it installs as pip names it, the top-level
#: modules that distribution provides)
EXTRAS = {
    "plot": ("plotting", "matplotlib", ("matplotlib",)),
    "query": ("querying a sweep", "duckdb", ("duckdb",)),
    "kernel": ("reading BPF objects", "pyelftools", ("elftools",)),
    "cluster": ("running on a Dask cluster", "dask[distributed]", ("dask", "distributed")),
}


class MissingExtra(ImportError):
    """A library of an extra that is not installed; the message says in one line what needs it
    and the ``pip install`` that brings it."""

    def __init__(self, name: str, module: str):
        what, dist, _ = EXTRAS[name]
        super().__init__(f"{what} needs {dist}: pip install 'fctlab[{name}]'", name=module)
        self.extra = name


@contextmanager
def extra(name: str) -> Iterator[None]:
    """Imports of the extra `name`'s libraries: a missing one raises :class:`MissingExtra`.
    Any other failure (a library's own missing dependency, say) passes through as it is."""
    if name not in EXTRAS:
        raise ValueError(f"unknown extra {name!r} (known: {', '.join(EXTRAS)})")
    try:
        yield
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in EXTRAS[name][2]:
            raise
        raise MissingExtra(name, e.name) from None
