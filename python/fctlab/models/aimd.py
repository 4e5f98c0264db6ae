"""The positive-systems AIMD model of the thesis's section 3.4 (SDC's analysis).

N flows share one bottleneck; flow i adds ``alpha_i`` packets per RTT and multiplies its window
by ``beta_i`` at each backoff event; all flows back off together (synchronized), and the
windows at a backoff add up to ``P + sum(alpha)`` (eq. 3.5), ``P`` the packets the path holds
with an empty queue. Amounts are packets, times are seconds (the thesis measures time in slots
of ``t_p = T``; the formulas here take ``T`` in seconds and return packets per second).

- :func:`stationary`: the stationary windows ``W_ss = theta x_p`` (eqs. 3.9-3.10);
- :func:`max_throughput`, :func:`avg_throughput` (3.11-3.12), :func:`network_throughput` (3.13);
- :func:`fct` (3.14), :func:`flows_completed` (3.15);
- :func:`class_shares` and :func:`effective_params`: the class-averaged ``alpha'`` and ``beta'``
  of a flow that drains through several classes (3.16-3.17);
- :func:`gain` (3.18) and :func:`class_params`, which inverts it the way fctlab's SDC derives
  its class parameters;
- :func:`class_analysis`: AFCT and throughput per class for the settings of section 3.4.5
  (the data of Figs. 3.2-3.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "stationary",
    "max_throughput",
    "avg_throughput",
    "network_throughput",
    "fct",
    "flows_completed",
    "class_shares",
    "effective_params",
    "gain",
    "class_params",
    "ClassResult",
    "class_analysis",
]


def _arrays(alpha: Sequence[float], beta: Sequence[float]):
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("alpha and beta must be equally long, non-empty lists")
    if np.any(a <= 0) or np.any(b <= 0) or np.any(b >= 1):
        raise ValueError("every alpha must be positive and every beta between 0 and 1")
    return a, b


def stationary(alpha: Sequence[float], beta: Sequence[float], P: float):
    """``(theta, W_ss)``: the windows (packets) at a backoff event once converged (3.9-3.10)."""
    a, b = _arrays(alpha, beta)
    if not P > 0:
        raise ValueError("P (packets in flight with an empty queue) must be positive")
    xp = a / (1 - b)
    theta = (P + a.sum()) / xp.sum()
    return float(theta), theta * xp


def max_throughput(alpha, beta, P: float, T: float) -> np.ndarray:
    """S_i,max = theta alpha_i / (T (1 - beta_i)), packets per second (3.11)."""
    _, w = stationary(alpha, beta, P)
    return w / T


def avg_throughput(alpha, beta, P: float, T: float) -> np.ndarray:
    """S_i,av = S_i,max (1 + beta_i) / 2, packets per second (3.12)."""
    _, b = _arrays(alpha, beta)
    return max_throughput(alpha, beta, P, T) * (1 + b) / 2


def network_throughput(alpha, beta, P: float, T: float) -> float:
    """S = W_ss . beta_av / T with beta_av = (1 + beta) / 2, packets per second (3.13)."""
    return float(avg_throughput(alpha, beta, P, T).sum())


def fct(size_packets: float, s_av: float) -> float:
    """The completion time of a flow of ``size_packets`` at ``s_av`` packets per second (3.14)."""
    return size_packets / s_av


def flows_completed(period: float, n: Sequence[float], afct: Sequence[float]) -> float:
    """F_total = sum_i period N_i / AFCT_i: flows completed in ``period`` (3.15)."""
    return float(sum(period * ni / ai for ni, ai in zip(n, afct)))


def class_shares(size: float, thresholds: Sequence[float]) -> list:
    """The share of its packets a flow of ``size`` packets sends in each class, highest class
    first (the weights of eqs. 3.16-3.17). ``thresholds`` are the classes' maximum sizes,
    highest class first, without the last (open) class: (50, 100) for A, B, C. A flow starts
    in the class its size falls in and drains through the classes above it."""
    bounds = [0.0] + [float(t) for t in thresholds]
    if any(b2 <= b1 for b1, b2 in zip(bounds, bounds[1:])):
        raise ValueError("class thresholds must increase")
    if not size > 0:
        raise ValueError("the flow size must be positive")
    start = next((j for j, t in enumerate(thresholds) if size <= t), len(thresholds))
    shares = []
    for j in range(len(thresholds) + 1):
        if j < start:
            shares.append((bounds[j + 1] - bounds[j]) / size)
        elif j == start:
            shares.append((size - bounds[j]) / size)
        else:
            shares.append(0.0)
    return shares


def effective_params(size: float, thresholds: Sequence[float], alphas: Sequence[float], betas: Sequence[float]):
    """(alpha', beta') of a flow of ``size`` packets: its classes' parameters weighted by the
    share of packets it sends in each (3.16-3.17). Classes highest first."""
    w = np.asarray(class_shares(size, thresholds))
    if len(alphas) != len(w) or len(betas) != len(w):
        raise ValueError(f"need {len(w)} alphas and betas (one per class)")
    return float(w @ np.asarray(alphas, float)), float(w @ np.asarray(betas, float))


def gain(a1: float, b1: float, a2: float, b2: float) -> float:
    """G_12 = S_1 / S_2 = alpha_1 (1 - beta_2)(1 + beta_1) / (alpha_2 (1 - beta_1)(1 + beta_2)) (3.18)."""
    return a1 * (1 - b2) * (1 + b1) / (a2 * (1 - b1) * (1 + b2))


def class_params(g: float, alpha_ref: float, beta_ref: float, beta_max: float = 0.9):
    """(alpha, beta) with gain ``g`` over (``alpha_ref``, ``beta_ref``) by eq. 3.18: alpha kept
    at ``alpha_ref`` and beta solved, or, where beta would pass ``beta_max``, beta = beta_max and
    alpha solved (fctlab's SDC derives its classes A and B this way)."""
    k = g * (1 + beta_ref) / (1 - beta_ref)
    beta = (k - 1) / (k + 1)
    if beta <= beta_max:
        return alpha_ref, beta
    return g * alpha_ref * (1 - beta_max) * (1 + beta_ref) / ((1 - beta_ref) * (1 + beta_max)), beta_max


@dataclass
class ClassResult:
    """One class of :func:`class_analysis`."""

    name: str
    flows: int
    size_packets: float
    alpha_eff: float
    beta_eff: float
    throughput_bps: float  # per flow (3.12)
    afct_s: float  # (3.14)


def class_analysis(
    gain_ac: float = 10.0,
    gain_bc: float = 2.0,
    alpha_c: float = 0.5,
    beta_c: float = 0.5,
    thresholds: Sequence[float] = (50, 100, 100_000),
    flows: Sequence[int] = (15, 5, 1),
    rtt_s: float = 300e-6,
    capacity_bps: float = 1e9,
    packet_bytes: int = 1500,
    beta_max: float = 0.9,
) -> list:
    """The section 3.4.5 analysis: classes A, B, C with gains G_AC, G_BC over class C's
    (alpha, beta); ``flows`` flows per class, each of the size of its class's threshold
    (``thresholds`` = d_a, d_b, d_c packets) and so draining through the classes above it; all
    sharing one link of ``capacity_bps`` with round trip ``rtt_s``. Returns a
    :class:`ClassResult` per class: effective parameters (3.16-3.17), throughput per flow (3.12)
    and AFCT (3.14)."""
    alphas, betas = zip(
        class_params(gain_ac, alpha_c, beta_c, beta_max),
        class_params(gain_bc, alpha_c, beta_c, beta_max),
        (alpha_c, beta_c),
    )
    eff = [effective_params(d, thresholds[:2], alphas, betas) for d in thresholds]
    per_flow_a = [e[0] for e, n in zip(eff, flows) for _ in range(n)]
    per_flow_b = [e[1] for e, n in zip(eff, flows) for _ in range(n)]
    P = capacity_bps / (8 * packet_bytes) * rtt_s
    s = avg_throughput(per_flow_a, per_flow_b, P, rtt_s)
    out, k = [], 0
    for name, n, d, (a, b) in zip("ABC", flows, thresholds, eff):
        s_i = float(s[k]) if n else float("nan")
        out.append(ClassResult(name, n, float(d), a, b, s_i * 8 * packet_bytes, fct(d, s_i) if n else float("nan")))
        k += n
    return out
