"""`fctlab query DIR "SQL"`: SQL (DuckDB) over a sweep's store; see :mod:`fctlab.sweeps` (a module of its own so that
``fctlab.query``, the function, is not shadowed)."""

from .sweeps import configure_query as configure  # noqa: F401
from .sweeps import run_query as run  # noqa: F401
