"""The run summary's statistics over a flows table read in batches, so that summarising ten
million flows holds one batch and a few thousand counters, not the run's rows.

Counts, sums and maxima take one pass. Quantiles are exact, by a second pass: the first
counts the values in 2^20 buckets by the top bits of their IEEE 754 representation (which
orders non-negative doubles as their values), the second keeps only the values of the
buckets holding the ranks asked for. The quantile is then pyarrow's and numpy's default
(linear interpolation between the two closest ranks)."""

from __future__ import annotations

import array
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence

from .numfmt import count, number, seconds

import pyarrow as pa  # lazy: this module is imported only where a run's flows are summarised
import pyarrow.compute as pc

#: A double's top 20 bits (sign, exponent, 8 bits of mantissa): a bucket spans 1/256 of a
#: binade, so a bucket rarely holds many values.
_SHIFT = 44


def _uint64s(xs: Sequence[int]) -> pa.Array:
    """An Arrow array of `xs` made from their bytes: converting Python values (a list, or a
    number given to a compute function) imports pandas, which `fctlab run` does without."""
    return pa.Array.from_buffers(pa.uint64(), len(xs), [None, pa.py_buffer(array.array("Q", xs))])


def _float64(x: float) -> pa.Scalar:
    return pa.Array.from_buffers(pa.float64(), 1, [None, pa.py_buffer(array.array("d", [x]))])[0]


_SHIFT_BY = _uint64s([_SHIFT])[0]
_FALSE = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\x00")])[0]


def _buckets(values: pa.Array) -> pa.Array:
    return pc.shift_right(values.view(pa.uint64()), _SHIFT_BY)


@dataclass
class Column:
    """A column's count, sum, maximum, and what its quantiles need."""

    n: int = 0
    total: float = 0.0
    top: Optional[float] = None
    counts: dict = field(default_factory=dict)
    kept: list = field(default_factory=list)

    def add(self, values: pa.Array) -> None:
        """First pass: `values` (non-negative, no nulls)."""
        if not len(values):
            return
        self.n += len(values)
        self.total += pc.sum(values).as_py()
        m = pc.max(values).as_py()
        self.top = m if self.top is None else max(self.top, m)
        vc = pc.value_counts(_buckets(values))
        for b, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            self.counts[b] = self.counts.get(b, 0) + c

    @property
    def mean(self) -> Optional[float]:
        return self.total / self.n if self.n else None

    def _ranks(self, qs: Sequence[float]) -> list:
        return [r for q in qs for r in sorted({math.floor(q * (self.n - 1)), math.ceil(q * (self.n - 1))})]

    def wanted_buckets(self, qs: Sequence[float]) -> pa.Array:
        """The buckets holding the ranks the quantiles `qs` need."""
        wanted, below = set(), 0
        ranks = sorted(set(self._ranks(qs)))
        for b in sorted(self.counts):
            c = self.counts[b]
            if any(below <= r < below + c for r in ranks):
                wanted.add(b)
            below += c
        return _uint64s(sorted(wanted))

    def keep(self, values: pa.Array, wanted: pa.Array) -> None:
        """Second pass: the values of the wanted buckets."""
        if len(values):
            self.kept.append(pc.filter(values, pc.is_in(_buckets(values), value_set=wanted)))

    def quantiles(self, qs: Sequence[float]) -> list:
        """Exact quantiles `qs` (after both passes)."""
        if not self.n:
            return [None for _ in qs]
        values = pa.concat_arrays(self.kept)
        values = values.take(pc.sort_indices(values))
        kept, kept_buckets = values.to_pylist(), _buckets(values).to_pylist()
        # For each bucket: the rank of its first value among all values, and among the kept ones.
        rank_of, below = {}, 0
        for b in sorted(self.counts):
            rank_of[b] = below
            below += self.counts[b]
        kept_at = {}
        for i, b in enumerate(kept_buckets):
            kept_at.setdefault(b, i)

        def at(r: int) -> float:
            b = max(x for x in rank_of if rank_of[x] <= r and self.counts[x] > 0)
            return kept[kept_at[b] + r - rank_of[b]]

        out = []
        for q in qs:
            h = q * (self.n - 1)
            lo = math.floor(h)
            a, b = at(lo), at(math.ceil(h))
            out.append((1 - (h - lo)) * a + (h - lo) * b if a != b else a)
        return out


