"""Flow, job, link and queue metrics over fctlab result tables.

Every function in this module is pure: it takes pandas DataFrames shaped like
the files of a run directory (``flows.parquet``, ``links.parquet``,
``queues.parquet``) and returns new DataFrames or plain Python values. Nothing
is read from or written to disk, and only numpy and pandas are used.

Conventions
-----------
* Units follow the column names: ``*_s`` is seconds, ``*_bytes`` bytes,
  ``*_pkts`` packets, ``*_bps`` bits per second.
* Sizes use decimal units: 1 KB = 1000 bytes and 1 MB = 1000 KB = 10**6 bytes.
* A flow counts as completed when its ``completed`` column is true *and* it
  has a ``fct_s``. Incomplete flows are counted, but never enter FCT or
  slowdown statistics.
* Quantiles of per-flow samples (FCT, slowdown) use linear interpolation
  between order statistics (numpy's default ``"linear"`` method).
* A statistic over no values is NaN in a DataFrame and ``None`` in a dict.
* A missing input column raises ``ValueError`` naming the function, the
  argument and the missing columns.

The definitions are written out in ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import re
from typing import Any, Callable, NamedTuple


import numpy as np
import pandas as pd

from .numfmt import seconds

__all__ = [
    "measured",
    "parse_size",
    "window_text",
    "KB",
    "MB",
    "DEFAULT_BUCKETS",
    "LONG_LIVED",
    "OTHER",
    "LossRate",
    "assign_buckets",
    "describe_buckets",
    "fct_stats",
    "deadline_meet_ratio",
    "job_completion_times",
    "loss_rate",
    "timeout_causes",
    "link_utilization",
    "queue_stats",
    "active_flows_over_time",
    "flow_set_mismatch",
    "paired_comparison",
]

KB = 1_000
"""One kilobyte in bytes (decimal)."""
MB = 1_000_000
"""One megabyte in bytes (decimal)."""

DEFAULT_BUCKETS: tuple[tuple[str, float | None, float | None], ...] = (
    ("small", 0, 100 * KB),
    ("medium", 100 * KB, 10 * MB),
    ("large", 10 * MB, None),
)
"""Default flow-size buckets as ``(name, lo_bytes, hi_bytes)``.

A flow of ``size_bytes`` falls in a bucket when ``lo_bytes <= size_bytes <
hi_bytes`` (lower edge inclusive, upper edge exclusive); ``None`` means no
bound. So: small is below 100 KB, medium is 100 KB up to but excluding 10 MB,
and large is 10 MB and above (1 KB = 1000 bytes).
"""

LONG_LIVED = "long-lived"
"""Bucket name of flows without a size (``size_bytes`` null)."""
OTHER = "other"
"""Bucket name of sized flows that fall in none of the configured buckets."""

_SAMPLE_STATS = ("mean", "median", "p95", "p99", "max")


_SIZE_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def parse_size(text: str) -> int:
    """A size as scenario files write it (``"100KB"``, ``"1.5MB"``, ``"64KiB"``, ``"1500B"``, or
    a bare number of bytes), in bytes; decimal prefixes are powers of 1000, binary ones of
    1024. ValueError names what it expected."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2) if m else None
    if not m or (unit and unit not in _SIZE_UNITS):
        raise ValueError(f'{text!r} is not a size (expected e.g. "100KB", "1MB", "64KiB" or bytes)')
    return round(float(m.group(1)) * _SIZE_UNITS.get(unit or "B", 1))


def measured(flows: pd.DataFrame, summary: dict) -> pd.DataFrame:
    """The flows the run measures: those that started inside its measurement window
    (``[measure]``; ``summary.json``'s ``measure_from_s`` and ``measure_until_s``), or every
    flow when the run has none. The others ran (they loaded the network) but metrics leave
    them out, as the papers do with warm-up and drain."""
    lo, hi = summary.get("measure_from_s"), summary.get("measure_until_s")
    if lo is None and hi is None:
        return flows
    start = flows["start_s"]
    keep = start.notna() & (start >= (lo or 0.0))
    if hi is not None:
        keep &= start < hi
    return flows[keep]


def window_text(summary: dict) -> "str | None":
    """The measurement window in words, or None when the run has none."""
    lo, hi = summary.get("measure_from_s"), summary.get("measure_until_s")
    if lo is None and hi is None:
        return None
    end = seconds(hi) if hi is not None else "the end"
    return f"flows starting from {seconds(lo or 0.0)} to {end}"


# --------------------------------------------------------------------------
# input checks and conversions


