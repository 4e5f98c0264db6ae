"""Number formatting shared by reports and comparisons."""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "is_number",
    "seconds",
    "time_unit",
    "in_unit",
    "duration",
    "number",
    "count",
    "percent",
    "signed_percent",
    "signed_seconds",
    "one_line",
    "NA",
]

NA = "n/a"
"""Placeholder for a value that does not exist (e.g. a statistic over no flows)."""


def is_number(x: Any) -> bool:
    """Whether `x` is a finite real number (bools excluded)."""
    if isinstance(x, bool) or x is None:
        return False
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def seconds(x: Any) -> str:
    """A duration with a readable unit: ``"2.50 s"``, ``"1.23 ms"``, ``"456 us"``."""
    if not is_number(x):
        return NA
    v = float(x)
    a = abs(v)
    if a == 0:
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if a >= scale:
            return f"{v / scale:.3g} {unit}" if a / scale < 1000 else f"{v / scale:,.0f} {unit}"
    return f"{v * 1e9:.3g} ns"


def time_unit(x: Any) -> tuple:
    """The unit that reads naturally for a typical time `x` in seconds, as (seconds per unit,
    name): ``(1e-3, "ms")`` for 0.0042. Seconds for anything that is not a positive number."""
    if is_number(x) and float(x) > 0:
        for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if float(x) >= scale:
                return scale, unit
        return 1e-9, "ns"
    return 1.0, "s"


def in_unit(x: Any, unit: tuple) -> str:
    """A time in seconds written in `unit` (as :func:`time_unit` gives it): ``"4.2 ms"``,
    ``"1,250 ms"``, ``"0.012 ms"``; so that every time of a table reads in one unit."""
    if not is_number(x):
        return NA
    v = float(x) / unit[0]
    if abs(v) >= 1000:
        return f"{v:,.0f} {unit[1]}"
    return f"{v:.3g} {unit[1]}" if v == 0 or abs(v) >= 1e-3 else f"{v:.2e} {unit[1]}"


def duration(x: Any) -> str:
    """A time as scenario files write it, in its natural unit: ``"210ms"``, ``"1.5s"``,
    ``"25us"`` (float noise such as 0.21000000000000002 s rounded away)."""
    if not is_number(x):
        return NA
    v = float(x)
    if v == 0:
        return "0s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(v) >= scale:
            return f"{round(v / scale, 6):g}{unit}"
    return f"{round(v * 1e9, 3):g}ns"


def signed_seconds(x: Any) -> str:
    """A duration with an explicit sign: ``"+28 ms"``, ``"-1.11 s"``."""
    if not is_number(x):
        return NA
    s = seconds(x)
    return s if s.startswith("-") else "+" + s


def number(x: Any, digits: int = 3) -> str:
    """A real number with `digits` significant digits."""
    if not is_number(x):
        return NA
    return f"{float(x):.{digits}g}"


def count(x: Any) -> str:
    """An integer count with thousands separators."""
    if not is_number(x):
        return NA
    return f"{int(x):,}"


def percent(x: Any, digits: int = 1) -> str:
    """A fraction as a percentage: ``0.256`` -> ``"25.6%"``."""
    if not is_number(x):
        return NA
    return f"{float(x) * 100:.{digits}f}%"


def signed_percent(x: Any, digits: int = 1) -> str:
    """A fractional change as a signed percentage: ``-0.1`` -> ``"-10.0%"``."""
    if not is_number(x):
        return NA
    return f"{float(x) * 100:+.{digits}f}%"


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (for command-line errors)."""
    return " ".join(str(exc).split()) or type(exc).__name__