@dataclass
class FctSummary:
    """What `fctlab run` prints about the flows."""

    measured: int = 0
    fct: Column = field(default_factory=Column)
    slowdown: Column = field(default_factory=Column)
    retransmits: int = 0
    timeouts: int = 0
    #: (bytes_delivered, start_s) of each long-lived flow.
    long_lived: list = field(default_factory=list)
    #: Which flows the figures are over: "measured flows (window START–END)" or "all flows".
    label: str = "all flows"

    def fct_text(self) -> str:
        """The FCT figures in words: ``"mean 5.64 ms, median 709 us, p99 41.2 ms"``."""
        q = self.fct.quantiles((0.5, 0.99))
        return f"mean {seconds(self.fct.mean)}, median {seconds(q[0])}, p99 {seconds(q[1])}"

    def slowdown_text(self) -> str:
        """The slowdown figures in words: ``"mean 3.2, median 1.8, p99 21"``."""
        q = self.slowdown.quantiles((0.5, 0.99))
        return f"mean {number(self.slowdown.mean)}, median {number(q[0])}, p99 {number(q[1])}"

    def headline(self) -> str:
        """The run's figures in one line, the same wherever a run is summarised (``fctlab
        run``, a RunResult's repr, ``fctlab report``, ``fctlab compare``)."""
        text = f"{self.label}: {count(self.measured)} flows, {count(self.fct.n)} completed"
        return text + (f"; FCT {self.fct_text()}" if self.fct.n else "")


#: The columns the summary reads.
COLUMNS = ["start_s", "completed", "fct_s", "slowdown", "size_bytes", "bytes_delivered", "retransmits", "timeouts"]


def window_label(summary: dict) -> str:
    """Which flows a run's figures are over: "measured flows (window START–END)" when its
    summary has a measurement window (``[measure]``), "all flows" otherwise."""
    lo, hi = summary.get("measure_from_s"), summary.get("measure_until_s")
    if lo is None and hi is None:
        return "all flows"
    end = seconds(hi) if hi is not None else "end of run"
    return f"measured flows (window {seconds(lo or 0.0)}–{end})"


def run_figures(batches: Callable[[], Iterable[pa.RecordBatch]], summary: dict) -> FctSummary:
    """The figures every summary of a run shows (``fctlab run``, a RunResult's repr, ``fctlab
    report``, ``fctlab compare``): those of :func:`summarise` over the run's measured flows
    (``summary``'s window, every flow without one), with median and 99th percentile."""
    out = summarise(batches, summary.get("measure_from_s"), summary.get("measure_until_s"), (0.5, 0.99))
    out.label = window_label(summary)
    return out


def summarise(
    batches: Callable[[], Iterable[pa.RecordBatch]], lo: Optional[float], hi: Optional[float], qs: Sequence[float]
) -> FctSummary:
    """The summary of the flows `batches()` yields (called once per pass), FCT and slowdown of
    the completed flows that started in [lo, hi) (every flow when both are None)."""
    out = FctSummary()

    def measured(batch: pa.RecordBatch) -> Iterator[tuple]:
        keep = batch.column("completed")
        if lo is not None or hi is not None:
            start = batch.column("start_s")
            window = pc.greater_equal(start, _float64(lo or 0.0))
            if hi is not None:
                window = pc.and_(window, pc.less(start, _float64(hi)))
            window = pc.fill_null(window, _FALSE)
            out.measured += pc.sum(window).as_py() or 0
            keep = pc.and_(keep, window)
        else:
            out.measured += batch.num_rows
        done = batch.filter(keep)
        for col, name in ((out.fct, "fct_s"), (out.slowdown, "slowdown")):
            yield col, pc.drop_null(done.column(name))

    for batch in batches():
        names = batch.schema.names
        if "retransmits" in names:
            out.retransmits += pc.sum(batch.column("retransmits")).as_py() or 0
        if "timeouts" in names:
            out.timeouts += pc.sum(batch.column("timeouts")).as_py() or 0
        ll = batch.filter(pc.is_null(batch.column("size_bytes")))
        if "bytes_delivered" in names:
            out.long_lived += zip(ll.column("bytes_delivered").to_pylist(), ll.column("start_s").to_pylist())
        for col, values in measured(batch):
            col.add(values)
    wanted = {id(c): c.wanted_buckets(qs) for c in (out.fct, out.slowdown)}
    if any(len(w) for w in wanted.values()):
        out.measured = 0
        for batch in batches():
            for col, values in measured(batch):
                col.keep(values, wanted[id(col)])
    return out
