"""Analytic models, and the simulator held against them."""

import math

import pytest

import fctlab
from fctlab.models import atcp


def test_theorem1_values():
    assert atcp.theorem1_shares(1, 2) == pytest.approx((1 / 3, 2 / 3))
    assert atcp.theorem1_rates(1, 3, 1e9) == pytest.approx((0.25e9, 0.75e9))
    assert atcp.theorem1_ratio(2, 5) == 2.5
    with pytest.raises(ValueError):
        atcp.theorem1_shares(0, 1)


def test_window_recursion_halves_the_distance_to_the_limit():
    steps = atcp.window_recursion(1, 2, 300.0, 250.0, 5)
    limit = 100.0
    for j, (w, w2) in enumerate(steps):
        assert w + w2 == pytest.approx(300.0)
        assert w - limit == pytest.approx((250.0 - limit) * 0.5**j)


def test_two_flow_fct_and_sqrt_law():
    # The ATCP paper's 2-flow experiment: 10 MB at 100 Mbps with weights 2:1 -> 1.2 s.
    assert atcp.two_flow_fct(10e6, 100e6 / 8, 2) == pytest.approx(1.2)
    assert atcp.two_flow_fct(10e6, 100e6 / 8, 1) == pytest.approx(1.6)
    assert atcp.sqrt_law_ratio(1, 2) == pytest.approx(math.sqrt(2))


def test_simulated_weighted_flows_follow_theorem1():
    """Two fixed-weight ATCP flows through an ECN-marking bottleneck share it as the theorem says."""
    sc = {
        "seed": 1,
        "stop_time": "5s",
        "network": {
            "topology": "dumbbell",
            "senders": 2,
            "receivers": 2,
            "link_rate": "1Gbps",
            "link_delay": "100us",
            "buffer": "200pkt",
            "queue": "ecn",
            "ecn_threshold": "65pkt",
        },
        "transport": {"protocol": "atcp", "ecn": True, "min_rto": "10ms", "atcp": {"weight_function": "fixed"}},
        "flows": [
            {"src": "s0", "dst": "r0", "atcp": {"weight": 1}},
            {"src": "s1", "dst": "r1", "atcp": {"weight": 2}, "start": "1ms"},
        ],
        "monitor": {"cwnd_interval": "10ms"},
    }
    res = fctlab.run(sc)
    cw = res.cwnd
    late = cw[cw["time_s"] >= 1.0]
    rate = late.groupby("flow_id")["rate_bps"].mean()
    want = atcp.theorem1_ratio(1, 2)
    assert rate[1] / rate[0] == pytest.approx(want, rel=0.05)
    assert set(late["weight"].dropna().unique()) == {1.0, 2.0}
