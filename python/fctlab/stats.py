"""Statistics over seeds, shared by the crosscheck and the reproductions: a mean with the
half-width of its 95% Student-t interval."""

from __future__ import annotations

import math

import numpy as np

#: Student's t at 97.5% (two-sided 95%) by degrees of freedom; 1.96 beyond the table.
T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    25: 2.060,
    30: 2.042,
}


def t95(df: int) -> float:
    """Student's t quantile for a 95% interval with `df` degrees of freedom (the next smaller
    tabulated one between table entries, which widens the interval slightly)."""
    if df in T95:
        return T95[df]
    below = [k for k in T95 if k < df]
    return T95[max(below)] if df <= 30 else 1.96


def interval(values) -> tuple:
    """(mean, half-width of the 95% Student-t interval) of per-seed values; missing values
    (None, NaN) are left out; the half-width is NaN with fewer than two values."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=float)
    if v.size == 0:
        return (math.nan, math.nan)
    if v.size == 1:
        return (float(v[0]), math.nan)
    return (float(v.mean()), float(t95(v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)))


def log_interval(values, floor: float = 0.0) -> tuple:
    """(geometric mean, low, high) of positive per-seed values: the 95% Student-t interval of
    their logarithms, exponentiated, so never below 0 and never symmetric where the spread is
    large; bounds below `floor` are raised to it (1 for slowdowns, or the mean where that is
    lower). Missing and non-positive values are left out; the bounds are NaN with fewer than
    two values."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x) and x > 0], dtype=float)
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    logs = np.log(v)
    gmean = float(math.exp(logs.mean()))
    if v.size == 1:
        return (gmean, math.nan, math.nan)
    half = t95(v.size - 1) * logs.std(ddof=1) / math.sqrt(v.size)
    low = max(float(math.exp(logs.mean() - half)), min(floor, gmean))
    return (gmean, low, float(math.exp(logs.mean() + half)))
