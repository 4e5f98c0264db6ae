"""fctlab.models.sched: fluid single-server PS, SRPT, LAS and FSP on hand-made sample paths,
and the orderings the scheduling literature proves on random ones."""

from __future__ import annotations

import numpy as np
import pytest

from fctlab.models import sched


def test_two_flows_by_hand():
    # Sizes 4 (at t=0) and 1 (at t=1) on a server of 1 byte/s.
    a, s = [0.0, 1.0], [4.0, 1.0]
    got = {p: list(np.round(sched.completion_times(a, s, 1.0, p), 9)) for p in sched.POLICIES}
    # PS: A alone for 1 s, then both at 1/2: B done at 3, A's last 2 bytes alone by 5.
    assert got["ps"] == [5.0, 3.0]
    # SRPT and FSP serve B at once; LAS too (B has received less).
    assert got["srpt"] == got["fsp"] == got["las"] == [5.0, 2.0]
    # Equal starts: LAS shares like PS, SRPT and FSP serve the smaller first.
    a, s = [0.0, 0.0], [1.0, 2.0]
    assert list(sched.completion_times(a, s, 1.0, "las")) == [2.0, 3.0]
    assert list(sched.completion_times(a, s, 1.0, "srpt")) == [1.0, 3.0]
    assert list(sched.completion_times(a, s, 1.0, "fsp")) == [1.0, 3.0]


def test_las_levels_merge():
    # A (size 3, t=0) has 1 byte at t=1 when B (size 3) arrives: B alone until it has 1 too
    # (t=2), then both share: each needs 2 more at 1/2 -> both done at t=6.
    f = sched.completion_times([0.0, 1.0], [3.0, 3.0], 1.0, "las")
    assert np.allclose(f, [6.0, 6.0])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_orderings_on_random_sample_paths(seed):
    rng = np.random.default_rng(seed)
    n = 300
    # Poisson arrivals at load 0.9, Lomax sizes (alpha 3, mean 5 MB) on 12 MB/s
    sizes = ((1 - rng.random(n)) ** (-1 / 3) - 1) / 1e-7
    c = 12e6
    arrivals = np.cumsum(rng.exponential(5e6 / (0.9 * c), n))
    f = {p: sched.completion_times(arrivals, sizes, c, p) for p in sched.POLICIES}
    # Work conservation: the last completion is the same under every policy.
    last = {p: f[p].max() for p in f}
    assert max(last.values()) - min(last.values()) < 1e-6 * last["ps"], last
    # FSP finishes every flow no later than PS.
    assert np.all(f["fsp"] <= f["ps"] + 1e-6), np.max(f["fsp"] - f["ps"])
    # SRPT never has more flows in progress than any other policy, at any time.
    # (Between consecutive events, where the counts are constant: the busy periods end at the
    # same time under every policy up to rounding.)
    events = np.unique(np.round(np.concatenate([arrivals, *f.values()]), 6))
    times = (events[1:] + events[:-1]) / 2
    n_srpt = sched.in_progress(arrivals, f["srpt"], times)
    for p in ("ps", "las", "fsp"):
        assert np.all(n_srpt <= sched.in_progress(arrivals, f[p], times)), p
    # Mean transfer time: SRPT lowest (it minimizes the flows in progress at every instant),
    # FSP below PS. (LAS beats PS in expectation for sizes of decreasing hazard rate, not on
    # every sample path.)
    mean = {p: float(np.mean(f[p] - arrivals)) for p in f}
    assert mean["srpt"] == min(mean.values()) and mean["ps"] > mean["fsp"], mean


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown policy 'sjf'"):
        sched.completion_times([0.0], [1.0], 1.0, "sjf")
    with pytest.raises(ValueError, match="capacity"):
        sched.completion_times([0.0], [1.0], 0.0, "ps")
    with pytest.raises(ValueError, match="sizes"):
        sched.completion_times([0.0], [-1.0], 1.0, "ps")
    with pytest.raises(ValueError, match="one length"):
        sched.completion_times([0.0, 1.0], [1.0], 1.0, "ps")
