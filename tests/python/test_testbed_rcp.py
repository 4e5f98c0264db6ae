"""RCP on the namespace testbed: the feedback option written and read by the hosts' sock_ops
program, RCP's rule on every switch port (tc BPF), the senders' `fctlab_rcp`, against the
simulator on the same file (docs/testbed.md, "RCP"). Needs root, namespaces, cgroup v2 and
BPF; skips saying which is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

import fctlab
from fctlab import kernel as K
from fctlab.testbed import run_testbed
from fctlab.testbed.hostprog import cgroup2_root, stale_cgroups
from fctlab.testbed.netns import check_machine, list_namespaces
from fctlab.testbed.runner import _Programs

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "testbed_rcp.toml"
WARMUP_S = 1.0


def _need_rcp():
    probs = check_machine() if os.geteuid() == 0 else ["needs root (network namespaces)"]
    if probs:
        pytest.skip("testbed unavailable: " + "; ".join(probs))
    why = K.bpf_unavailable()
    if why:
        pytest.skip(f"RCP on the testbed needs BPF: {why}")
    if cgroup2_root() is None:
        pytest.skip("RCP on the testbed needs the cgroup v2 hierarchy (sock_ops programs attach to a cgroup)")


def _left_behind() -> list:
    return (
        list_namespaces(f"fctlab-{os.getpid()}-")
        + [str(g) for g in stale_cgroups()]
        + [n for n in K.available_congestion_controls() if n == "fctlab_rcp"]
    )


def _steady_rates(out: Path) -> pd.Series:
    c = pd.read_parquet(out / "cwnd.parquet")
    return c[c["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean()


def test_four_rcp_flows_share_the_bottleneck_equally_with_a_short_queue(tmp_path):
    """Four long-lived RCP flows through a 100 Mbps bottleneck: each gets C/N = 25 Mbps within
    10% after 1 s on the kernel, the queue an arriving packet finds at the bottleneck averages
    under 20 packets, nothing is dropped, and the simulator's rates on the same file are within
    10% of the kernel's. Every data packet crossing the bottleneck got its rate from the port;
    no option was malformed."""
    _need_rcp()
    s = run_testbed(SCENARIO, tmp_path / "kernel")
    kernel = _steady_rates(tmp_path / "kernel")
    sim = fctlab.run(SCENARIO, set=["monitor.cwnd_interval=10ms"])
    sim_rates = sim.cwnd[sim.cwnd["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean()
    port = s["feedback"]["ports"]["left->right"]
    print(f"kernel Mbps {(kernel / 1e6).round(2).tolist()}, simulator Mbps {(sim_rates / 1e6).round(2).tolist()}")
    print(f"bottleneck: {port}; hosts: {s['feedback']['hosts']}; drops {s['drops']}")
    assert set(s["congestion_controls"].values()) == {"fctlab_rcp"}
    assert ((kernel - 25e6).abs() <= 0.1 * 25e6).all(), kernel
    assert port["mean_queue_pkts"] < 20 and s["drops"] == 0, port
    assert port["lowered"] >= 0.99 * port["data"] > 0 and port["malformed"] == 0, port
    assert s["feedback"]["hosts"]["parsed"] > 0 and s["feedback"]["hosts"]["malformed"] == 0
    assert ((sim_rates - kernel).abs() <= 0.1 * kernel).all(), (sim_rates, kernel)
    assert _left_behind() == []


def test_without_the_ports_feedback_rcp_senders_fall_back_to_reno(tmp_path, monkeypatch):
    """Switch ports that do not stamp (no port program): the receivers echo no rate, the
    senders stay Reno senders, and sized RCP flows complete with every byte; the hosts count
    the options they read."""
    _need_rcp()
    monkeypatch.setattr(_Programs, "port_program", lambda self, ns, dev, rate: None)
    p = tmp_path / "sized.toml"
    p.write_text(
        SCENARIO.read_text()
        .replace('stop_time = "3s"', "")
        .replace('kind = "long_lived"', 'kind = "permutation"\nsizes = { dist = "fixed", size = "4MB" }')
        .replace('pattern = "pairs"', "")
    )
    s = run_testbed(p, tmp_path / "plain")
    f = pd.read_parquet(tmp_path / "plain" / "flows.parquet")
    print(f[["flow_id", "fct_s", "bytes_delivered"]], s["feedback"])
    assert f["completed"].all() and (f["bytes_delivered"] == 4_000_000).all()
    assert s["feedback"]["ports"] == {} and s["feedback"]["hosts"]["parsed"] > 0
    assert _left_behind() == []
