"""The switch-port rules of the BPF programs against the simulator's: kernel/rcp_rule.h,
racs_rule.h and sdc_rule.h, built for userspace from kernel/rules_user.c (the same code the
BPF port programs compile), and `RcpPort::update` / `PortRtt::sample` / `RacsPort` /
`SdcPort` (crates/transport/src/cc/, through `fctlab._core.rcp_port_rule`, `racs_port_rule`
and `sdc_port_rule`) get
the same inputs and must give the same outputs, up to the
BPF side's integer arithmetic: the relative change has 26 fractional bits (1.5e-8 of R)
and y and q/d are whole bits per second."""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from fctlab import _core

KERNEL = Path(__file__).resolve().parents[2] / "kernel"
PPM = 1_000_000


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build kernel/rules_user.c")
    so = tmp_path_factory.mktemp("rules") / "rules_user.so"
    p = subprocess.run(
        [cc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(so), str(KERNEL / "rules_user.c")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr  # a build failure is a failure, not a skip
    lib = ctypes.CDLL(str(so))
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    lib.fctlab_rcp_update.restype = u64
    lib.fctlab_rcp_update.argtypes = [u64, u32, u32, u64, u64, u64, u64, u64]
    lib.fctlab_rcp_rtt_sample.restype = u64
    lib.fctlab_rcp_rtt_sample.argtypes = [u64, u32]
    lib.fctlab_racs_events.restype = None
    lib.fctlab_sdc_load.restype = u32
    lib.fctlab_sdc_load.argtypes = [u64, u64, u64, u64]
    lib.fctlab_sdc_events.restype = None
    lib.fctlab_racs_weights.restype = None
    lib.fctlab_sdc_classes.restype = None
    return lib


def _both(lib, c, alpha, beta, rate, d_ns, t_ns, nbytes, q):
    kernel = lib.fctlab_rcp_update(c, round(alpha * PPM), round(beta * PPM), int(rate), d_ns, t_ns, nbytes, q)
    sim, _ = _core.rcp_port_rule(c, alpha, beta, float(int(rate)), d_ns * 1e-9, t_ns * 1e-9, nbytes, q)
    return kernel, sim


def test_the_hand_computed_cases_give_the_simulators_rates(rules):
    """The cases of rcp.rs's own test: C = 1 Gbps, d = T = 100 us (within 1e-8 of R, the
    rounding of the relative change to 2^-26, plus 2 bps)."""
    for args, want in (
        ((500e6, 100_000, 100_000, 10_000, 3000), 390e6),
        ((500e6, 100_000, 100_000, 0, 0), 550e6),
        ((990e6, 100_000, 100_000, 0, 0), 1e9),  # never beyond C
        ((500e6, 100_000, 100_000, 12_500, 10**7), 120e6),  # a huge queue: one packet per d
    ):
        k, s = _both(rules, 10**9, 0.1, 1.0, *args)
        assert s == want and abs(k - want) <= 1e-8 * args[0] + 2, (args, k, s)


def test_random_inputs_give_the_simulators_rates(rules):
    """2,000 draws over link rates of 10 Mbps-100 Gbps, RTTs of 10 us-100 ms, intervals of
    0.5-2 RTTs, input rates of 0-2 C, queues of 0-1,000 packets and the papers' and other gains:
    the BPF rule's rate is within 1e-7 of R (plus 2 bps) of the simulator's."""
    rng = random.Random(7)
    worst = 0.0
    for _ in range(2000):
        c = rng.choice([10**7, 10**8, 10**9, 10**10, 4 * 10**10, 10**11])
        d = rng.randint(10_000, 100_000_000)
        t = int(d * rng.uniform(0.5, 2.0))
        rate = rng.uniform(0.01, 1.0) * c
        nbytes = int(rng.uniform(0, 2) * c * t * 1e-9 / 8)
        q = rng.choice([0, rng.randint(0, 1_500_000)])
        alpha, beta = rng.choice([(0.1, 1.0), (0.4, 0.226), (0.5, 0.5)])
        k, s = _both(rules, c, alpha, beta, rate, d, t, nbytes, q)
        err = abs(k - s)
        assert err <= 1e-7 * int(rate) + 2, (c, d, t, rate, nbytes, q, alpha, beta, k, s)
        worst = max(worst, err / s)
    print(f"largest relative difference: {worst:.2e}")


def test_the_rtt_average_follows_the_simulators(rules):
    """RTT_GAIN = 0.02 per packet, from 1 ms, over 500 samples of 50 us-5 ms (and zeros, which
    carry no RTT): the BPF average (ns with 10 fraction bits) stays within 1 ns."""
    rng = random.Random(3)
    samples = [rng.choice([0, rng.randint(50_000, 5_000_000)]) for _ in range(500)]
    _, sim = _core.rcp_port_rule(10**9, 0.1, 1.0, 1e8, 1e-3, 1e-3, 0, 0, samples)
    avg = 1_000_000 << 10
    for s, want in zip(samples, sim):
        avg = rules.fctlab_rcp_rtt_sample(avg, s)
        assert abs(avg / 1024 - want * 1e9) <= 1.0, (s, avg / 1024, want * 1e9)


def test_racs_weights_and_grants_follow_the_simulators(rules):
    """Joins, weight changes, leaves and interval ends (600 random events, weights that are
    whole 256ths as the option carries them): the running W is the simulator's exactly and
    every grant w_c C / W is the simulator's to within 1 bps (the BPF side rounds down in
    integers, the simulator in floating point)."""
    rng = random.Random(11)
    events, live = [], []
    for _ in range(600):
        r = rng.random()
        if r < 0.1:
            events.append((1, 0.0, 0.0))
        elif r < 0.3 or not live:
            w = rng.randint(1, 10 * 256) / 256
            live.append(w)
            events.append((0, w, 0.0))  # a SYN: joins
        elif r < 0.4:
            w = live.pop(rng.randrange(len(live)))
            events.append((0, 0.0, w))  # a FIN: leaves
        else:
            i = rng.randrange(len(live))
            w = rng.randint(1, 10 * 256) / 256 if rng.random() < 0.3 else live[i]
            events.append((0, w, live[i]))
            live[i] = w
    c = 10**9
    n = len(events)
    arr = ctypes.c_uint32 * n
    kind = arr(*[e[0] for e in events])
    w_c = arr(*[round(e[1] * 256) for e in events])
    w_p = arr(*[round(e[2] * 256) for e in events])
    grant, w_after = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * n)()
    rules.fctlab_racs_events(ctypes.c_uint64(c), ctypes.c_uint32(n), kind, w_c, w_p, grant, w_after)
    sim = _core.racs_port_rule(c, events)
    for i, ((g, w), e) in enumerate(zip(sim, events)):
        assert abs(w_after[i] / 256 - w) < 1e-3, (i, e, w_after[i] / 256, w)
        assert abs(grant[i] - g) <= 1, (i, e, grant[i], g)


def test_sdc_load_factor_and_class_counts_follow_the_simulators(rules):
    """The load factor (eq. 3.4) on 2,000 random intervals, within 2^-16 (the option's
    fixed point) plus 1e-6 of f; and the class counts and highest active class through 500
    random packets (joins, graduations, leaves), exactly."""
    rng = random.Random(5)
    c = 10**9
    # whole bytes and nanoseconds, as the BPF side has them
    intervals = [
        (rng.randint(0, 500_000), float(rng.randint(0, 300_000)), rng.randint(10_000, 10**8) / 1e9) for _ in range(2000)
    ]
    packets = [(rng.randint(0, 3), rng.randint(0, 3)) for _ in range(500)]
    loads, counts = _core.sdc_port_rule(c, intervals, packets)
    for (b, q, t), want in zip(intervals, loads):
        got = rules.fctlab_sdc_load(c, round(t * 1e9), b, round(q)) / 65536
        assert abs(got - min(want, 65535.99)) <= 2 / 65536 + 1e-6 * want, (b, q, t, got, want)
    n = len(packets)
    cls = (ctypes.c_uint8 * n)(*[p[0] for p in packets])
    prev = (ctypes.c_uint8 * n)(*[p[1] for p in packets])
    out, top = (ctypes.c_uint32 * (3 * n))(), (ctypes.c_uint8 * n)()
    rules.fctlab_sdc_events(ctypes.c_uint32(n), cls, prev, out, top)
    for i, (want_counts, want_top) in enumerate(counts):
        assert list(out[3 * i : 3 * i + 3]) == list(want_counts) and top[i] == want_top, (i, packets[i])


def test_racs_sender_weights_follow_eq_4_1_of_the_simulator(rules):
    """The host program's eq. 4.1 (a table of the simulator's weights, linear between
    entries) against `RacsConfig::weight_of` at random remaining sizes, within what the table
    costs: linear interpolation of exp (w_max a^2 / 8), the fraction of a segment in 256ths
    (w_max a / 256) and the rounding of the entries to 256ths (2 / 256, with the shift); an
    error of one segment would cost w_max a (46/256 at the defaults). w_min + w_max with
    nothing left, w_min past the table."""
    from fctlab.testbed.assisted import racs_weight_table

    rng = random.Random(7)
    for w_min, w_max, a in ((1.0, 9.0, 0.02), (0.5, 20.0, 0.05), (2.0, 4.0, 0.01)):
        table = racs_weight_table(w_min, w_max, a)
        mss = rng.choice([1448, 1428, 1000])
        rem = [0, 1, mss - 1, mss, (len(table) + 5) * mss] + [
            rng.randrange(0, 2 * len(table) * mss) for _ in range(2000)
        ]
        n = len(rem)
        out = (ctypes.c_uint32 * n)()
        rules.fctlab_racs_weights(
            (ctypes.c_uint16 * len(table))(*table),
            len(table),
            round(w_min * 256),
            mss,
            n,
            (ctypes.c_uint32 * n)(*rem),
            out,
        )
        sim = _core.racs_weight(w_min, w_max, a, [r / mss for r in rem])
        tol = w_max * a * a / 8 + (w_max * a + 2) / 256
        for r, k, s in zip(rem, out, sim):
            assert abs(k / 256 - s) <= tol, (w_min, w_max, a, mss, r, k / 256, s)
        assert out[0] == round((w_min + w_max) * 256) and out[4] == round(w_min * 256)


def test_sdc_sender_classes_follow_the_simulators(rules):
    """The host program's class by remaining size against `SdcConfig::class_of` (default
    thresholds 50 and 100 segments), at the boundaries and at random sizes."""
    rng = random.Random(8)
    for mss in (1448, 1000, 1):
        edges = [k * mss + d for k in (0, 50, 100) for d in (-1, 0, 1) if k * mss + d >= 0]
        rem = edges + [rng.randrange(0, 200 * mss) for _ in range(1000)]
        n = len(rem)
        out = (ctypes.c_uint32 * n)()
        rules.fctlab_sdc_classes(mss, 50, 100, n, (ctypes.c_uint32 * n)(*rem), out)
        sim = _core.sdc_class(rem, mss)
        assert [3 - c for c in sim] == list(out), mss  # wire numbering: A = 3, B = 2, C = 1
