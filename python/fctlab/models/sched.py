"""Fluid single-server scheduling: the ideal that SCHED_TCP's policies approach.

Ayesta, Bertaux and Carvin (IFIP Networking 2015, section 4) cast the flows of one
origin-destination pair, with their segments neither lost nor reordered, as jobs of a
single server whose capacity is the pair's share of the path; tcp's sharing among its
connections is then processor sharing (PS) in the fluid limit, and the layer can run any
policy on the same arrivals. This module computes each flow's completion time under

* ``ps``: processor sharing, every active flow at capacity / n (tcp's idealization);
* ``srpt``: shortest remaining processing time, preemptive;
* ``las``: least attained service (the flows with the least service share the server);
* ``fsp``: the Fair Sojourn Protocol (Friedman and Henderson, SIGMETRICS 2003): serve the
  flow that would finish first under PS; no flow finishes later than under PS.

on one sample path (arrival times and sizes), exactly (event by event, no time step). The
packet-level reproduction (``fctlab reproduce schedtcp``) sets its results beside these.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

POLICIES = ("ps", "srpt", "las", "fsp")

#: the fraction of a flow's size below which it counts as finished (rounding of the event
#: arithmetic)
_EPS = 1e-9


def _check(arrivals_s: Sequence[float], sizes_bytes: Sequence[float], capacity_bytes_per_s: float):
    a = np.asarray(arrivals_s, dtype=float)
    s = np.asarray(sizes_bytes, dtype=float)
    if a.shape != s.shape or a.ndim != 1:
        raise ValueError(f"arrivals_s and sizes_bytes must be two lists of one length (got {a.shape} and {s.shape})")
    if not (capacity_bytes_per_s > 0 and math.isfinite(capacity_bytes_per_s)):
        raise ValueError(f"capacity_bytes_per_s must be positive, got {capacity_bytes_per_s!r}")
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("arrival times must be finite and >= 0, sizes finite and > 0")
    order = np.argsort(a, kind="stable")
    return a, s, order


def _run(a, s, order, c: float, rates) -> np.ndarray:
    """The generic fluid event loop: `rates(t, active, remaining, attained)` gives each
    active flow's service rate and the time until the allocation changes by itself (a LAS
    level merging), or inf."""
    n = len(a)
    finish = np.full(n, np.nan)
    rem = s.copy()
    att = np.zeros(n)
    active: list = []
    t, k = 0.0, 0
    while k < n or active:
        if not active:
            t = max(t, a[order[k]])
        while k < n and a[order[k]] <= t:
            active.append(int(order[k]))
            k += 1
        r, horizon = rates(t, active, rem, att)
        dt = horizon
        for j, rj in zip(active, r):
            if rj > 0:
                dt = min(dt, rem[j] / rj)
        if k < n:
            dt = min(dt, a[order[k]] - t)
        for j, rj in zip(active, r):
            rem[j] -= rj * dt
            att[j] += rj * dt
        t += dt
        still = []
        for j in active:
            if rem[j] <= _EPS * max(1.0, s[j]):
                finish[j] = t
            else:
                still.append(j)
        active = still
    return finish


def completion_times(
    arrivals_s: Sequence[float], sizes_bytes: Sequence[float], capacity_bytes_per_s: float, policy: str
) -> np.ndarray:
    """Each flow's completion time (seconds, same order as the input) under `policy` on a
    server of `capacity_bytes_per_s`."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    a, s, order = _check(arrivals_s, sizes_bytes, capacity_bytes_per_s)
    c = float(capacity_bytes_per_s)
    inf = math.inf
    if policy == "ps":
        return _run(a, s, order, c, lambda t, act, rem, att: ([c / len(act)] * len(act), inf))
    if policy == "srpt":

        def srpt(t, act, rem, att):
            best = min(act, key=lambda j: (rem[j], a[j], j))
            return [c if j == best else 0.0 for j in act], inf

        return _run(a, s, order, c, srpt)
    if policy == "las":

        def las(t, act, rem, att):
            low = min(att[j] for j in act)
            tol = 1e-9 * max(1.0, low)
            group = [j for j in act if att[j] <= low + tol]
            above = [att[j] for j in act if att[j] > low + tol]
            share = c / len(group)
            horizon = (min(above) - low) / share if above else inf
            return [share if j in group else 0.0 for j in act], horizon

        return _run(a, s, order, c, las)
    # fsp: earliest PS completion first, among the flows present
    ps = completion_times(arrivals_s, sizes_bytes, capacity_bytes_per_s, "ps")

    def fsp(t, act, rem, att):
        best = min(act, key=lambda j: (ps[j], a[j], j))
        return [c if j == best else 0.0 for j in act], inf

    return _run(a, s, order, c, fsp)


def compare(arrivals_s: Sequence[float], sizes_bytes: Sequence[float], capacity_bytes_per_s: float) -> pd.DataFrame:
    """One row per flow: arrival, size, and the transfer time (completion minus arrival)
    under every policy of :data:`POLICIES` (columns ``<policy>_s``)."""
    out = pd.DataFrame(
        {"arrival_s": np.asarray(arrivals_s, dtype=float), "size_bytes": np.asarray(sizes_bytes, dtype=float)}
    )
    for p in POLICIES:
        out[f"{p}_s"] = completion_times(arrivals_s, sizes_bytes, capacity_bytes_per_s, p) - out["arrival_s"]
    return out


def in_progress(arrivals_s: Sequence[float], finish_s: Sequence[float], times_s: Sequence[float]) -> np.ndarray:
    """The number of flows started and not finished at each of `times_s`."""
    a = np.sort(np.asarray(arrivals_s, dtype=float))
    f = np.sort(np.asarray(finish_s, dtype=float))
    t = np.asarray(times_s, dtype=float)
    return np.searchsorted(a, t, side="right") - np.searchsorted(f, t, side="right")
