"""Weighted AIMD models for ATCP.

Theorem 1 (ATCP design): two flows in congestion avoidance whose additive increases are
``a`` and ``b`` segments per RTT, with the same multiplicative decrease (one half) applied to
both at every congestion event, the same RTT and a network that holds
``S = C * T + B`` bytes (bandwidth-delay product plus buffers), converge to windows
``S * a / (a + b)`` and ``S * b / (a + b)``: their rates are in the ratio ``a : b``.

When losses are *not* synchronized (each flow sees its own losses at the same per-packet
probability ``p``, as with a DropTail buffer), the classic square-root analysis of AIMD with
increase ``a`` and decrease factor ``beta`` gives a rate proportional to
``sqrt(a * (1 + beta) / (2 * (1 - beta) * p)) / RTT``, so the ratio of two such flows is
``sqrt(a / b)``. Measured DropTail ratios fall between the two predictions (see
``docs/atcp.md``).
"""

from __future__ import annotations

import math
from typing import List, Tuple


def _check_weights(a: float, b: float) -> None:
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"weights must be positive numbers, got {a!r} and {b!r}")


def theorem1_shares(a: float, b: float) -> Tuple[float, float]:
    """Converged shares of the bottleneck for weights ``a`` and ``b`` (Theorem 1).

    >>> theorem1_shares(1, 2)
    (0.3333333333333333, 0.6666666666666666)
    """
    _check_weights(a, b)
    return a / (a + b), b / (a + b)


def theorem1_rates(a: float, b: float, capacity_bps: float) -> Tuple[float, float]:
    """Converged rates in bits per second of two weighted flows sharing ``capacity_bps``."""
    sa, sb = theorem1_shares(a, b)
    return sa * capacity_bps, sb * capacity_bps


def theorem1_ratio(a: float, b: float) -> float:
    """Rate of the ``b`` flow over the rate of the ``a`` flow at convergence: ``b / a``."""
    _check_weights(a, b)
    return b / a


def window_recursion(
    a: float, b: float, network_bytes: float, w1_bytes: float, events: int
) -> List[Tuple[float, float]]:
    """The windows at successive congestion events, by the recursion of the proof of Theorem 1.

    ``w_{j+1} = w_j / 2 + (S / 2) * a / (a + b)``, and ``w'_j = S - w_j``. Returns
    ``events + 1`` pairs starting with ``(w1_bytes, S - w1_bytes)``; the distance to the limit
    halves at every event.
    """
    _check_weights(a, b)
    if not (0 <= w1_bytes <= network_bytes):
        raise ValueError("w1_bytes must lie between 0 and network_bytes")
    w = w1_bytes
    out = [(w, network_bytes - w)]
    for _ in range(events):
        w = 0.5 * w + 0.5 * network_bytes * a / (a + b)
        out.append((w, network_bytes - w))
    return out


def two_flow_fct(size_bytes: float, capacity_bytes_per_s: float, weight_ratio: float) -> float:
    """Completion time of a medium flow of ``size_bytes`` that shares ``capacity_bytes_per_s``
    with a long flow, its weight ``weight_ratio`` times the long flow's:
    ``(S / C) * (1 + 1 / R)`` (it receives ``R / (R + 1)`` of the capacity).

    >>> round(two_flow_fct(10e6, 100e6 / 8, 2), 3)   # 10 MB at 100 Mbps, weights 2:1
    1.2
    """
    if size_bytes < 0 or capacity_bytes_per_s <= 0 or weight_ratio <= 0:
        raise ValueError("size must be >= 0, capacity and weight ratio > 0")
    return size_bytes / capacity_bytes_per_s * (1.0 + 1.0 / weight_ratio)


def sqrt_law_ratio(a: float, b: float, beta: float = 0.5) -> float:
    """Rate ratio (``b`` flow over ``a`` flow) of two AIMD flows with increases ``a`` and
    ``b`` and the same decrease factor ``beta``, under independent losses at equal per-packet
    probability: ``sqrt(b / a)`` (the factor in ``beta`` is common to both and cancels)."""
    _check_weights(a, b)
    if not 0 < beta < 1:
        raise ValueError("beta must be in (0, 1)")
    return math.sqrt(b / a)
