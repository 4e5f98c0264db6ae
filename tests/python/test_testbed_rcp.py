"""RCP, RACS and SDC on the namespace testbed: the feedback option written and read by the
hosts' sock_ops programs, the protocol's rule on every switch port (tc BPF), the senders' BPF
congestion control, against the simulator on the same file (docs/testbed.md, "RCP", "RACS"
and "SDC"). Needs root, namespaces, cgroup v2 and BPF; skips saying which is missing."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import testbed_process

import fctlab
from fctlab import kernel as K
from fctlab.testbed import run_testbed
from fctlab.testbed.feedback import Mangler
from fctlab.testbed.hostprog import cgroup2_root, stale_cgroups
from fctlab.testbed.netns import check_machine, list_namespaces
from fctlab.testbed.programs import Programs
from fctlab.testbed.shell import TEMP_PREFIX

EXAMPLES = Path(__file__).resolve().parents[2] / "scenarios" / "examples"
SCENARIO = EXAMPLES / "testbed_rcp.toml"
RACS = EXAMPLES / "testbed_racs.toml"
SDC = EXAMPLES / "testbed_sdc.toml"
#: The bottleneck's payload rate: 100 Mbps of 1,514-byte frames carrying 1,428 bytes (the
#: kernel shrinks segments by the 20-byte option).
PAYLOAD_BPS = 100e6 * 1428 / 1514
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


@pytest.mark.wallclock
def test_four_rcp_flows_share_the_bottleneck_equally_with_a_short_queue(tmp_path):
    """Four long-lived RCP flows through a 100 Mbps bottleneck: each gets C/N within 10% after
    1 s on the kernel (in payload: 23.6 Mbps of the 25 Mbps of frames), the queue an arriving packet finds at the bottleneck averages
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
    fair = PAYLOAD_BPS / 4  # C/N, in the payload rates measured
    assert ((kernel - fair).abs() <= 0.1 * fair).all(), kernel
    assert port["mean_queue_pkts"] < 20 and s["drops"] == 0, port
    assert port["lowered"] >= 0.99 * port["data"] > 0 and port["malformed"] == 0, port
    assert s["feedback"]["hosts"]["parsed"] > 0 and s["feedback"]["hosts"]["malformed"] == 0
    assert ((sim_rates - kernel).abs() <= 0.1 * kernel).all(), (sim_rates, kernel)
    assert _left_behind() == []


def _sized(tmp_path) -> Path:
    """The RCP example with a 4 MB flow per sender instead of long-lived flows."""
    p = tmp_path / "sized.toml"
    p.write_text(
        SCENARIO.read_text()
        .replace('stop_time = "3s"', "")
        .replace('kind = "long_lived"', 'kind = "permutation"\nsizes = { dist = "fixed", size = "4MB" }')
        .replace('pattern = "pairs"', "")
    )
    return p


def test_a_malformed_option_is_counted_and_the_flows_go_on(tmp_path, monkeypatch):
    """Every switch port also runs kernel/fb_mangle.bpf.c, which corrupts the option of each
    packet after the port stamped it: the hosts count malformed options, no sender hears a
    rate, and sized RCP flows still complete with every byte (as Reno flows)."""
    _need_rcp()
    mangler = Mangler()
    stamp = Programs.port_program

    def stamp_and_mangle(self, ns, dev, rate):
        stamp(self, ns, dev, rate)
        mangler.attach(ns, dev)

    monkeypatch.setattr(Programs, "port_program", stamp_and_mangle)
    s = run_testbed(_sized(tmp_path), tmp_path / "mangled")
    f = pd.read_parquet(tmp_path / "mangled" / "flows.parquet")
    hosts = s["feedback"]["hosts"]
    print(f[["flow_id", "fct_s", "bytes_delivered"]], hosts)
    assert f["completed"].all() and (f["bytes_delivered"] == 4_000_000).all()
    assert hosts["malformed"] > 100, hosts
    assert _left_behind() == []


def test_without_the_ports_feedback_rcp_senders_fall_back_to_reno(tmp_path, monkeypatch):
    """Switch ports that do not stamp (no port program): the receivers echo no rate, the
    senders stay Reno senders, and sized RCP flows complete with every byte; the hosts count
    the options they read."""
    _need_rcp()
    monkeypatch.setattr(Programs, "port_program", lambda self, ns, dev, rate: None)
    s = run_testbed(_sized(tmp_path), tmp_path / "plain")
    f = pd.read_parquet(tmp_path / "plain" / "flows.parquet")
    print(f[["flow_id", "fct_s", "bytes_delivered"]], s["feedback"])
    assert f["completed"].all() and (f["bytes_delivered"] == 4_000_000).all()
    assert s["feedback"]["ports"] == {} and s["feedback"]["hosts"]["parsed"] > 0
    assert _left_behind() == []