def _require(df: Any, columns: Iterable[str], *, func: str, arg: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{func}: {arg} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        have = ", ".join(repr(str(c)) for c in df.columns) or "no columns"
        raise ValueError(f"{func}: {arg} is missing column(s) {', '.join(repr(c) for c in missing)} (it has {have})")


def _floats(s: pd.Series, *, func: str) -> np.ndarray:
    """Column as float64 numpy array, nulls as NaN."""
    try:
        return s.to_numpy(dtype="float64", na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{func}: column {s.name!r} must be numeric ({exc})") from None


def _bools(s: pd.Series, *, func: str) -> np.ndarray:
    """Column as bool numpy array, nulls as False."""
    if s.dtype == bool:
        return s.to_numpy()
    try:
        return s.astype("boolean").fillna(False).to_numpy(dtype=bool)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{func}: column {s.name!r} must be boolean ({exc})") from None


def _nan_to_none(x: float) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def _describe(values: np.ndarray, name: str) -> dict[str, float]:
    """mean, median, p95, p99, max of the non-NaN values, NaN when there are none."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {f"{stat}_{name}": np.nan for stat in _SAMPLE_STATS}
    p50, p95, p99 = np.percentile(v, [50, 95, 99])
    return {
        f"mean_{name}": float(v.mean()),
        f"median_{name}": float(p50),
        f"p95_{name}": float(p95),
        f"p99_{name}": float(p99),
        f"max_{name}": float(v.max()),
    }


# --------------------------------------------------------------------------
# size buckets


def _check_buckets(buckets: Sequence[Sequence[Any]]) -> list[tuple[str, float, float]]:
    out: list[tuple[str, float, float]] = []
    seen: set[str] = set()
    for b in buckets:
        if len(b) != 3:
            raise ValueError(f"bucket {b!r} must be a (name, lo_bytes, hi_bytes) triple")
        name, lo, hi = b
        if not isinstance(name, str) or not name:
            raise ValueError(f"bucket name {name!r} must be a non-empty string")
        if name in seen:
            raise ValueError(f"bucket name {name!r} is used twice")
        if name in (LONG_LIVED, OTHER):
            raise ValueError(f"bucket name {name!r} is reserved")
        seen.add(name)
        lo_f = -np.inf if lo is None else float(lo)
        hi_f = np.inf if hi is None else float(hi)
        if not lo_f < hi_f:
            raise ValueError(f"bucket {name!r}: lo_bytes ({lo}) must be below hi_bytes ({hi})")
        out.append((name, lo_f, hi_f))
    if not out:
        raise ValueError("buckets must not be empty")
    by_lo = sorted(out, key=lambda t: t[1])
    for (n1, _, hi1), (n2, lo2, _) in zip(by_lo, by_lo[1:]):
        if lo2 < hi1:
            raise ValueError(f"buckets {n1!r} and {n2!r} overlap")
    return out


def _bucket_order(buckets: Sequence[Sequence[Any]]) -> list[str]:
    return [b[0] for b in buckets] + [LONG_LIVED, OTHER]


def assign_buckets(sizes: pd.Series, buckets: Sequence[Sequence[Any]] = DEFAULT_BUCKETS) -> pd.Series:
    """Size bucket name of each flow.

    Parameters
    ----------
    sizes : pandas.Series
        Flow sizes in bytes (``size_bytes``); null for long-lived flows.
    buckets : sequence of (name, lo_bytes, hi_bytes)
        A size falls in a bucket when ``lo_bytes <= size < hi_bytes``; ``None``
        for either edge means unbounded. Buckets must not overlap.

    Returns
    -------
    pandas.Series
        Bucket names, same index as `sizes`: an ordered Categorical whose
        categories are the buckets in their configured (size) order, then
        ``"long-lived"`` and ``"other"``, so that sorting by it sorts by size.
        Null sizes get ``"long-lived"``; sizes in no bucket get ``"other"``.
    """
    checked = _check_buckets(buckets)
    x = _floats(pd.Series(sizes, name=getattr(sizes, "name", "size_bytes")), func="assign_buckets")
    names = np.full(x.shape, OTHER, dtype=object)
    for name, lo, hi in checked:
        names[(x >= lo) & (x < hi)] = name
    names[np.isnan(x)] = LONG_LIVED
    kind = pd.CategoricalDtype(_bucket_order(buckets), ordered=True)
    return pd.Series(names, index=getattr(sizes, "index", None), name="bucket", dtype=kind)


def _fmt_bytes(n: float) -> str:
    if n >= MB and n % (MB // 10) == 0:
        return f"{n / MB:g} MB"
    if n >= KB and n % (KB // 10) == 0:
        return f"{n / KB:g} KB"
    return f"{n:g} B"


def describe_buckets(buckets: Sequence[Sequence[Any]] = DEFAULT_BUCKETS) -> list[str]:
    """Human-readable edges of each bucket, e.g. ``"medium: 100 KB <= size < 10 MB"``.

    Parameters
    ----------
    buckets : sequence of (name, lo_bytes, hi_bytes)
        As for :func:`assign_buckets`.

    Returns
    -------
    list of str
        One line per bucket, in the given order.
    """
    lines = []
    for name, lo, hi in _check_buckets(buckets):
        if lo <= 0 and np.isinf(hi):
            lines.append(f"{name}: any size")
        elif lo <= 0:
            lines.append(f"{name}: size < {_fmt_bytes(hi)}")
        elif np.isinf(hi):
            lines.append(f"{name}: size >= {_fmt_bytes(lo)}")
        else:
            lines.append(f"{name}: {_fmt_bytes(lo)} <= size < {_fmt_bytes(hi)}")
    return lines


# --------------------------------------------------------------------------
# grouping


def _normalize_by(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    keys = list(by)
    if not all(isinstance(k, str) for k in keys):
        raise TypeError(f"by must be None, a column name or a list of column names, got {by!r}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"by lists a column twice: {keys!r}")
    return keys


def _grouped(
    flows: pd.DataFrame,
    keys: list[str],
    buckets: Sequence[Sequence[Any]],
    compute: Callable[[np.ndarray], dict[str, Any]],
) -> pd.DataFrame:
    """Apply `compute` to the row positions of each group and stack the rows.

    Groups are ordered by key: buckets in their configured order, other keys
    ascending with null last. With ``keys == ["bucket"]`` every configured
    bucket appears, even when empty.
    """
    if not keys:
        return pd.DataFrame([compute(np.arange(len(flows)))])
    key_values: dict[str, pd.Series] = {}
    for k in keys:
        if k == "bucket":
            key_values[k] = assign_buckets(flows["size_bytes"], buckets)
        else:
            key_values[k] = flows[k]
    codes = []
    uniques = []
    for k in keys:
        c, u = pd.factorize(key_values[k], use_na_sentinel=False)
        codes.append(c)
        uniques.append(u)
    if len(flows):
        combined = np.ravel_multi_index(codes, [max(len(u), 1) for u in uniques])
        groups, inverse = np.unique(combined, return_inverse=True)
    else:
        groups, inverse = np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    order = np.argsort(inverse, kind="stable")
    splits = np.split(order, np.cumsum(np.bincount(inverse, minlength=len(groups)))[:-1])
    rows = []
    for g, idx in zip(groups, splits):
        parts = np.unravel_index(g, [max(len(u), 1) for u in uniques])
        row = {k: u[int(p)] for k, u, p in zip(keys, uniques, parts)}
        row.update(compute(idx))
        rows.append(row)
    if keys == ["bucket"]:
        present = {r["bucket"] for r in rows}
        for b in buckets:
            if b[0] not in present:
                row = {"bucket": b[0]}
                row.update(compute(np.array([], dtype=np.int64)))
                rows.append(row)
    empty_row = {k: None for k in keys}
    empty_row.update(compute(np.array([], dtype=np.int64)))
    out = pd.DataFrame(rows, columns=list(empty_row))
    rank = {name: i for i, name in enumerate(_bucket_order(buckets))}

    def sort_key(col: pd.Series) -> pd.Series:
        if col.name == "bucket":
            return col.map(rank)
        return col

    if len(out):
        out = out.sort_values(keys, key=sort_key, na_position="last", kind="stable")
    for k in keys:
        out[k] = out[k].astype(object).where(out[k].notna(), None)
        if k == "bucket":
            order = _bucket_order(buckets)
            out[k] = pd.Categorical(out[k], categories=order + sorted(set(out[k].dropna()) - set(order)), ordered=True)
    return out.reset_index(drop=True)


def _key_columns(keys: list[str]) -> list[str]:
    """Input columns needed to group by `keys` ("bucket" is computed from size_bytes)."""
    return ["size_bytes" if k == "bucket" else k for k in keys]


# --------------------------------------------------------------------------
# flow metrics


def fct_stats(
    flows: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    buckets: Sequence[Sequence[Any]] = DEFAULT_BUCKETS,
) -> pd.DataFrame:
    """Flow completion time (FCT) and slowdown statistics.

    Incomplete flows are counted in ``count`` and ``excluded_incomplete`` but
    are excluded from every FCT and slowdown statistic: a flow enters the
    statistics only when ``completed`` is true and ``fct_s`` is not null.

    Parameters
    ----------
    flows : pandas.DataFrame
        Per-flow table with columns ``fct_s``, ``slowdown`` and ``completed``,
        plus ``size_bytes`` when grouping by ``"bucket"`` and the grouping
        columns otherwise.
    by : str or list of str, optional
        ``None`` for one row over all flows, or the key(s) to group by:
        ``"bucket"`` (size bucket, computed from ``size_bytes`` with
        `buckets`), ``"tag"``, ``"protocol"``, or any other column.
    buckets : sequence of (name, lo_bytes, hi_bytes), default DEFAULT_BUCKETS
        Size buckets; a flow is in a bucket when ``lo_bytes <= size_bytes <
        hi_bytes`` (``None`` = unbounded). 1 KB = 1000 bytes. Flows with a
        null size are in ``"long-lived"``, sizes in no bucket in ``"other"``.

    Returns
    -------
    pandas.DataFrame
        One row per group (every configured bucket appears when ``by ==
        "bucket"``, even if empty), with the key column(s) followed by
        (``bucket`` is an ordered Categorical in size order, as
        :func:`assign_buckets` returns it):

        - ``count``: flows in the group;
        - ``completed``: flows in the statistics;
        - ``excluded_incomplete``: flows left out because they did not
          complete (``count - completed``);
        - ``mean_fct_s``, ``median_fct_s``, ``p95_fct_s``, ``p99_fct_s``,
          ``max_fct_s``: FCT in seconds;
        - ``mean_slowdown``, ``median_slowdown``, ``p95_slowdown``,
          ``p99_slowdown``, ``max_slowdown``: ``fct_s / ideal_fct_s``.

        Statistics are NaN for a group without completed flows. Percentiles
        interpolate linearly between order statistics.

    Raises
    ------
    ValueError
        If a required column is missing or a bucket definition is invalid.

    Examples
    --------
    >>> flows = pd.DataFrame({"fct_s": [1.0, 3.0, None], "slowdown": [1.0, 1.5, None],
    ...                       "completed": [True, True, False]})
    >>> row = fct_stats(flows).iloc[0]
    >>> int(row["count"]), int(row["completed"]), float(row["mean_fct_s"])
    (3, 2, 2.0)
    """
    func = "fct_stats"
    keys = _normalize_by(by)
    _require(flows, ["fct_s", "slowdown", "completed", *_key_columns(keys)], func=func, arg="flows")
    _check_buckets(buckets)
    fct = _floats(flows["fct_s"], func=func)
    slowdown = _floats(flows["slowdown"], func=func)
    done = _bools(flows["completed"], func=func) & ~np.isnan(fct)

    def compute(idx: np.ndarray) -> dict[str, Any]:
        ok = done[idx]
        n_ok = int(ok.sum())
        row: dict[str, Any] = {"count": int(idx.size), "completed": n_ok, "excluded_incomplete": int(idx.size) - n_ok}
        row.update(_describe(fct[idx][ok], "fct_s"))
        row.update(_describe(slowdown[idx][ok], "slowdown"))
        return row

    return _grouped(flows, keys, buckets, compute)


def deadline_meet_ratio(
    flows: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    buckets: Sequence[Sequence[Any]] = DEFAULT_BUCKETS,
) -> pd.DataFrame:
    """Share of flows with a deadline that met it.

    Only flows with a non-null ``deadline_s`` are considered. ``deadline_s``
    is relative to the flow's start: a flow meets its deadline when it
    completed and ``fct_s <= deadline_s``. A flow that did not complete did
    not meet its deadline.

    Parameters
    ----------
    flows : pandas.DataFrame
        Per-flow table with ``deadline_s``, ``fct_s`` and ``completed`` (plus
        the grouping columns, ``size_bytes`` for ``"bucket"``).
    by : str or list of str, optional
        As for :func:`fct_stats`.
    buckets : sequence of (name, lo_bytes, hi_bytes), default DEFAULT_BUCKETS
        As for :func:`fct_stats`.

    Returns
    -------
    pandas.DataFrame
        Key column(s), then ``with_deadline`` (flows with a deadline),
        ``met``, ``missed`` (``with_deadline - met``), ``missed_incomplete``
        (missed because the flow never completed) and ``meet_ratio``
        (``met / with_deadline``; NaN when no flow has a deadline).

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    func = "deadline_meet_ratio"
    keys = _normalize_by(by)
    _require(flows, ["deadline_s", "fct_s", "completed", *_key_columns(keys)], func=func, arg="flows")
    deadline = _floats(flows["deadline_s"], func=func)
    fct = _floats(flows["fct_s"], func=func)
    done = _bools(flows["completed"], func=func) & ~np.isnan(fct)
    has = ~np.isnan(deadline)
    met = has & done & (np.nan_to_num(fct, nan=np.inf) <= np.nan_to_num(deadline, nan=-np.inf))

    def compute(idx: np.ndarray) -> dict[str, Any]:
        n = int(has[idx].sum())
        m = int(met[idx].sum())
        return {
            "with_deadline": n,
            "met": m,
            "missed": n - m,
            "missed_incomplete": int((has[idx] & ~done[idx]).sum()),
            "meet_ratio": m / n if n else np.nan,
        }

    return _grouped(flows, keys, buckets, compute)


def job_completion_times(flows: pd.DataFrame) -> pd.DataFrame:
    """Job completion time (JCT) of each group of flows.

    Flows with a non-empty ``group`` (e.g. all flows of one incast round,
    ``"incast:3"``) form a job. A group named ``"<job>:requests"`` (the
    requests of a partition-aggregate query) belongs to the job ``"<job>"``,
    so a query's JCT runs from its first request to its last response. A job
    starts at the earliest ``start_s`` of its flows and finishes at the latest
    ``finish_s``; its JCT is finish minus start. A job with any incomplete
    flow, or with a flow that never started, is incomplete: its ``finish_s``
    and ``jct_s`` are NaN.

    Parameters
    ----------
    flows : pandas.DataFrame
        Per-flow table with ``group``, ``start_s``, ``finish_s`` and
        ``completed``. Flows whose group is null or ``""`` belong to no job.

    Returns
    -------
    pandas.DataFrame
        One row per job, ordered by start time then group: ``group``,
        ``flows``, ``completed_flows``, ``start_s``, ``finish_s``, ``jct_s``
        and ``completed`` (bool).

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    func = "job_completion_times"
    _require(flows, ["group", "start_s", "finish_s", "completed"], func=func, arg="flows")
    columns = ["group", "flows", "completed_flows", "start_s", "finish_s", "jct_s", "completed"]
    group = flows["group"]
    in_job = (group.notna() & (group.astype(str) != "")).to_numpy(dtype=bool)
    if not in_job.any():
        return pd.DataFrame(
            {
                "group": pd.Series([], dtype=object),
                "flows": pd.Series([], dtype="int64"),
                "completed_flows": pd.Series([], dtype="int64"),
                "start_s": pd.Series([], dtype="float64"),
                "finish_s": pd.Series([], dtype="float64"),
                "jct_s": pd.Series([], dtype="float64"),
                "completed": pd.Series([], dtype=bool),
            }
        )
    start = _floats(flows["start_s"], func=func)[in_job]
    finish = _floats(flows["finish_s"], func=func)[in_job]
    done = _bools(flows["completed"], func=func)[in_job] & ~np.isnan(finish)
    job_names = group[in_job].astype(str).str.replace(r":requests$", "", regex=True)
    codes, names = pd.factorize(job_names)
    rows = []
    for code, name in enumerate(names):
        sel = codes == code
        all_done = bool(done[sel].all())
        job_start = float(np.nanmin(start[sel])) if not np.isnan(start[sel]).all() else np.nan
        job_finish = float(finish[sel].max()) if all_done else np.nan
        rows.append(
            {
                "group": name,
                "flows": int(sel.sum()),
                "completed_flows": int(done[sel].sum()),
                "start_s": job_start,
                "finish_s": job_finish,
                "jct_s": job_finish - job_start if all_done else np.nan,
                "completed": all_done,
            }
        )
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["start_s", "group"], kind="stable").reset_index(drop=True)


def active_flows_over_time(flows: pd.DataFrame, times: Iterable[float]) -> pd.DataFrame:
    """Number of active flows at each of the given times.

    A flow is active at time ``t`` when ``start_s <= t < finish_s``. A flow
    without a ``finish_s`` (not completed) stays active from its start to the
    end of the run. Flows without a ``start_s`` are ignored.

    Parameters
    ----------
    flows : pandas.DataFrame
        Per-flow table with ``start_s`` and ``finish_s``.
    times : array-like of float
        Times in seconds, in any order.

    Returns
    -------
    pandas.DataFrame
        Columns ``time_s`` (the given times, same order) and
        ``active_flows`` (int64).

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    func = "active_flows_over_time"
    _require(flows, ["start_s", "finish_s"], func=func, arg="flows")
    t = np.asarray(list(times) if not isinstance(times, np.ndarray) else times, dtype="float64")
    start = _floats(flows["start_s"], func=func)
    finish = _floats(flows["finish_s"], func=func)
    known = ~np.isnan(start)
    starts = np.sort(start[known])
    ends = finish[known]
    ends = np.sort(ends[~np.isnan(ends)])
    started = np.searchsorted(starts, t, side="right")
    ended = np.searchsorted(ends, t, side="right")
    return pd.DataFrame({"time_s": t, "active_flows": (started - ended).astype("int64")})


# --------------------------------------------------------------------------
# paired comparison of two runs


def flow_set_mismatch(flows_a: pd.DataFrame, flows_b: pd.DataFrame) -> str | None:
    """Why two runs' flows cannot be paired, or ``None`` when they can.

    Two runs can be paired when they hold the same ``flow_id`` values, each
    once, and every flow has the same ``src``, ``dst`` and ``size_bytes`` in
    both (null sizes match null sizes).

    Parameters
    ----------
    flows_a, flows_b : pandas.DataFrame
        Per-flow tables with ``flow_id``, ``src``, ``dst`` and ``size_bytes``.

    Returns
    -------
    str or None
        A one-line reason, or ``None`` when the flow sets agree.

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    func = "flow_set_mismatch"
    cols = ["flow_id", "src", "dst", "size_bytes"]
    _require(flows_a, cols, func=func, arg="flows_a")
    _require(flows_b, cols, func=func, arg="flows_b")
    for label, df in (("A", flows_a), ("B", flows_b)):
        if df["flow_id"].isna().any():
            return f"run {label} has flows without a flow_id"
        dup = df["flow_id"][df["flow_id"].duplicated()]
        if len(dup):
            return f"run {label} lists flow_id {dup.iloc[0]} more than once"
    ids_a = set(flows_a["flow_id"].tolist())
    ids_b = set(flows_b["flow_id"].tolist())
    if ids_a != ids_b:
        only_a = sorted(ids_a - ids_b)
        only_b = sorted(ids_b - ids_a)
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} flow id(s) only in A (e.g. {only_a[0]})")
        if only_b:
            parts.append(f"{len(only_b)} flow id(s) only in B (e.g. {only_b[0]})")
        return "the runs have different flows: " + ", ".join(parts)
    a = flows_a.set_index("flow_id")[cols[1:]]
    b = flows_b.set_index("flow_id")[cols[1:]].reindex(a.index)
    for col in cols[1:]:
        if col == "size_bytes":
            xa = _floats(a[col], func=func)
            xb = _floats(b[col], func=func)
            same = (xa == xb) | (np.isnan(xa) & np.isnan(xb))
        else:
            same = ((a[col] == b[col]) | (a[col].isna() & b[col].isna())).to_numpy(dtype=bool)
        if not same.all():
            bad = a.index[~same]
            fid = bad[0]
            return (
                f"{len(bad)} flow(s) differ in {col} between the runs "
                f"(e.g. flow {fid}: {a.at[fid, col]!r} in A, {b.at[fid, col]!r} in B)"
            )
    return None


def paired_comparison(
    flows_a: pd.DataFrame,
    flows_b: pd.DataFrame,
    tolerance: float = 0.0,
    rel: bool = True,
) -> dict[str, Any]:
    """Flow-by-flow comparison of run B against reference run A.

    This is the comparison of Table 2 of Ayesta, Bertaux and Carvin,
    "Non-Intrusive Scheduling of TCP Flows" (IFIP Networking 2015): taking
    run A as the reference, the share of flows that finish faster and slower
    in B, and the average gain (loss): the average reduction (increase) of
    the transfer time among the flows that finish earlier (later).

    Flows are joined on ``flow_id``. Only flows completed in both runs are
    classified; with ``d = fct_b - fct_a``:

    - *equal* when ``|d| <= tolerance * fct_a`` (``rel=True``) or
      ``|d| <= tolerance`` seconds (``rel=False``);
    - otherwise *faster* when ``d < 0`` and *slower* when ``d > 0``.

    Parameters
    ----------
    flows_a, flows_b : pandas.DataFrame
        Per-flow tables of the two runs with ``flow_id``, ``src``, ``dst``,
        ``size_bytes``, ``fct_s`` and ``completed``. Both must hold the same
        flows (see :func:`flow_set_mismatch`).
    tolerance : float, default 0.0
        Largest difference still counted as equal: a fraction of ``fct_a``
        when `rel` is true, seconds otherwise. Must be >= 0.
    rel : bool, default True
        Whether `tolerance` is relative to A's FCT.

    Returns
    -------
    dict
        - ``flows``: flows in each run;
        - ``completed_both``: flows completed in both runs (the compared
          flows); ``completed_only_a``, ``completed_only_b``,
          ``completed_neither``: the other flows;
        - ``faster``, ``slower``, ``equal``: counts among the compared flows;
        - ``share_faster``, ``share_slower``, ``share_equal``: those counts
          divided by ``completed_both`` (they add up to 1);
        - ``mean_gain``: mean of ``(fct_a - fct_b) / fct_a`` over the faster
          flows, a positive fraction (0.25 means 25 % shorter in B);
        - ``mean_loss``: mean of ``(fct_b - fct_a) / fct_a`` over the slower
          flows, a positive fraction;
        - ``mean_gain_s``, ``mean_loss_s``: the same in seconds, mean of
          ``fct_a - fct_b`` (faster) and of ``fct_b - fct_a`` (slower). Table
          2 prints these as signed changes of the transfer time (gain
          ``-1.11 s``, loss ``+28 ms``);
        - ``tolerance``, ``rel``: the arguments.

        Shares and means are ``None`` when they are over no flows. A
        reference FCT of 0 gives an infinite relative loss.

    Raises
    ------
    ValueError
        If a column is missing, `tolerance` is negative, or the flow sets
        differ (different ids, or a flow with a different src, dst or size).
    """
    func = "paired_comparison"
    cols = ["flow_id", "src", "dst", "size_bytes", "fct_s", "completed"]
    _require(flows_a, cols, func=func, arg="flows_a")
    _require(flows_b, cols, func=func, arg="flows_b")
    if not tolerance >= 0:
        raise ValueError(f"{func}: tolerance must be >= 0, got {tolerance!r}")
    reason = flow_set_mismatch(flows_a, flows_b)
    if reason is not None:
        raise ValueError(f"{func}: cannot pair the runs: {reason}")
    a = flows_a.set_index("flow_id")
    b = flows_b.set_index("flow_id").reindex(a.index)
    fct_a = _floats(a["fct_s"], func=func)
    fct_b = _floats(b["fct_s"], func=func)
    done_a = _bools(a["completed"], func=func) & ~np.isnan(fct_a)
    done_b = _bools(b["completed"], func=func) & ~np.isnan(fct_b)
    both = done_a & done_b
    fa, fb = fct_a[both], fct_b[both]
    d = fb - fa
    limit = tolerance * fa if rel else np.full_like(fa, float(tolerance))
    equal = np.abs(d) <= limit
    faster = ~equal & (d < 0)
    slower = ~equal & (d > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_change = np.where(fa > 0, d / np.where(fa > 0, fa, 1.0), np.inf)
    n = int(both.sum())

    def share(mask: np.ndarray) -> float | None:
        return int(mask.sum()) / n if n else None

    def mean(x: np.ndarray) -> float | None:
        return float(x.mean()) if x.size else None

    return {
        "flows": int(len(a)),
        "completed_both": n,
        "completed_only_a": int((done_a & ~done_b).sum()),
        "completed_only_b": int((~done_a & done_b).sum()),
        "completed_neither": int((~done_a & ~done_b).sum()),
        "faster": int(faster.sum()),
        "slower": int(slower.sum()),
        "equal": int(equal.sum()),
        "share_faster": share(faster),
        "share_slower": share(slower),
        "share_equal": share(equal),
        "mean_gain": mean(-rel_change[faster]),
        "mean_loss": mean(rel_change[slower]),
        "mean_gain_s": mean(-d[faster]),
        "mean_loss_s": mean(d[slower]),
        "tolerance": float(tolerance),
        "rel": bool(rel),
    }


# --------------------------------------------------------------------------
# link metrics


def _link_labels(links: pd.DataFrame) -> pd.Series:
    if "src" in links.columns and "dst" in links.columns:
        return links["src"].astype(str) + "->" + links["dst"].astype(str)
    return "link " + links["link_id"].astype(str)


class LossRate(NamedTuple):
    """Result of :func:`loss_rate`."""

    overall: float
    """Total drops over total packets offered to all ports; NaN with no packets."""
    per_link: pd.DataFrame
    """One row per link: link_id, link, tx_packets, drops, loss_rate."""


def loss_rate(links: pd.DataFrame) -> LossRate:
    """Packet loss rate of each link and over all links.

    The loss rate of a link (output port) is ``drops / (tx_packets + drops)``:
    the share of packets offered to the port that it dropped. The overall
    rate sums drops and packets over all ports, so a packet that crosses
    several hops is counted once per hop.

    Parameters
    ----------
    links : pandas.DataFrame
        Per-link table with ``link_id``, ``tx_packets`` and ``drops``
        (``src`` and ``dst`` name the link when present).

    Returns
    -------
    LossRate
        Named tuple ``(overall, per_link)``: ``overall`` is a float (NaN when
        no packet was offered), ``per_link`` a DataFrame with ``link_id``,
        ``link`` ("src->dst"), ``tx_packets``, ``drops`` and ``loss_rate``
        (NaN for a link that carried nothing), in input order.

    Raises
    ------
    ValueError
        If a required column is missing.
    """
    func = "loss_rate"
    _require(links, ["link_id", "tx_packets", "drops"], func=func, arg="links")
    tx = _floats(links["tx_packets"], func=func)
    drops = _floats(links["drops"], func=func)
    offered = tx + drops
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(offered > 0, drops / np.where(offered > 0, offered, 1.0), np.nan)
    per_link = pd.DataFrame(
        {
            "link_id": links["link_id"].to_numpy(),
            "link": _link_labels(links).to_numpy(),
            "tx_packets": links["tx_packets"].to_numpy(),
            "drops": links["drops"].to_numpy(),
            "loss_rate": per,
        }
    )
    total = float(np.nansum(offered))
    overall = float(np.nansum(drops)) / total if total > 0 else np.nan
    return LossRate(overall, per_link)


def timeout_causes(flows: pd.DataFrame) -> dict:
    """A run's retransmission timeouts by what led to them, from its flows' counters.

    ``after_loss``: timeouts of flows that lost packets (``drops > 0``); ``without_loss``:
    timeouts of flows none of whose packets was dropped, which fired because the flow's
    packets or ACKs waited past the RTO (a flow demoted to a low strict-priority band starved
    behind higher bands, or a queue longer than the RTO). The attribution is per flow: every
    timeout of a flow that lost a packet counts as after a loss. Of all: ``first`` (the SYN,
    or before any data was acknowledged) and ``after_ecn_cut`` (while the window's last cut
    was by an ECN echo), None where the flows table has no such column (the testbed's);
    without a ``drops`` column only ``timeouts`` is given.
    """
    t = flows["timeouts"].fillna(0).astype("int64")
    if "drops" not in flows.columns:  # a flows table without the per-flow drops: no split
        return {"timeouts": int(t.sum()), "after_loss": None, "without_loss": None, "flows_without_loss": None,
                "first": None, "after_ecn_cut": None}  # fmt: skip
    lost = flows["drops"].fillna(0).astype("int64") > 0

    def total(column: str):
        if column not in flows.columns or flows[column].isna().all():
            return None
        return int(flows[column].fillna(0).sum())

    return {
        "timeouts": int(t.sum()),
        "after_loss": int(t[lost].sum()),
        "without_loss": int(t[~lost].sum()),
        "flows_without_loss": int(((t > 0) & ~lost).sum()),
        "first": total("first_timeouts"),
        "after_ecn_cut": total("ecn_timeouts"),
    }


def link_utilization(links: pd.DataFrame, *, top: int | None = None) -> pd.DataFrame:
    """Links ranked by utilization.

    Utilization is the ``utilization`` column written by the simulator,
    ``tx_bytes * 8 / (rate_bps * sim_time_s)``: the fraction of the run's
    duration the link spent transmitting.

    Parameters
    ----------
    links : pandas.DataFrame
        Per-link table with ``link_id`` and ``utilization`` (``src``,
        ``dst``, ``rate_bps`` and ``tx_bytes`` are carried along when
        present).
    top : int, optional
        Keep only the `top` most utilized links.

    Returns
    -------
    pandas.DataFrame
        ``link_id``, ``link`` ("src->dst"), then whichever of ``src``,
        ``dst``, ``rate_bps``, ``tx_bytes`` exist, then ``utilization``;
        sorted by utilization descending, ties by ``link_id``.

    Raises
    ------
    ValueError
        If a required column is missing or `top` is negative.
    """
    func = "link_utilization"
    _require(links, ["link_id", "utilization"], func=func, arg="links")
    if top is not None and top < 0:
        raise ValueError(f"{func}: top must be >= 0, got {top}")
    out = pd.DataFrame({"link_id": links["link_id"].to_numpy(), "link": _link_labels(links).to_numpy()})
    for col in ("src", "dst", "rate_bps", "tx_bytes"):
        if col in links.columns:
            out[col] = links[col].to_numpy()
    out["utilization"] = _floats(links["utilization"], func=func)
    out = out.sort_values(["utilization", "link_id"], ascending=[False, True], kind="stable", na_position="last")
    if top is not None:
        out = out.head(top)
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------
# queue samples


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values, kind="stable")
    v = values[order]
    cw = np.cumsum(weights[order])
    total = cw[-1]
    i = int(np.searchsorted(cw, q * total * (1 - 1e-12), side="left"))
    return float(v[min(i, v.size - 1)])


def _quantile_name(q: float) -> str:
    return f"p{q * 100:g}"


def queue_stats(
    queues: pd.DataFrame,
    *,
    end_time_s: float | None = None,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
) -> pd.DataFrame:
    """Time-weighted queue length statistics per link from queue samples.

    Samples are piecewise constant: the queue length of a sample holds from
    its ``time_s`` until the link's next sample, and the last sample holds
    until `end_time_s`. Each sample therefore weighs the time until the next
    one. Nothing is assumed before a link's first sample.

    Parameters
    ----------
    queues : pandas.DataFrame
        Samples with ``time_s``, ``link_id`` and ``queue_pkts``; ``queue_bytes``
        adds byte statistics and ``link`` ("src->dst") names the link.
    end_time_s : float, optional
        End of the observation window (usually the run's ``sim_time_s``).
        Default: the latest ``time_s`` in the table. Must not be before any
        sample.
    quantiles : sequence of float, default (0.5, 0.9, 0.99)
        Quantiles of the time-weighted distribution, in [0, 1]. The
        q-quantile is the smallest sampled length ``v`` such that the queue
        is at most ``v`` for at least a fraction q of the window (no
        interpolation).

    Returns
    -------
    pandas.DataFrame
        One row per link, by ``link_id``: ``link_id``, ``link``, ``samples``,
        ``duration_s`` (from the first sample to `end_time_s`),
        ``mean_queue_pkts`` (time-weighted), ``max_queue_pkts`` (largest
        sample), ``p50_queue_pkts`` etc., and the same ``*_queue_bytes``
        columns when ``queue_bytes`` is present. When a link's samples span
        no time (e.g. one sample at the end of the window) every sample
        weighs the same.

    Raises
    ------
    ValueError
        If a required column is missing, a quantile is outside [0, 1] or
        `end_time_s` is before a sample.
    """
    func = "queue_stats"
    _require(queues, ["time_s", "link_id", "queue_pkts"], func=func, arg="queues")
    qs = [float(q) for q in quantiles]
    if any(not 0 <= q <= 1 for q in qs):
        raise ValueError(f"{func}: quantiles must lie in [0, 1], got {list(quantiles)!r}")
    measures = ["pkts"] + (["bytes"] if "queue_bytes" in queues.columns else [])
    columns = ["link_id", "link", "samples", "duration_s"]
    for m in measures:
        columns += [f"mean_queue_{m}", f"max_queue_{m}"] + [f"{_quantile_name(q)}_queue_{m}" for q in qs]
    if len(queues) == 0:
        return pd.DataFrame({c: pd.Series([], dtype=object if c == "link" else "float64") for c in columns})
    t_all = _floats(queues["time_s"], func=func)
    if np.isnan(t_all).any():
        raise ValueError(f"{func}: queues has samples without a time_s")
    latest = float(t_all.max())
    end = latest if end_time_s is None else float(end_time_s)
    if end < latest:
        raise ValueError(f"{func}: end_time_s ({end_time_s}) is before the last sample ({latest})")
    values = {m: _floats(queues[f"queue_{m}"], func=func) for m in measures}
    names = queues["link"].astype(str).to_numpy() if "link" in queues.columns else None
    link_ids = queues["link_id"].to_numpy()
    rows = []
    for lid in pd.unique(link_ids):
        sel = np.flatnonzero(link_ids == lid)
        sel = sel[np.argsort(t_all[sel], kind="stable")]
        t = t_all[sel]
        w = np.diff(np.append(t, end))
        if w.sum() <= 0:
            w = np.ones_like(t)
        row: dict[str, Any] = {
            "link_id": lid,
            "link": names[sel[0]] if names is not None else f"link {lid}",
            "samples": int(sel.size),
            "duration_s": float(end - t[0]),
        }
        for m in measures:
            v = values[m][sel]
            ok = ~np.isnan(v)
            vv, ww = v[ok], w[ok]
            if vv.size == 0 or ww.sum() <= 0:
                row[f"mean_queue_{m}"] = np.nan
                row[f"max_queue_{m}"] = np.nan
                for q in qs:
                    row[f"{_quantile_name(q)}_queue_{m}"] = np.nan
                continue
            row[f"mean_queue_{m}"] = float(np.sum(vv * ww) / np.sum(ww))
            row[f"max_queue_{m}"] = float(vv.max())
            for q in qs:
                row[f"{_quantile_name(q)}_queue_{m}"] = _weighted_quantile(vv, ww, q)
        rows.append(row)
    out = pd.DataFrame(rows, columns=columns)
    out["samples"] = out["samples"].astype("int64")
    return out.sort_values("link_id", kind="stable").reset_index(drop=True)
