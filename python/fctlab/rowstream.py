"""``flows.parquet`` written while a run goes on, by a thread of its own.

The thread starts before the simulation does and loads pyarrow and the run-directory writer
(:mod:`fctlab.rundir`) first, while the core simulates with the interpreter lock released, so
that on a machine with a second core the libraries' load time (about 0.15 s) overlaps the run
instead of preceding it. This module itself loads only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional, Union

from .schemas import table_schema


class RowStream:
    """``flows.parquet`` written while a run goes on: the core's batches of rows (``put``, a
    C call that Ctrl-C cannot interrupt half-way) are converted and written in a thread of
    their own while the simulation runs, in row groups of exactly :attr:`ROW_GROUP` rows (the
    last one shorter), so that the file is the same bytes whatever the batches were. The file
    is a temporary one beside ``out_dir`` until :func:`fctlab.rundir.write_run` moves it into
    place; :meth:`discard` removes it if the run is not written.

    The rows are in the order the flows' rows became final (flows that finished, once none
    of their packets was left in the network), then the others in the order of the scenario."""

    ROW_GROUP = 65_536

    def __init__(self, out_dir: Union[str, os.PathLike], to_table):
        out = Path(out_dir)
        where = out if out.is_dir() else out.parent
        where.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.flows-", suffix=".parquet", dir=where)
        os.close(fd)
        self.path = Path(name)
        self._to_table = to_table
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.put = self._queue.put
        self._pending: list = []
        self._pending_rows = 0
        self._writer: Any = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._work, name="fctlab-flows-writer", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        """Loads pyarrow and the run-directory writer (in the thread) and opens the file."""
        import pyarrow.parquet as pq  # lazy: loaded in this thread, beside the run (see the module's text)

        from . import rundir  # lazy: pyarrow; loaded here, beside the run, for write_run after it

        os.chmod(self.path, 0o666 & ~rundir._umask())  # as the directory's other files (mkstemp makes it 0600)
        self._writer = pq.ParquetWriter(self.path, table_schema("flows"))

    def _add(self, table, last: bool = False) -> None:
        import pyarrow as pa  # lazy: loaded in this thread, beside the run (see the module's text)

        from .rundir import _canonical  # lazy: pyarrow, loaded in this thread

        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows < self.ROW_GROUP and not last:
            return
        rows = pa.concat_tables(self._pending)
        start = 0
        while rows.num_rows - start >= self.ROW_GROUP or (last and start < rows.num_rows):
            self._writer.write_table(_canonical(rows.slice(start, self.ROW_GROUP)))
            start += self.ROW_GROUP
        rest = rows.slice(start)
        self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def _work(self) -> None:
        try:
            self._open()
        except BaseException as e:  # kept for the main thread
            self._error = e
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            if self._error is None:
                try:
                    self._add(self._to_table(batch))
                except BaseException as e:  # kept for the main thread (a full disk, ...)
                    self._error = e

    def finish(self, rest) -> Path:
        """Writes the rows the run kept (``rest``) after the streamed ones, closes the file and
        returns its path."""
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
        self._add(rest, last=True)
        self._writer.close()
        return self.path

    def discard(self) -> None:
        """Stops the thread and removes the file (when the run is not written)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self.path.unlink(missing_ok=True)