@pytest.mark.wallclock
def test_two_racs_flows_with_weights_one_and_two_share_one_to_two(tmp_path):
    """Two long-lived RACS flows with weights 1 and 2: after 1 s the kernel's rates are 1:2
    within 15%, as the simulator's on the same file; the bottleneck granted every request,
    drops nothing, and its queue stays short."""
    _need_rcp()
    s = run_testbed(RACS, tmp_path / "kernel")
    kernel = _steady_rates(tmp_path / "kernel")
    sim = fctlab.run(RACS).cwnd
    sim_rates = sim[sim["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean()
    port = s["feedback"]["ports"]["left->right"]
    k_ratio, s_ratio = kernel[1] / kernel[0], sim_rates[1] / sim_rates[0]
    print(f"kernel Mbps {(kernel / 1e6).round(2).tolist()} (ratio {k_ratio:.3f}), simulator ratio {s_ratio:.3f}")
    print(f"bottleneck: {port}; hosts: {s['feedback']['hosts']}; drops {s['drops']}")
    assert set(s["congestion_controls"].values()) == {"fctlab_racs"}
    assert abs(k_ratio - 2) <= 0.15 * 2 and abs(s_ratio - 2) <= 0.15 * 2, (k_ratio, s_ratio)
    assert kernel.sum() > 0.85 * 100e6 * 1448 / 1514, kernel  # the link stays busy
    assert port["lowered"] == port["data"] > 0 and port["malformed"] == 0, port
    assert port["mean_queue_pkts"] < 50 and s["drops"] == 0, port
    assert _left_behind() == []


@pytest.mark.wallclock
def test_four_sdc_flows_keep_the_bottleneck_busy(tmp_path):
    """Four long-lived SDC flows: after 1 s the bottleneck carries at least 90% of its payload
    rate on the kernel, as in the simulator; every data packet got the port's load factor,
    nothing is dropped."""
    _need_rcp()
    s = run_testbed(SDC, tmp_path / "kernel")
    kernel = _steady_rates(tmp_path / "kernel")
    sim = fctlab.run(SDC).cwnd
    sim_rates = sim[sim["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean()
    port = s["feedback"]["ports"]["left->right"]
    print(f"kernel Mbps {(kernel / 1e6).round(2).tolist()} (total {kernel.sum() / 1e6:.2f})")
    print(f"simulator Mbps {(sim_rates / 1e6).round(2).tolist()}; bottleneck {port}; drops {s['drops']}")
    assert set(s["congestion_controls"].values()) == {"fctlab_sdc"}
    assert kernel.sum() >= 0.9 * PAYLOAD_BPS, kernel
    assert sim_rates.sum() >= 0.9 * 100e6 * 1460 / 1500, sim_rates
    assert port["data"] > 0 and port["lowered"] >= 0.9 * port["data"] and port["malformed"] == 0, port
    assert s["drops"] == 0
    assert _left_behind() == []


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_an_interrupted_rcp_run_leaves_nothing_behind(tmp_path, how):
    """Ctrl-C on `fctlab testbed run` with RCP flows: it exits 130, and its namespaces, its
    cgroup, its loader and `fctlab_rcp` are gone, as are the port programs. Killed outright
    (SIGKILL, no cleanup of its own), its loader still exits (its input closes) and takes the
    host programs with it; the namespaces and the cgroup are what `fctlab testbed clean`
    removes, with the temporary directories of its BPF objects."""
    _need_rcp()
    p = tmp_path / "long.toml"
    p.write_text(SCENARIO.read_text().replace('stop_time = "3s"', 'stop_time = "20s"'))
    proc = testbed_process.start(p, tmp_path / "o")
    prefix = testbed_process.prefix(proc)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            "fctlab_rcp" in K.available_congestion_controls() and len(list_namespaces(prefix)) == 11
        ):
            time.sleep(0.1)
        assert "fctlab_rcp" in K.available_congestion_controls(), "the run did not load RCP in time"
        time.sleep(1.0)  # traffic running
        assert any(pr["name"] == "rcp_port_egress" for pr in K.testbed_programs())
        proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        if how == "sigint":
            assert proc.returncode == 130 and "interrupted" in err, (proc.returncode, err)
        else:
            assert proc.returncode == -signal.SIGKILL
            from fctlab.testbed import main_testbed

            assert main_testbed(["clean"]) == 0
            # the killed run's compiled and patched BPF objects go with it
            assert not list(Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*"))
        deadline = time.monotonic() + 15  # the loader exiting; namespaces and programs freed (asynchronously)
        while time.monotonic() < deadline and (
            "fctlab_rcp" in K.available_congestion_controls()
            or any(pr["name"] in ("rcp_port_egress", "fb_sockops") for pr in K.testbed_programs())
        ):
            time.sleep(0.2)
    finally:
        left = testbed_process.sweep(proc)
    assert left == []
    assert stale_cgroups() == [] and not (cgroup2_root() / f"fctlab-{proc.pid}").exists()
    assert "fctlab_rcp" not in K.available_congestion_controls()
    assert not any(pr["name"] in ("rcp_port_egress", "fb_sockops") for pr in K.testbed_programs())
