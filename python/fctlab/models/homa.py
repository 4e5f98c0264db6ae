"""Homa's priorities for a workload (Montazeri et al., SIGCOMM 2018, section 3.4): how many of
the ports' bands unscheduled packets get, and the message sizes that separate them, as
``homa_unscheduled_cutoffs`` takes them.

The rule: unscheduled packets get a share of the bands in proportion to the share of bytes
that messages send unscheduled (each message's first ``rtt_bytes``), at least one band, and at
least one band stays scheduled; the cutoffs split the unscheduled bytes evenly among those
bands, shortest messages in the highest band.

    >>> from fctlab.models import homa
    >>> homa.scenario_priorities("scenarios/size_aware/homa.toml")["cutoffs"]
    []

(web search: 0.5% of its bytes are unscheduled, one band); ``homa.priorities(sizes)`` takes a
sample of sizes directly.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..plan import load


__all__ = ["priorities", "scenario_priorities"]


def priorities(
    sizes_bytes: Sequence[float], rtt_bytes: int = 9_700, bands: int = 8, unscheduled_bands: Optional[int] = None
) -> dict:
    """Homa's unscheduled bands and cutoffs for messages of `sizes_bytes` (a sample of the
    workload); `unscheduled_bands` fixes their number instead of the share rule. Returns ``{"unscheduled_share", "unscheduled_bands", "cutoffs"}``: the share of
    bytes sent unscheduled, the bands they get, and the cutoffs (bytes, rising, one fewer than
    the bands; a message of a cutoff's size or less goes in that cutoff's band)."""
    s = np.sort(np.asarray(sizes_bytes, dtype=float))
    if s.size == 0 or not np.all(np.isfinite(s)) or s[0] <= 0:
        raise ValueError("sizes_bytes: expected a non-empty sample of positive, finite sizes")
    if rtt_bytes <= 0:
        raise ValueError(f"rtt_bytes: expected a positive number of bytes, got {rtt_bytes}")
    if not 2 <= bands <= 8:
        raise ValueError(f"bands: expected 2 to 8, got {bands}")
    unscheduled = np.minimum(s, rtt_bytes)
    share = float(unscheduled.sum() / s.sum())
    if unscheduled_bands is not None and not 1 <= unscheduled_bands < bands:
        raise ValueError(f"unscheduled_bands: expected 1 to {bands - 1}, got {unscheduled_bands}")
    n = unscheduled_bands or int(min(bands - 1, max(1, round(bands * share))))
    cum = np.cumsum(unscheduled) / unscheduled.sum()
    cutoffs: list = []
    for k in range(1, n):
        c = int(s[min(int(np.searchsorted(cum, k / n)), s.size - 1)])
        if not cutoffs or c > cutoffs[-1]:
            cutoffs.append(c)
    return {"unscheduled_share": share, "unscheduled_bands": len(cutoffs) + 1, "cutoffs": cutoffs}


def scenario_priorities(
    scenario,
    rtt_bytes: int = 9_700,
    bands: int = 8,
    unscheduled_bands: Optional[int] = None,
    *,
    set: Sequence[str] = (),
) -> dict:
    """:func:`priorities` for the flows a scenario's workloads draw (its sized flows)."""

    sizes = [f.size_bytes for f in load(scenario, list(set)).flows if f.size_bytes]
    return priorities(sizes, rtt_bytes, bands, unscheduled_bands)
