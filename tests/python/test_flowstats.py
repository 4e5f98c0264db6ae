"""The run summary's statistics over batches: exact quantiles in two passes, the same as
pyarrow's over the whole column, and the window, long-lived flows and sums of the summary."""

import math
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from fctlab.flowstats import COLUMNS, Column, summarise

QS = (0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0)
_R1, _R2 = random.Random(1), random.Random(2)
#: FCT-like values with a heavy tail, and values that all fall in one bucket.
LOGNORMAL = [_R1.lognormvariate(-9, 2) for _ in range(5_000)]
ONE_BUCKET = [1.0 + _R2.random() * 1e-9 for _ in range(3_000)]


def _two_pass(values, batch):
    arr = pa.array(values, pa.float64())
    col = Column()
    for i in range(0, len(values), batch):
        col.add(arr[i : i + batch])
    wanted = col.wanted_buckets(QS)
    for i in range(0, len(values), batch):
        col.keep(arr[i : i + batch], wanted)
    return col, arr


@pytest.mark.parametrize(
    "values",
    [
        [3.5],
        [1.0, 2.0],
        [1e-6] * 7 + [5.0] * 3,  # ties, and two far-apart groups
        LOGNORMAL,
        ONE_BUCKET,
    ],
    ids=["one", "two", "ties", "lognormal", "one-bucket"],
)
def test_quantiles_are_exactly_pyarrows_over_the_whole_column(values):
    for batch in (1, 7, 1000):
        col, arr = _two_pass(values, batch)
        want = [pc.quantile(arr, q=q, interpolation="linear")[0].as_py() for q in QS]
        assert col.quantiles(QS) == want, batch
        assert col.n == len(values) and col.top == max(values)
        assert math.isclose(col.mean, pc.mean(arr).as_py(), rel_tol=1e-12)
        # the second pass kept a few buckets' values, not the column
        if values is LOGNORMAL:
            assert sum(len(k) for k in col.kept) < len(values) / 4


def test_the_summary_of_batches_is_that_of_the_table():
    rng = random.Random(5)
    n = 4_000
    start = [rng.random() for _ in range(n)]
    completed = [rng.random() < 0.9 for _ in range(n)]
    size = [None if i % 500 == 0 else rng.randint(1, 10**6) for i in range(n)]
    fct = [rng.lognormvariate(-8, 1.5) if c else None for c in completed]
    table = pa.table(
        {
            "start_s": start,
            "completed": completed,
            "fct_s": fct,
            "slowdown": [None if f is None else 1 + f * 1e4 for f in fct],
            "size_bytes": pa.array(size, pa.uint64()),
            "bytes_delivered": pa.array([rng.randint(0, 10**6) for _ in range(n)], pa.uint64()),
            "retransmits": pa.array([rng.randint(0, 3) for _ in range(n)], pa.uint64()),
            "timeouts": pa.array([rng.randint(0, 1) for _ in range(n)], pa.uint64()),
        }
    )
    assert table.column_names == COLUMNS
    fs = summarise(lambda: table.to_batches(max_chunksize=333), 0.25, 0.75, (0.5, 0.99))
    window = pc.and_(pc.greater_equal(table["start_s"], 0.25), pc.less(table["start_s"], 0.75))
    t = table.filter(window)
    done = t.filter(t["completed"])
    assert fs.measured == t.num_rows
    for col, name in ((fs.fct, "fct_s"), (fs.slowdown, "slowdown")):
        want = [pc.quantile(done[name], q=q, interpolation="linear")[0].as_py() for q in (0.5, 0.99)]
        assert col.quantiles((0.5, 0.99)) == want
        assert col.n == done.num_rows
    assert fs.retransmits == pc.sum(table["retransmits"]).as_py()
    assert fs.timeouts == pc.sum(table["timeouts"]).as_py()
    assert len(fs.long_lived) == 8  # every flow without a size, in or out of the window
