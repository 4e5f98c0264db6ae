"""The namespace testbed as a crosscheck target (`fctlab crosscheck ... --against testbed`,
fctlab.crosscheck.testbed): what it refuses, naming the key (no root needed), and one small
crosscheck on the kernel (as root with network namespaces; skips saying why otherwise)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from fctlab.crosscheck import Unsupported, crosscheck
from fctlab import plan as plan_mod
from fctlab.crosscheck import testbed as target

SETUPS = Path(__file__).resolve().parents[2] / "scenarios" / "crosscheck" / "testbed"

STAR = """
name = "tiny"
seed = 1
stop_time = "1.5s"

[network]
topology = "star"
hosts = 3
link_rate = "100Mbps"
link_delay = "10us"
buffer = "100pkt"
{net}

[transport]
profile = "linux"
protocol = "{proto}"
handshake = true
{transport}

[[workloads]]
kind = "poisson"
senders = ["h1", "h2"]
receivers = ["h0"]
sizes = {{ dist = "uniform", min = "20KB", max = "60KB" }}
arrival_rate = "40/s"
count = 30
tag = "small"
"""


def _plan(tmp_path, name="s.toml", net="", proto="tcp", transport="", sets=(), unset=()):
    p = tmp_path / name
    p.write_text(STAR.format(net=net, proto=proto, transport=transport))
    return plan_mod.load(p, list(sets), list(unset))


def _need_testbed():
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root (network namespaces, veth and qdiscs need CAP_NET_ADMIN)")
    from fctlab.testbed.netns import check_machine

    probs = check_machine()
    if probs:
        pytest.skip("testbed unavailable: " + "; ".join(probs))


@pytest.mark.parametrize(
    "sets, key",
    [
        (["transport.profile=ns2"], "transport.profile"),
        (["transport.handshake=false"], "transport.handshake"),
        (["transport.min_rto=10ms"], "transport.min_rto"),
        (["transport.initial_rto=3s"], "transport.initial_rto"),
        (["transport.initial_cwnd=2"], "transport.initial_cwnd"),
        (["transport.sack=false"], "transport.sack"),
        (["transport.tail_loss_probe=false"], "transport.tail_loss_probe"),
        (["transport.cwr=false"], "transport.cwr"),
    ],
)
def test_tcp_settings_the_kernel_has_one_way_only_are_refused_naming_the_key(tmp_path, sets, key):
    p = _plan(tmp_path, sets=sets)
    with pytest.raises(Unsupported, match=key.replace(".", r"\.")):
        target.check(p)


def test_what_the_testbed_cannot_run_is_refused_with_its_own_reason(tmp_path):
    # a queue the testbed has no qdisc for
    p = _plan(tmp_path, net='queue = "red"\nred_min_threshold = "5pkt"\nred_max_threshold = "15pkt"')
    with pytest.raises(Unsupported, match=r"network\.queue = 'red'.*testbed has drop-tail"):
        target.check(p)
    # a protocol the testbed does not run
    p = _plan(tmp_path, "h.toml", proto="homa")
    with pytest.raises(Unsupported, match=r"protocol 'homa' is not supported by the testbed"):
        target.check(p)
    # several paths between two hosts
    q = tmp_path / "ls.toml"
    q.write_text(
        STAR.format(net="", proto="tcp", transport="")
        .replace('topology = "star"\nhosts = 3', 'topology = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2')
        .replace('["h1", "h2"]', '["h2", "h3"]')
    )
    with pytest.raises(Unsupported, match=r"network\.topology = 'leafspine'.*one path per pair"):
        target.check(plan_mod.load(q))
    # --unset: the testbed reads the file with overrides only
    p = _plan(tmp_path, "u.toml", unset=["network.buffer"])
    with pytest.raises(Unsupported, match="--unset network.buffer"):
        target.check(p)


def test_the_plan_keeps_the_scenario_and_its_overrides_for_the_testbed(tmp_path):
    p = _plan(tmp_path, sets=["seed=7"])
    assert Path(p.source) == tmp_path / "s.toml" and p.overrides == ["seed=7"] and p.seed == 7
    target.check(p)
    assert any("dctcp" not in n and "tcp as reno" in n for n in p.notes), p.notes
    assert any("not emulated on star" in n for n in p.notes), p.notes
    # a dict scenario reaches the testbed as a file of its own
    import tomllib

    d = tomllib.loads((tmp_path / "s.toml").read_text())
    pd_ = plan_mod.load(d)
    with target.scenario_file(pd_) as f:
        assert f.suffix == ".json" and json.loads(f.read_text())["name"] == "tiny"
    target.check(pd_)


def test_every_setup_passes_the_targets_checks():
    files = sorted(SETUPS.glob("*.toml"))
    assert len(files) >= 4
    for f in files:
        p = plan_mod.load(f)
        target.check(p)
        assert p.tcp["profile"] == "linux" and p.tcp["handshake"], f


def test_machine_load_is_read_from_proc():
    a = target.machine_load()
    b = target.machine_load()
    d = target.load_between(a, b)
    assert d["loadavg_before"] >= 0 and 0 <= d["busy"] <= 1 and 0 <= d["steal"] <= 1
    assert target.load_text(d).startswith("machine load: load average")


def test_a_small_crosscheck_on_the_kernel(tmp_path):
    """One seed of a 1.5 s DCTCP star on both (a couple of seconds of wall time): both runs
    written in the flows-table format, the kernel's version, load and wall time in the
    report, and every flow completed on the kernel."""
    _need_testbed()
    from fctlab import kernel as K

    if K.bpf_unavailable():
        pytest.skip(f"DCTCP on the testbed needs BPF: {K.bpf_unavailable()}")
    p = tmp_path / "d.toml"
    p.write_text(STAR.format(net='queue = "ecn"\necn_threshold = "20pkt"', proto="dctcp", transport=""))
    cc = crosscheck(p, against="testbed", out=tmp_path / "xc", seeds=1)
    run = cc.runs[0]
    kernel = pd.read_parquet(run.other_dir / "flows.parquet")
    sim = pd.read_parquet(run.fctlab_dir / "flows.parquet")
    assert len(kernel) == len(sim) == 30 and kernel["completed"].all()
    assert (kernel["bytes_delivered"] == kernel["size_bytes"]).all()
    s = json.loads((run.other_dir / "summary.json").read_text())
    assert s["producer"] == "testbed" and s["kernel"] == os.uname().release
    assert s["congestion_controls"]["0"] == K.DCTCP
    report = (tmp_path / "xc" / "report.md").read_text()
    assert f"Linux {os.uname().release}" in report and "machine load: load average" in report
    assert "seed 1:" in report and "s of wall time" in report
    # the kernel counts no timeouts: not graded, shown as not measured
    assert not any("timeouts" in c["what"] for c in cc.stats["checks"])
    ratio = kernel["fct_s"].median() / sim["fct_s"].median()
    print(
        f"median FCT kernel / fctlab: {ratio:.2f}; checks: {[(c['what'], round(c['ratio'], 2)) for c in cc.stats['checks']]}"
    )


SEQUENTIAL = """
name = "burst"
seed = 1

