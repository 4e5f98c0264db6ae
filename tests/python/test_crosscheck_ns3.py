"""fctlab crosscheck --against ns3: the translation into the runner's plan file (without ns-3),
the refusals, and one small run beside ns-3.44 itself (skipped, saying why, when the ns3 wheel
cannot be installed or the runner not compiled)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fctlab import plan
from fctlab.crosscheck import crosscheck, ns3
from fctlab.plan import Unsupported
from fctlab.peers import ns3 as peer
from scenario_dicts import merged

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "scenarios" / "crosscheck" / "ns3"


def star(**extra) -> dict:
    sc = {
        "seed": 1,
        "network": {"topology": "star", "hosts": 3, "link_rate": "1Gbps", "link_delay": "50us", "buffer": "100pkt"},
        "transport": {"profile": "linux", "handshake": True, "rwnd": "1000000B"},
        "flows": [{"src": "h1", "dst": "h0", "size": "100KB"}],
    }
    return merged(sc, extra)


def text_of(sc: dict) -> str:
    p = plan.load(sc)
    ns3.check(p)
    return ns3.plan_text(p, 1)


def lines(text: str, item: str) -> list:
    return [ln.split()[1:] for ln in text.splitlines() if ln.split() and ln.split()[0] == item]


# --- the translation -------------------------------------------------------------------------


def test_nodes_links_and_ports_of_a_star():
    t = text_of(star())
    assert [n[0] for n in lines(t, "node")] == ["h0", "h1", "h2", "sw0"]
    links = lines(t, "link")
    assert len(links) == 3 and all(ln[2] == "5e-05" for ln in links)
    ports = lines(t, "port")
    # one port per link direction, numbered as the plan's ports (the report's link ids)
    assert [p[0] for p in ports] == [str(i) for i in range(6)]
    assert sorted((p[1], p[2]) for p in ports) == [(str(k), d) for k in range(3) for d in "01"]
    # 100 waiting packets: 99 in the queue disc and one in the device queue
    assert all(p[3:] == ["1000000000", "fifo", "100", "0"] for p in ports)


def test_the_ecn_threshold_is_red_one_below_k_on_the_queue_disc():
    sc = star(network={"queue": "ecn", "ecn_threshold": "20pkt"}, transport={"protocol": "dctcp"})
    t = text_of(sc)
    sw = [p for p in lines(t, "port") if p[4] == "red"]
    # the switch's three ports mark; the NICs stay FIFO
    assert len(sw) == 3 and all(p[5:] == ["100", "19"] for p in sw)
    flow = lines(t, "flow")[0]
    assert flow[5:7] == ["dctcp-floor", "1"]


def test_ecn_ports_without_ecn_flows_are_fifo_and_the_reason_is_noted():
    p = plan.load(star(network={"queue": "ecn", "ecn_threshold": "20pkt"}))
    ns3.check(p)
    assert any("no flow is ECN-capable" in n for n in p.notes)
    # a RED port would drop the packets that are not ECN-capable above K
    assert {q[4] for q in lines(ns3.plan_text(p, 1), "port")} == {"fifo"}


def test_tcp_settings_of_the_linux_profile():
    t = text_of(star(transport={"min_rto": "10ms", "delayed_ack": True}))
    s = {a: v for a, v in lines(t, "set")}
    assert s["ns3::TcpSocket::SegmentSize"] == "1460"
    assert s["ns3::TcpSocket::InitialCwnd"] == "10"
    assert s["ns3::TcpSocketBase::MinRto"] == "10000000ns"
    assert s["ns3::TcpSocket::DelAckCount"] == "2"
    assert s["ns3::TcpSocketBase::Sack"] == "true"
    assert s["ns3::TcpSocketBase::Timestamp"] == "false"
    assert s["ns3::TcpSocketBase::LimitedTransmit"] == "false"
    assert s["ns3::TcpSocket::RcvBufSize"] == "1000000"
    assert int(s["ns3::TcpSocket::SndBufSize"]) >= 2 * 1000000
    # the initial RTO (5 x min_rto when min_rto is given) for the SYN and before the first sample
    assert s["ns3::TcpSocket::ConnTimeout"] == s["ns3::RttEstimator::InitialEstimation"] == "50000000ns"


def test_flows_sizes_starts_and_closed_loop_rounds():
    sc = star(
        flows=[],
        workloads=[
            {
                "kind": "incast",
                "client": "h0",
                "servers": ["h1", "h2"],
                "sizes": {"dist": "fixed", "size": "20KB"},
                "rounds": 2,
                "round_gap": "1ms",
            }
        ],
    )
    fl = lines(text_of(sc), "flow")
    assert len(fl) == 4
    # round 0: group 0, starts at 0; round 1: group 1, starts 1 ms after group 0 completed
    assert [f[7:] for f in fl] == [["0", "-1"], ["0", "-1"], ["1", "0"], ["1", "0"]]
    assert fl[2][4] == "0.001" and fl[0][3] == "20000"


def test_cubic_parameters_and_hystart():
    t = text_of(star(transport={"protocol": "cubic"}))
    s = {a: v for a, v in lines(t, "set")}
    assert s["ns3::TcpCubic::HyStart"] == "false"
    assert lines(t, "flow")[0][5] == "cubic"


def test_the_linux_settings_ns3_runs_differently_are_noted():
    p = plan.load(star(transport={"handshake": False}))
    ns3.check(p)
    text = " ".join(p.notes)
    for key in ("transport.handshake", "transport.tail_loss_probe", "TcpClassicRecovery", "PPP"):
        assert key in text


def test_the_ns2_profile_mechanisms_are_noted():
    p = plan.load(star(transport={"profile": "ns2", "sack": True}))
    ns3.check(p)
    text = " ".join(p.notes)
    for key in ("transport.sack_recovery = 'ns2'", "transport.window_model = 'ns2'", "transport.rto_model"):
        assert key in text, text


@pytest.mark.parametrize(
    "change, key",
    [
        ({"transport": {"protocol": "atcp"}}, "flows[0].protocol"),
        ({"transport": {"protocol": "rcp"}}, "flows[0].protocol"),
        ({"transport": {"protocol": "homa"}}, "flows[0].protocol"),
        ({"network": {"queue": "red"}}, "network.queue"),
        ({"network": {"buffer": "30000B"}}, "network.buffer"),
        ({"network": {"buffer_model": "ns2"}}, "network.buffer_model"),
        ({"network": {"queue": "ecn", "ecn_threshold": "30KB"}}, "network.ecn_threshold"),
        ({"network": {"queue": "ecn", "ecn_threshold": "2pkt"}}, "network.ecn_threshold"),
        ({"transport": {"header_bytes": "44B"}}, "transport.header_bytes"),
        (
            {"network": {"topology": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2}},
            "network.topology",
        ),
    ],
)
def test_refusals_name_the_key(change, key):
    sc = star(**change)
    if change.get("network", {}).get("topology") == "leafspine":
        sc["network"].pop("hosts")
        sc["flows"] = [{"src": "h0", "dst": "h3", "size": "100KB"}]
    p = plan.load(sc)
    with pytest.raises(Unsupported) as e:
        ns3.check(p)
    assert str(e.value).startswith(key), str(e.value)


def test_the_runner_is_package_data_and_its_build_is_cached_by_hash(tmp_path, monkeypatch):
    assert peer.SOURCE.is_file() and peer.SOURCE.suffix == ".cc"
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path))
    assert peer.find() is None
    assert peer.runner_path().parent == tmp_path / "peers" / "ns3"
    other = tmp_path / "other.cc"
    other.write_text(peer.SOURCE.read_text() + "\n// changed\n")
    assert peer.runner_path(other) != peer.runner_path()
    assert "PyPI" in peer.how_to_get()


def test_a_failed_build_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path))
    monkeypatch.setenv("FCTLAB_NS3_PKG", str(tmp_path / "no-such-wheel.whl"))
    monkeypatch.setattr(peer.sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(ns3.Ns3Error) as e:
        ns3.runner(say=lambda m: None)
    assert "\n" not in str(e.value) and "ns-3 is not available" in str(e.value)


def test_the_suite_files_load_and_translate():
    files = sorted(SUITE.glob("*.toml"))
    assert len(files) >= 4
    for f in files:
        p = plan.load(f)
        ns3.check(p)
        assert p.tcp["profile"] == "linux", f
        assert ns3.plan_text(p, 1).count("\nflow ") == len(p.flows)


# --- beside ns-3 itself ------------------------------------------------------------------------


def _runner_or_skip() -> Path:
    if os.environ.get("FCTLAB_NO_NS3"):
        pytest.skip("FCTLAB_NO_NS3 is set")
    try:
        return ns3.runner()
    except ns3.Ns3Error as e:
        print(f"skipping: {e}")
        pytest.skip(str(e))


def test_a_small_incast_beside_ns3(tmp_path):
    """Four 30 KB responses through one 1 Gbps port, three rounds: both complete every flow,
    and ns-3's median FCT is within 25% of fctlab's (the run takes well under a second)."""
    _runner_or_skip()
    sc = star(
        network={"hosts": 5, "buffer": "64pkt"},
        flows=[],
        workloads=[
            {
                "kind": "incast",
                "client": "h0",
                "servers": "h1..h4",
                "sizes": {"dist": "fixed", "size": "30KB"},
                "rounds": 3,
                "round_gap": "1ms",
            }
        ],
    )
    cc = crosscheck(sc, against="ns3", out=tmp_path, seeds=1)
    import pandas as pd

    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert b["completed"].all() and a["completed"].all()
    assert (b["bytes_delivered"] == 30_000).all()
    # rounds are closed-loop: round 1 starts after round 0 completed
    assert b[b["group"].str.endswith(":1")]["start_s"].min() > b[b["group"].str.endswith(":0")]["finish_s"].max()
    ratio = a["fct_s"].median() / b["fct_s"].median()
    assert 0.75 < ratio < 1.25, ratio
    assert (tmp_path / "seed-1" / "ns3" / "plan.txt").is_file()
    assert (tmp_path / "report.md").is_file()
