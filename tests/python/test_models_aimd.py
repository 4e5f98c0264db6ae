"""fctlab.models.aimd (the thesis's section 3.4) against hand computations and against the
simulator's SDC with fixed AIMD parameters."""

from __future__ import annotations

import math

import pytest

import fctlab
from fctlab.models import aimd


def test_worked_example_weights_exactly():
    # a 1000-packet flow, thresholds 50 and 100: 0.9 of its packets in C, 0.05 in B and A
    assert aimd.class_shares(1000, (50, 100)) == [0.05, 0.05, 0.9]
    a, b = aimd.effective_params(1000, (50, 100), (3.0, 2.0, 1.0), (0.9, 0.7, 0.5))
    assert a == pytest.approx(0.05 * 3 + 0.05 * 2 + 0.9 * 1)
    assert b == pytest.approx(0.05 * 0.9 + 0.05 * 0.7 + 0.9 * 0.5)
    # a flow that starts in A keeps A's parameters; one of 80 packets sends 50 in A, 30 in B
    assert aimd.class_shares(40, (50, 100)) == [1.0, 0.0, 0.0]
    assert aimd.class_shares(80, (50, 100)) == pytest.approx([50 / 80, 30 / 80, 0.0])


def test_stationary_point_and_throughput_by_hand():
    # two flows, alpha 1 and 2, beta 0.5 both, P = 20: x_p = (2, 4), theta = 23 / 6
    theta, w = aimd.stationary([1, 2], [0.5, 0.5], 20)
    assert theta == pytest.approx(23 / 6)
    assert list(w) == pytest.approx([23 / 3, 46 / 3])
    assert sum(w) == pytest.approx(20 + 3)  # eq. 3.5
    s = aimd.avg_throughput([1, 2], [0.5, 0.5], 20, 0.001)
    assert list(s) == pytest.approx([23 / 3 * 0.75 / 0.001, 46 / 3 * 0.75 / 0.001])
    assert aimd.network_throughput([1, 2], [0.5, 0.5], 20, 0.001) == pytest.approx(s.sum())
    assert aimd.fct(100, 50.0) == 2.0
    assert aimd.flows_completed(10.0, [4, 2], [0.5, 2.0]) == pytest.approx(80 + 10)
    with pytest.raises(ValueError, match="beta between 0 and 1"):
        aimd.stationary([1], [1.0], 10)


def test_gain_and_its_inverse():
    assert aimd.gain(1, 0.5, 1, 0.5) == 1.0
    for g in (1, 2, 10, 100):
        a, b = aimd.class_params(g, 0.5, 0.5)
        assert aimd.gain(a, b, 0.5, 0.5) == pytest.approx(g)
        assert b <= 0.9
    assert aimd.class_params(10, 0.5, 0.5) == pytest.approx((0.5 * 10 * 0.1 * 1.5 / (0.5 * 1.9), 0.9))
    assert aimd.class_params(2, 0.5, 0.5) == pytest.approx((0.5, 5 / 7))


def test_class_analysis_gives_class_a_more_with_more_gain():
    lo, hi = aimd.class_analysis(gain_ac=2), aimd.class_analysis(gain_ac=100)
    assert hi[0].afct_s < lo[0].afct_s
    assert hi[2].throughput_bps < lo[2].throughput_bps
    r = aimd.class_analysis()
    # eq. 3.13 is the sum of eq. 3.12 over the flows
    a = [c.alpha_eff for c in r for _ in range(c.flows)]
    b = [c.beta_eff for c in r for _ in range(c.flows)]
    total = sum(c.throughput_bps * c.flows for c in r)
    assert total == pytest.approx(aimd.network_throughput(a, b, 1e9 / 12_000 * 300e-6, 300e-6) * 12_000)


#: The round trip of the dumbbell below with empty queues: three links of `delay_s` each way,
#: 1500 B serialized at 1 Gbps on each of them (12 us), the 40 B ACK on each (0.32 us).
def rtt(delay_s: float) -> float:
    return 6 * delay_s + 3 * 12e-6 + 3 * 0.32e-6


def _long_flows(tmp_path, alphas_betas, seconds=4.0, delay_s=150e-6):
    flows = "".join(
        f'[[flows]]\nsrc = "s{i}"\ndst = "r{i}"\nsdc = {{ alpha = {a}, beta = {b} }}\nstart = "{i * 7}us"\n'
        for i, (a, b) in enumerate(alphas_betas)
    )
    n = len(alphas_betas)
    text = (
        f'seed = 1\nstop_time = "{seconds}s"\n[network]\ntopology = "dumbbell"\nsenders = {n}\nreceivers = {n}\n'
        f'link_rate = "1Gbps"\nlink_delay = "{delay_s * 1e6:.0f}us"\nbuffer = "1000pkt"\n'
        f'[transport]\nprotocol = "sdc"\nmss = "1460B"\n[transport.sdc]\nt_p = "{rtt(delay_s) * 1e6:.0f}us"\n' + flows
    )
    f = tmp_path / "aimd.toml"
    f.write_text(text)
    return fctlab.run(str(f))


def test_simulated_fixed_aimd_flows_match_eq_3_12_within_10_percent(tmp_path):
    """Three SDC flows with fixed (alpha, beta) on one 1 Gbps bottleneck (RTT 937 us, so that
    windows are some tens of packets and whole-segment granularity stays small): their
    measured throughputs against eq. 3.12 with P = C T (packets)."""
    ab = [(1.0, 0.5), (2.0, 0.5), (1.0, 0.8)]
    res = _long_flows(tmp_path, ab)
    f = res.flows.sort_values("flow_id")
    measured = f["bytes_delivered"].to_numpy() / 4.0  # bytes per second, payload (4 s)
    T = rtt(150e-6)
    pkts_per_s = 1e9 / 8 / 1500
    model = aimd.avg_throughput([a for a, _ in ab], [b for _, b in ab], pkts_per_s * T, T) * 1460
    for m, e in zip(measured, model):
        assert m == pytest.approx(e, rel=0.10), (list(measured), list(model))


def test_simulated_gain_of_two_classes_matches_eq_3_18_within_15_percent(tmp_path):
    """Two long flows with class A's and class C's parameters (fctlab's defaults): the ratio of
    their throughputs against G_AC = 10 from eq. 3.18. The class C flow gets a tenth of the
    link, so the path is long (RTT 3 ms, 250 packets) to give it a window of tens of packets."""
    (aa, ba), (ac, bc) = aimd.class_params(10, 0.5, 0.5), (0.5, 0.5)
    res = _long_flows(tmp_path, [(aa, ba), (ac, bc)], seconds=8.0, delay_s=500e-6)
    f = res.flows.sort_values("flow_id")
    ratio = f["bytes_delivered"].iloc[0] / f["bytes_delivered"].iloc[1]
    want = aimd.gain(aa, ba, ac, bc)
    assert want == pytest.approx(10)
    assert ratio == pytest.approx(want, rel=0.15), ratio
    assert not math.isnan(ratio)
