"""`fctlab query DIR "SQL"`: SQL (DuckDB) over a sweep's store; see :mod:`fctlab.sweep`."""

from .sweep import configure_query as configure  # noqa: F401
from .sweep import run_query as run  # noqa: F401
