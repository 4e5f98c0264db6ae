"""Homa's unscheduled bands and cutoffs for a workload (fctlab.models.homa)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fctlab.models import homa


def test_bands_follow_the_unscheduled_byte_share_and_cutoffs_split_those_bytes_evenly():
    sizes = np.random.default_rng(1).lognormal(8, 1.5, 20_000)
    p = homa.priorities(sizes, rtt_bytes=9_700, bands=8)
    share = np.minimum(sizes, 9_700).sum() / sizes.sum()
    assert p["unscheduled_share"] == pytest.approx(share)
    assert p["unscheduled_bands"] == round(8 * share) == len(p["cutoffs"]) + 1
    assert p["cutoffs"] == sorted(set(p["cutoffs"]))
    # Each band's messages send about the same unscheduled bytes.
    edges = [0, *p["cutoffs"], np.inf]
    per_band = [np.minimum(sizes[(sizes > a) & (sizes <= b)], 9_700).sum() for a, b in zip(edges, edges[1:])]
    assert max(per_band) / min(per_band) < 1.1, per_band


def test_small_messages_take_all_but_one_band_and_large_ones_one():
    small = homa.priorities(np.random.default_rng(2).uniform(100, 3_000, 5_000), bands=8)
    assert small["unscheduled_share"] == 1.0 and small["unscheduled_bands"] == 7
    large = homa.priorities([10_000_000] * 99 + [1_000], bands=8)
    assert (large["unscheduled_bands"], large["cutoffs"]) == (1, [])
    # A fixed number of unscheduled bands (as the Homa simulator's configuration sets) splits
    # the same bytes into that many.
    fixed = homa.priorities(np.random.default_rng(2).uniform(100, 3_000, 5_000), unscheduled_bands=4)
    assert fixed["unscheduled_bands"] == 4 and len(fixed["cutoffs"]) == 3


def test_the_web_search_scenario_gets_one_unscheduled_band():
    p = homa.scenario_priorities(Path(__file__).resolve().parents[2] / "scenarios" / "size_aware" / "homa.toml")
    assert p["cutoffs"] == [] and p["unscheduled_share"] < 0.01


@pytest.mark.parametrize(
    "sizes, kw, what",
    [
        ([], {}, "non-empty"),
        ([1, -5], {}, "positive"),
        ([1000], {"rtt_bytes": 0}, "rtt_bytes"),
        ([1000], {"bands": 9}, "bands"),
    ],
)
def test_bad_arguments_name_themselves(sizes, kw, what):
    with pytest.raises(ValueError, match=what):
        homa.priorities(sizes, **kw)
