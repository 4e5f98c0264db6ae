"""The namespace testbed (fctlab.testbed): real Linux TCP over veth, bridges and TBF.

Needs root, iproute2 and (for ATCP flows) clang/bpftool/libbpf-dev; otherwise the tests skip
with the reason. All traffic stays inside namespaces named fctlab-<pid>-*, which every run
deletes again, also when interrupted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fctlab import kernel as K
from fctlab.api import FLOW_SCHEMA
from fctlab.testbed import main_testbed, run_testbed
from fctlab.testbed.netns import check_machine, list_namespaces
from fctlab.testbed.scenario import load_plan

DUMBBELL = """
name = "{name}"
seed = 1
{stop}

[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
bottleneck_rate = "{rate}"
buffer = "100pkt"

[transport]
protocol = "{proto}"
{transport}

[[flows]]
src = "s0"
dst = "r0"
{f0}
[[flows]]
src = "s1"
dst = "r1"
{f1}
"""


def _need_testbed():
    probs = check_machine() if os.geteuid() == 0 else ["needs root (network namespaces)"]
    if probs:
        pytest.skip("testbed unavailable: " + "; ".join(probs))


def _need_atcp():
    _need_testbed()
    miss = K.missing_tools()
    if miss:
        pytest.skip("ATCP unavailable: missing " + ", ".join(miss))
    if K.registered():
        pytest.skip(f"fctlab ATCP instances already registered by someone else: {K.registered()}")


def _mine() -> list[str]:
    return list_namespaces(f"fctlab-{os.getpid()}-")


def test_plan_parsing_without_root(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(DUMBBELL.format(name="p", stop="", rate="150Mbps", proto="tcp", transport="",
                                 f0='size = "1MB"', f1='size = "2MB"\nstart = "10ms"'))
    plan = load_plan(p, ["flows.1.size=\"3MB\""])
    assert plan.topology == "dumbbell" and plan.hosts == ["s0", "s1", "r0", "r1"]
    assert plan.links[0].rate_a == 150e6 and plan.links[0].buf_a == 100 * 1514
    assert [f.size for f in plan.flows] == [1_000_000, 3_000_000]
    assert plan.flows[1].start_s == pytest.approx(0.01)


def test_check():
    _need_testbed()
    assert main_testbed(["check"]) == 0


def test_small_dumbbell_run(tmp_path):
    _need_testbed()
    p = tmp_path / "small.toml"
    p.write_text(DUMBBELL.format(name="small", stop="", rate="150Mbps", proto="tcp", transport="",
                                 f0='size = "4MB"', f1='size = "2MB"\nstart = "100ms"\ntag = "late"'))
    t = time.monotonic()
    s = run_testbed(p, tmp_path / "out")
    assert time.monotonic() - t < 30
    flows = pq.read_table(tmp_path / "out" / "flows.parquet")
    assert flows.schema.equals(FLOW_SCHEMA)
    df = flows.to_pandas()
    assert df["completed"].all()
    assert df["bytes_delivered"].tolist() == [4_000_000, 2_000_000]
    assert (df["fct_s"] > 0).all() and (df["slowdown"] >= 1.0).all()
    # 6 MB through 150 Mbps take at least 0.32 s
    assert df["finish_s"].max() >= 6e6 * 8 / 150e6
    assert df["tag"].tolist() == ["", "late"]
    assert s["mode"] == "testbed" and s["flows_completed"] == 2
    assert s["congestion_controls"] == {"0": "reno", "1": "reno"}
    assert (tmp_path / "out" / "summary.json").is_file()
    assert _mine() == []


def test_interrupt_cleans_up(tmp_path):
    _need_atcp()
    p = tmp_path / "long.toml"
    p.write_text(DUMBBELL.format(name="long", stop='stop_time = "20s"', rate="100Mbps", proto="atcp",
                                 transport='weight_function = "fixed"', f0="weight = 1", f1="weight = 2"))
    proc = subprocess.Popen([sys.executable, "-m", "fctlab.testbed", "run", str(p), "--out", str(tmp_path / "o")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prefix = f"fctlab-{proc.pid}-"
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(list_namespaces(prefix)) < 6:
            time.sleep(0.1)
        assert len(list_namespaces(prefix)) == 6, "the run did not build its network in time"
        time.sleep(1.0)  # traffic running
        assert "atcp_w1" in K.available_congestion_controls()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, err
        assert "interrupted" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        left = list_namespaces(prefix)
        if left:
            subprocess.run(["ip", "netns", "del", *left[:1]], check=False)
            for n in left:
                subprocess.run(["ip", "netns", "del", n], check=False, capture_output=True)
        if K.registered():
            K.unload()
    assert left == []
    assert not (tmp_path / "o" / "flows.parquet").exists()


@pytest.mark.slow
def test_theorem1_weighted_share(tmp_path):
    """Two long-lived flows, atcp_w1 and atcp_w2, through a 100 Mbps TBF bottleneck.

    Marked slow (run by hand with ``pytest -m slow``): the measured ratio spreads from about
    1.3 to 1.8 between runs (docs/testbed.md), so a bound tight enough to mean something would
    fail now and then on a loaded machine."""
    _need_atcp()
    p = tmp_path / "thm1.toml"
    p.write_text(DUMBBELL.format(name="thm1", stop='stop_time = "5s"', rate="100Mbps", proto="atcp",
                                 transport='weight_function = "fixed"', f0="weight = 1", f1="weight = 2"))
    ratios = []
    for i in range(3):
        s = run_testbed(p, tmp_path / f"o{i}")
        df = pq.read_table(tmp_path / f"o{i}" / "flows.parquet").to_pandas()
        assert s["congestion_controls"] == {"0": "atcp_w1", "1": "atcp_w2"}
        b = df["bytes_delivered"].tolist()
        # together they fill the bottleneck (at least 80 % of 100 Mbps over 5 s)
        assert sum(b) * 8 / 5.0 > 0.8 * 100e6
        ratios.append(b[1] / b[0])
    print(f"theorem 1 throughput ratios w2/w1: {[round(r, 3) for r in ratios]}")
    mean = sum(ratios) / len(ratios)
    # The weight-2 flow gets clearly more. Theorem 1's exact 2:1 assumes both flows halve
    # together; a Linux drop-tail TBF drops them independently, which pulls the ratio
    # toward sqrt(2) (docs/testbed.md).
    assert 1.2 < mean < 2.4, ratios
    assert _mine() == [] and not K.registered()


def _shares_sim_vs_testbed(tmp_path, proto, transport, f0, f1):
    import fctlab
    from fctlab.compare import compare_runs, format_comparison

    # 10 s: over 5 s the kernel's split of two equal flows still wanders by up to ~15%.
    p = tmp_path / "shares.toml"
    p.write_text(DUMBBELL.format(name="shares", stop='stop_time = "10s"', rate="100Mbps", proto=proto,
                                 transport=transport, f0=f0, f1=f1))
    fctlab.run(p).write(tmp_path / "sim")
    run_testbed(p, tmp_path / "tb")
    result = compare_runs(tmp_path / "sim", tmp_path / "tb")
    text = format_comparison(result)
    print(text)
    assert "Throughput shares" in text
    shares = result["throughput_shares"]
    assert [s["flow_id"] for s in shares] == [0, 1]
    assert _mine() == [] and not K.registered()
    return shares


def test_simulator_and_testbed_agree_on_throughput_shares(tmp_path):
    """The same two-flow scenario in the simulator and on the kernel (NewReno / Linux Reno):
    `fctlab compare` shows each flow's share of the delivered bytes within 15%."""
    _need_testbed()
    shares = _shares_sim_vs_testbed(tmp_path, "tcp", "", "", "")
    for s in shares:
        assert abs(s["relative_difference"]) < 0.15, shares


@pytest.mark.slow
def test_simulator_and_testbed_agree_on_weighted_shares(tmp_path):
    """As above with ATCP weights 1 and 2. Marked slow: the kernel's ratio spreads between runs
    (docs/testbed.md), which puts the weight-1 flow's share 2-13% above the simulator's in the
    runs measured, close to the bound."""
    _need_atcp()
    shares = _shares_sim_vs_testbed(tmp_path, "atcp", 'weight_function = "fixed"', "weight = 1", "weight = 2")
    for s in shares:
        assert abs(s["relative_difference"]) < 0.15, shares


BIG_SMALL = """
name = "big_small"
seed = 1
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
bottleneck_rate = "100Mbps"
buffer = "100pkt"
[transport]
protocol = "{proto}"
weight_function = "step"
w_high = 3
w_low = 1
threshold = "5MB"
[[flows]]
src = "s0"
dst = "r0"
size = "20MB"
[[flows]]
src = "s1"
dst = "r1"
size = "5MB"
start = "600ms"
"""


def _big_small(tmp_path, runs):
    """The 100 MB + 10 MB experiment of the ATCP paper scaled to 100 Mbps (20 MB and 5 MB, the
    small flow joining after 0.6 s, when the large one is past the threshold), under Reno and
    under ATCP (step: weight 3 up to 5 MB, then 1, the paper's W_H : W_L). Returns the mean
    FCTs {protocol: (large, small)}."""
    _need_atcp()
    out = {}
    for proto in ("tcp", "atcp"):
        p = tmp_path / f"{proto}.toml"
        p.write_text(BIG_SMALL.format(proto=proto))
        fcts = []
        for i in range(runs):
            run_testbed(p, tmp_path / f"{proto}{i}")
            df = pq.read_table(tmp_path / f"{proto}{i}" / "flows.parquet").to_pandas()
            assert df["completed"].all()
            fcts.append(df["fct_s"].tolist())
        out[proto] = tuple(sum(f[k] for f in fcts) / runs for k in range(2))
    print(f"mean FCTs (large, small): {out}")
    assert _mine() == [] and not K.registered()
    return out


@pytest.mark.slow
def test_small_flow_finishes_sooner_with_atcp(tmp_path):
    """Slow: the kernel's gain is smaller than the simulator's (docs/testbed.md) and run-to-run
    timing noise on a loaded machine is of the same order, so this is checked by hand."""
    fct = _big_small(tmp_path, 3)
    assert fct["atcp"][1] < fct["tcp"][1], fct


@pytest.mark.slow
def test_large_flow_barely_changes_with_atcp(tmp_path):
    """Theorem 2: the large flow's completion time changes by less than 5% (mean of 5 runs;
    slow, and sensitive to timing noise on a loaded machine: see docs/testbed.md)."""
    fct = _big_small(tmp_path, 5)
    assert fct["atcp"][1] < fct["tcp"][1], fct
    assert abs(fct["atcp"][0] - fct["tcp"][0]) / fct["tcp"][0] < 0.05, fct