[network]
topology = "star"
hosts = 2
link_rate = "100Mbps"
link_delay = "10us"
buffer = "100pkt"

[transport]
profile = "linux"
protocol = "tcp"
handshake = true
{flows}
"""


@pytest.mark.wallclock
def test_a_flow_within_the_tbf_burst_beats_its_serialization_time_on_the_kernel(tmp_path):
    """Why the kernel's small flows finish sooner than fctlab's (poisson_tree, incast): every
    testbed port is a TBF whose bucket holds 1 ms of traffic (12,500 bytes at 100 Mbps), and a
    full bucket sends that much at once. A 12 KB flow on an idle path therefore completes,
    handshake and application ACK included, in less than its 0.96 ms of serialization at the
    link's rate, which no switch of that rate can do; fctlab serializes it at every hop."""
    _need_testbed()
    from fctlab.api import run as fctlab_run
    from fctlab.testbed import run_testbed
    from fctlab.testbed.netns import port_burst

    size = 12_000
    assert size <= port_burst(100e6) == 12_500
    flows = "".join(f'\n[[flows]]\nsrc = "h1"\ndst = "h0"\nsize = {size}\nstart = "{20 * k}ms"\n' for k in range(10))
    p = tmp_path / "burst.toml"
    p.write_text(SEQUENTIAL.format(flows=flows))
    run_testbed(p, tmp_path / "tb")
    kernel = pd.read_parquet(tmp_path / "tb" / "flows.parquet")["fct_s"].median()
    sim = fctlab_run(p).flows_table.column("fct_s").to_pylist()
    serialization = size * 8 / 100e6
    print(
        f"12 KB flows: kernel median {kernel * 1e3:.3f} ms, fctlab {min(sim) * 1e3:.3f} ms, serialization {serialization * 1e3:.2f} ms"
    )
    assert min(sim) > serialization
    assert kernel < serialization


@pytest.mark.xfail(
    reason="fctlab_dctcp on this kernel: in some CWR episodes the sender's snd_ssthresh becomes 2,183,148,773 "
    "(the low half of srso_return_thunk+5), PRR opens the window to about 10^9 segments and the sender bursts "
    "into the port; no computation of the program gives that value, and the kernel's reno with ECN on the same "
    "set-up never shows it; the program's operations did not run when it happened (docs/crosscheck.md)",
    strict=False,
)
def test_the_kernel_dctcp_window_stays_bounded(tmp_path):
    """dctcp_star.toml's two long-lived DCTCP flows and small flows through a marking port
    (4 s): the long flows' windows, sampled every millisecond, stay below 1,000 segments."""
    _need_testbed()
    from fctlab import kernel as K
    from fctlab.testbed import run_testbed

    if K.bpf_unavailable():
        pytest.skip(f"DCTCP on the testbed needs BPF: {K.bpf_unavailable()}")
    run_testbed(
        SETUPS / "dctcp_star.toml",
        tmp_path / "tb",
        set=["monitor.cwnd_interval=1ms", "monitor.cwnd_flows=[0,1]"],
    )
    c = pd.read_parquet(tmp_path / "tb" / "cwnd.parquet")
    segs = c["cwnd_bytes"] / 1448
    print(f"largest window: {segs.max():.0f} segments; samples above 1000: {(segs > 1000).sum()} of {len(segs)}")
    assert segs.max() < 1000
