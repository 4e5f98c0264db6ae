"""The result tables' Arrow schemas, built from the simulator core's definitions
(``_core.schemas()``): the one place both the API (:mod:`fctlab.api`) and the run-directory
writer (:mod:`fctlab.rundir`) take them from."""

from __future__ import annotations

import functools

from . import _core


@functools.lru_cache(maxsize=None)
def table_schema(table: str):
    """The Arrow schema of a result table, as the simulator core defines it. Every field is
    nullable in Arrow terms: the testbed writes the same tables and leaves null what the
    kernel does not report (docs/testbed.md); the core's non-null columns never hold one."""
    import pyarrow as pa  # lazy: pyarrow costs 80 ms of start-up (`import fctlab` loads this module)

    types = {
        "int64": pa.int64(),
        "float64": pa.float64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "string (dictionary)": pa.dictionary(pa.int32(), pa.string()),
    }
    return pa.schema([pa.field(name, types[ty]) for name, ty, _nullable in _core.schemas()[table]])
