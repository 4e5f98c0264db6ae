"""fctlab crosscheck --against htsim: the translation (without htsim), and runs beside htsim
itself (skipped, saying why, where no htsim is built: `fctlab peers build htsim --source
https://github.com/Broadcom/csg-htsim` builds it; DCQCN's tests need uet-htsim, `--source
https://github.com/ultraethernet/uet-htsim`)."""

from __future__ import annotations

import json
import math
import random
import tomllib

from pathlib import Path

import numpy as np
import pandas as pd

import pytest

from fctlab.cli import main
from fctlab import plan
from fctlab.crosscheck import crosscheck, htsim
from fctlab.plan import Unsupported
from fctlab.peers import htsim as htsim_peer
from scenario_dicts import merged


def _needs(build, missing: str, protocols=None):
    """Skips a test unless `build` (an htsim build found by ``htsim_peer.find``) is there,
    saying what is `missing` and how to get it."""
    how = htsim_peer.how_to_get() if protocols is None else htsim_peer.how_to_get(protocols)
    return pytest.mark.skipif(build is None, reason=f"{missing} ({how}; CI cannot fetch it)")


PEER = htsim_peer.find([p for p in htsim_peer.BASE_PROTOCOLS if p != "ndp"])
needs_htsim = _needs(PEER, "htsim is not built")
#: a build whose driver runs NDP (builds before NDP do not)
NDP_PEER = htsim_peer.find(["ndp"])
needs_ndp_htsim = _needs(NDP_PEER, "htsim is not built with ndp", ["ndp"])
#: a build with DCQCN (uet-htsim)
UET = htsim_peer.find(["dcqcn"])
needs_uet_htsim = _needs(UET, "uet-htsim is not built", ["dcqcn"])
#: a build whose driver runs csg-htsim's EQDS on htsim's fat-tree
EQDS_PEER = htsim_peer.find(["eqds"])
needs_eqds_htsim = _needs(EQDS_PEER, "htsim is not built with eqds", ["eqds"])
#: a build whose driver runs uet-htsim's UecSrc (NSCC, REPS) on htsim's fat-tree
NSCC_PEER = htsim_peer.find(["nscc"])
needs_nscc_htsim = _needs(NSCC_PEER, "uet-htsim is not built with nscc", ["nscc"])

P = 9000  # htsim's packet: 8960 B of data and a 40-byte header
#: DCTCP as htsim runs it (the set-ups of scenarios/crosscheck/htsim)
TRANSPORT = {
    "protocol": "dctcp",
    "mss": "8960B",
    "header_bytes": "40B",
    "min_rto": "250ms",
    "sack": False,
    "tail_loss_probe": False,
    "cwr": False,
    "handshake": True,
    "whole_packets": True,
    "dctcp": {"dctcp_alpha_init": 0.0},
}


def dumbbell(**extra) -> dict:
    sc = {
        "seed": 1,
        "network": {
            "topology": "dumbbell",
            "senders": 2,
            "receivers": 2,
            "link_rate": "10Gbps",
            "link_delay": "1us",
            "bottleneck_rate": "10Gbps",
            "bottleneck_delay": "1us",
            "buffer": "100pkt",
            "bottleneck_buffer": "100pkt",
            "queue": "ecn",
            "ecn_threshold": "15pkt",
        },
        "transport": dict(TRANSPORT),
        "flows": [{"src": "s0", "dst": "r0", "size": "100KB"}],
    }
    return merged(sc, extra)


def fattree() -> dict:
    sc = dumbbell()
    sc["network"] = {
        "topology": "fattree",
        "k": 4,
        "link_rate": "10Gbps",
        "link_delay": "1us",
        "buffer": "100pkt",
        "queue": "ecn",
        "ecn_threshold": "15pkt",
    }
    sc["flows"] = [{"src": "h0", "dst": "h15", "size": "2MB"}, {"src": "h1", "dst": "h0", "size": "2MB"}]
    return sc


def checked(sc: dict) -> plan.Plan:
    p = plan.load(sc)
    htsim.check(p)
    return p


def lines(text: str, head: str) -> list:
    return [ln.split() for ln in text.splitlines() if ln.startswith(head + " ")]


# --- the translation -------------------------------------------------------------------------


def test_ports_carry_rate_delay_and_buffers_as_htsim_counts_them():
    p = checked(dumbbell())
    text = htsim.script(p, 1)
    assert lines(text, "packet") == [["packet", str(P)]]
    ports = lines(text, "port")
    assert len(ports) == len(p.ports)
    for row, port in zip(ports, p.ports):
        assert float(row[2]) == port.rate_bps
        assert int(row[3]) == round(port.delay_s * 1e12)
        # htsim's queue holds the packet in transmission too: 100 waiting + 1, in bytes
        assert int(row[4]) == 101 * P
        # ECNQueue marks a leaving packet when the bytes queued (it included) exceed K: K = 15
        # packets marks from 15 waiting behind it on, as fctlab marks an arrival at 15 waiting
        assert int(row[5]) == (15 * P if port.queue["kind"] == "ecn" else -1)
    b = checked(dumbbell(network={"buffer": "900000B", "bottleneck_buffer": "900000B", "ecn_threshold": "135000B"}))
    row = lines(htsim.script(b, 1), "port")[-1]
    assert int(row[4]) == 900000 + P and int(row[5]) == 135000 + P - 1


def test_flows_are_whole_packets_on_a_path_from_source_to_destination():
    sc = dumbbell(flows=[{"src": "s0", "dst": "r0", "size": "100KB"}, {"src": "s1", "dst": "r1", "size": "8960B"}])
    p = checked(sc)
    flows = lines(htsim.script(p, 1), "flow")
    assert [int(f[3]) for f in flows] == [math.ceil(100_000 / 8960), 1]
    for f, fl in zip(flows, p.flows):
        fwd, rev = " ".join(f[7:]).split(" / ")
        for path, a, b in ((fwd, fl.src, fl.dst), (rev, fl.dst, fl.src)):
            hops = [p.ports[int(i)] for i in path.split()]
            assert hops[0].src == a and hops[-1].dst == b
            assert all(x.dst == y.src for x, y in zip(hops, hops[1:]))


def test_equal_cost_paths_are_drawn_per_flow_by_the_seed_and_noted():
    p = checked(fattree())
    assert any(n.startswith("paths:") for n in p.notes)
    single = checked(dumbbell())
    assert not any(n.startswith("paths:") for n in single.notes)
    port_of = {(x.src, x.dst): i for i, x in enumerate(p.ports)}
    drawn = set()
    for seed in range(20):
        path = htsim.route(p, "h0", "h15", random.Random(seed), port_of, {})
        assert len(path) == 6  # host, edge, aggregation, core, aggregation, edge, host
        drawn.add(tuple(path))
    assert len(drawn) == 4  # k=4: (k/2)^2 core paths between pods
    assert htsim.script(p, 3) == htsim.script(plan.load(fattree()), 3)


def test_groups_and_dependencies_become_groups_and_waiting_flows():
    sc = dumbbell(
        flows=[
            {"src": "s0", "dst": "r0", "size": "20KB", "group": "a"},
            {"src": "s1", "dst": "r0", "size": "20KB", "group": "a"},
            {"src": "s0", "dst": "r1", "size": "20KB", "after": "a", "start": "1ms"},
        ]
    )
    text = htsim.script(checked(sc), 1)
    assert lines(text, "group") == [["group", "0", "2"]]
    flows = lines(text, "flow")
    assert [f[5:7] for f in flows] == [["0", "-1"], ["0", "-1"], ["-1", "0"]]
    assert int(flows[2][4]) == 10**9  # 1 ms after the group completes, in picoseconds


@pytest.mark.parametrize(
    "change, key",
    [
        ({"transport": {"protocol": "atcp"}}, "flows[0].protocol"),
        ({"transport": {"min_rto": "1ms"}}, "transport.min_rto"),
        ({"transport": {"sack": True}}, "transport.sack"),
        ({"transport": {"cwr": True}}, "transport.cwr"),
        ({"transport": {"handshake": False}}, "transport.handshake"),
        ({"transport": {"delayed_ack": True}}, "transport.delayed_ack"),
        ({"transport": {"header_bytes": "52B"}}, "transport.header_bytes"),
        ({"transport": {"whole_packets": False}}, "transport.whole_packets"),
        ({"transport": {"dctcp": {"dctcp_alpha_init": 1.0}}}, "transport.dctcp_alpha_init"),
        ({"transport": {"dctcp": {"dctcp_alpha_init": 0.0, "dctcp_g": 0.1}}}, "transport.dctcp_g"),
        ({"transport": {"protocol": "tcp", "ecn": True}}, "transport.ecn"),
        ({"network": {"queue": "red"}}, "network.queue"),
    ],
)
def test_what_htsim_fixes_in_its_code_is_refused_naming_the_key(change, key):
    sc = dumbbell()
    for table, values in change.items():
        sc[table] = {**sc[table], **values}
    if change.get("network", {}).get("queue") == "red":
        sc["network"].pop("ecn_threshold")
    if sc["transport"]["protocol"] != "dctcp":
        sc["transport"].pop("dctcp")
    with pytest.raises(Unsupported, match=key.replace("[", r"\[").replace("]", r"\]")):
        checked(sc)


def test_the_rto_refusal_says_the_value_htsim_needs():
    with pytest.raises(Unsupported, match="250 ms"):
        checked(dumbbell(transport={"min_rto": "1ms"}))


def test_the_driver_table_runs_tcp_dctcp_roce_hpcc_swift_ndp_eqds_and_nscc():
    assert {p for p, d in htsim.DRIVERS.items() if d.runs} == {
        "tcp",
        "dctcp",
        "roce",
        "hpcc",
        "swift",
        "ndp",
        "eqds",
        "nscc",
    }
    assert htsim.DRIVERS["ndp"] == htsim.Driver("fctlab_htsim", "NdpSrc", True)
    assert htsim.DRIVERS["eqds"] == htsim.Driver("fctlab_htsim", "EqdsSrc", True)
    assert htsim.DRIVERS["nscc"] == htsim.Driver("fctlab_htsim", "UecSrc", True)
    assert {"ndp", "eqds", "nscc", "roce", "swift", "hpcc", "dcqcn"} <= set(htsim.DRIVERS)
    assert set(htsim.DEFECTIVE) == {"dcqcn"} and not htsim.DRIVERS["dcqcn"].runs


#: RoCE as htsim's RoceSrc runs it: 64 bytes beside the payload, 64-byte ACKs
RDMA = {"protocol": "roce", "mss": "1000B", "header_bytes": "64B"}
#: HPCC as htsim's HPCCSrc runs it: one base RTT, one payload (1000 B) per base RTT as W_AI
HPCC = {**RDMA, "protocol": "hpcc", "hpcc": {"hpcc_base_rtt": "16us", "hpcc_rate_ai": "500Mbps"}}
W = 1064  # an RDMA packet on the wire
#: Swift as htsim's SwiftSrc runs it: 40-byte ACKs, one first window for every flow
SWIFT = {"protocol": "swift", "mss": "1000B", "header_bytes": "40B", "swift": {"swift_initial_window": "20KB"}}


def lossless(transport=None, **network) -> dict:
    """A lossless k=4 fat-tree with htsim's RoCE driver's thresholds (15 and 12 packets)."""
    sc = fattree()
    sc["network"] = {
        **sc["network"],
        "queue": "droptail",
        "pfc": True,
        "pfc_xoff": "15000B",
        "pfc_xon": "11999B",
        "buffer": "1000KB",
        **network,
    }
    sc["network"].pop("ecn_threshold", None)
    sc["transport"] = dict(transport or RDMA)
    sc["flows"] = [{"src": "h0", "dst": "h15", "size": "1MB"}, {"src": "h1", "dst": "h0", "size": "200KB"}]
    return sc


def test_rdma_flows_run_over_htsims_lossless_queues_and_host_queues():
    p = checked(lossless())
    text = htsim.script(p, 1)
    # RocePacket's size is the payload (Packet::data_packet_size) plus its 64 header bytes
    assert lines(text, "packet") == [["packet", "1000"]]
    # htsim pauses above HIGH and resumes below LOW; fctlab above pfc_xoff and at or below pfc_xon
    assert lines(text, "pfc") == [["pfc", "15000", "12000"]]
    switches = set(p.switches)
    for row, port in zip(lines(text, "port"), p.ports):
        assert row[6] == ("host" if port.nic else "lossless")
        assert row[7] == ("1" if port.dst in switches else "0")  # a LosslessInputQueue at a switch only
        assert int(row[4]) == 1_000_000 + W
    assert [f[2] for f in lines(text, "flow")] == ["roce", "roce"]
    assert [int(f[3]) for f in lines(text, "flow")] == [1000, 200]
    assert not any(n.startswith("sizes:") for n in p.notes)
    assert any(n.startswith("PFC:") for n in p.notes) and any(n.startswith("paths:") for n in p.notes)


def test_pause_thresholds_left_out_are_fctlabs_from_the_buffer_and_the_headroom():
    sc = lossless(buffer="100pkt")
    del sc["network"]["pfc_xoff"], sc["network"]["pfc_xon"]
    high, low = htsim.pfc_thresholds(checked(sc))
    # xoff: the buffer (100 MTUs) less the headroom (two 10 Gbps x 1 us products, two MTUs and
    # a 64-byte frame); xon: xoff less two MTUs; htsim resumes below xon + 1
    xoff = 100 * W - (2 * 1250 + 2 * W + 64)
    assert (high, low) == (xoff, xoff - 2 * W + 1)


def test_hpcc_settings_become_htsims_static_members():
    text = htsim.script(checked(lossless(HPCC)), 1)
    assert lines(text, "hpcc") == [["hpcc", str(16 * 10**6), "0.95", "0"]]
    assert [f[2] for f in lines(text, "flow")] == ["hpcc", "hpcc"]


@pytest.mark.parametrize(
    "change, key",
    [
        ({"network": {"pfc": False}}, "network.pfc"),
        ({"transport": {"header_bytes": "48B"}}, "transport.header_bytes"),
        ({"transport": {"ack_interval": 2}}, "transport.ack_interval"),
        ({"transport": {"ecn": True}}, "transport.ecn"),
        ({"transport": {"protocol": "dcqcn"}}, "flows[0].protocol"),
        ({"transport": {**SWIFT}}, "network.pfc"),
        ({"transport": {"protocol": "timely"}}, "flows[0].protocol"),
        ({"network": {"switch_buffer": "2MB"}}, "network.switch_buffer"),
        ({"network": {"queue": "ecn", "nic_queue": "switch", "ecn_threshold": "30KB"}}, "network.nic_queue"),
        ({"transport": {"protocol": "hpcc"}}, "transport.hpcc_base_rtt"),
        ({"transport": {**HPCC, "hpcc": {"hpcc_base_rtt": "16us"}}}, "transport.hpcc_rate_ai"),
        (
            {"transport": {**HPCC, "hpcc": {**HPCC["hpcc"], "hpcc_min_rate": "1Gbps"}}},
            "transport.hpcc_min_rate",
        ),
    ],
)
def test_what_htsims_rdma_classes_fix_is_refused_naming_the_key(change, key):
    sc = lossless()
    for table, values in change.items():
        sc[table] = {**sc[table], **values}
    if sc["network"]["pfc"] is False:
        for k in ("pfc", "pfc_xoff", "pfc_xon"):
            sc["network"].pop(k)
    if "switch_buffer" in sc["network"]:  # a shared buffer sets its own thresholds
        for k in ("pfc_xoff", "pfc_xon"):
            sc["network"].pop(k)
    with pytest.raises(Unsupported, match=key.replace("[", r"\[").replace("]", r"\]")):
        checked(sc)


def lossy_swift(**transport) -> dict:
    sc = lossless({**SWIFT, **transport})
    for k in ("pfc", "pfc_xoff", "pfc_xon"):
        sc["network"].pop(k)
    return sc


def test_swift_runs_over_lossy_ports_behind_htsims_host_scheduler():
    p = checked(lossy_swift())
    text = htsim.script(p, 1)
    # a SwiftPacket is its payload alone: htsim's packet is fctlab's payload and header
    assert lines(text, "packet") == [["packet", "1040"]]
    assert not lines(text, "pfc")
    for row, port in zip(lines(text, "port"), p.ports):
        assert row[6:] == (["sched", "0"] if port.nic else ["queue", "0"])
    (swift,) = lines(text, "swift")
    # htsim's defaults, which are fctlab's: ai, beta, max_mdf, base target 20 us, hop scale 6.55,
    # fs range 5, fs min and max cwnd 0.1 and 100 packets, min cwnd 10 B, max cwnd 1000 packets,
    # retx reset 5; the first window, 20 packets, in htsim's packets; main_swift.cpp's 10 ms scan
    assert swift[1:] == ["1.0", "0.8", "0.5", str(20 * 10**6), "6.55", "5.0", "0.1", "100.0", "10", "1000.0", "5"] + [
        str(20 * 1040),
        str(10 * 10**9),
    ]
    assert any(n.startswith("target delay:") for n in p.notes)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"header_bytes": "64B"}, "transport.header_bytes"),
        ({"swift": {}}, "transport.swift_initial_window"),
        ({"ecn": True}, "transport.ecn"),
    ],
)
def test_what_htsims_swift_fixes_is_refused_naming_the_key(change, key):
    with pytest.raises(Unsupported, match=key):
        checked(lossy_swift(**change))


def test_a_protocol_htsim_does_not_have_is_refused_saying_so():
    with pytest.raises(Unsupported, match=r"flows\[0\]\.protocol: 'timely': htsim has no TIMELY"):
        checked(lossless({**RDMA, "protocol": "timely"}))


def test_dcqcn_is_refused_saying_why_uet_htsims_runs_do_not_end():
    with pytest.raises(Unsupported, match=r"flows\[0\]\.protocol: 'dcqcn': uet-htsim's DCQCNSrc does not run to") as e:
        checked(dcqcn_setup())
    assert "multiply every period" in str(e.value) and "\n" not in str(e.value)


#: DCQCN as uet-htsim's DCQCNSrc runs it (the set-ups of scenarios/crosscheck/htsim/dcqcn): R_AI and
#: R_HAI from the NIC's rate (10 Gbps / 20, / 10), no rate floor; the rest fctlab's defaults
DCQCN = {
    **RDMA,
    "protocol": "dcqcn",
    "dcqcn": {"rate_ai": "500Mbps", "rate_hai": "1Gbps", "min_rate": "1bps"},
}
DCQCN_SETUPS = Path(__file__).resolve().parents[2] / "scenarios" / "crosscheck" / "htsim" / "dcqcn"


def dcqcn_setup(**network) -> dict:
    """A lossless k=4 fat-tree whose switch ports mark at 10,000 bytes waiting, under DCQCN."""
    sc = lossless(DCQCN, **network)
    sc["network"].update(queue="ecn", ecn_threshold="10KB", nic_queue="droptail")
    return sc


def test_dcqcns_settings_become_the_statics_of_uet_htsims_dcqcnsrc_and_dcqcnsink():
    for name in ("dcqcn_incast", "dcqcn_permutation"):
        p = plan.load_file(DCQCN_SETUPS / f"{name}.toml")
        # g = 1/256, one 55 us period for both timers, F = 5, the 10 MB byte counter in
        # 1,064-byte packets (rounded up: DCQCNSrc adds the packets' sequence numbers), CNPs at
        # most every 50 us
        assert htsim.dcqcn_settings(p) == (1 / 256, 55e-6, 5, 9399, 50e-6)
        text = htsim.script(p, 1)
        assert lines(text, "dcqcn") == [["dcqcn", "0.00390625", "55000000", "5", "9399", "50000000"]]
        assert lines(text, "packet") == [["packet", "1000"]]
        for row, port in zip(lines(text, "port"), p.ports):
            # one K for every switch port (LosslessOutputQueue::_K): 10,000 B waiting, as a
            # leaving packet sees the bytes queued, itself included; hosts' NICs do not mark
            assert (row[6], int(row[5])) == (("host", -1) if port.nic else ("lossless", 10_000 + W - 1))
        assert {f[2] for f in lines(text, "flow")} == {"dcqcn"}
        assert htsim.lossless_ecn_bytes(p) == 10_000 + W - 1


@pytest.mark.parametrize(
    "override, key",
    [
        ("transport.dcqcn.alpha_timer=100us", "transport.alpha_timer"),
        ("transport.dcqcn.byte_counter=0B", "transport.byte_counter"),
        ("transport.dcqcn.rate_ai=50Mbps", "transport.rate_ai"),
        ("transport.dcqcn.rate_hai=100Mbps", "transport.rate_hai"),
        ("transport.dcqcn.min_rate=100Mbps", "transport.min_rate"),
    ],
)
def test_what_uet_htsims_dcqcnsrc_fixes_is_refused_naming_the_key(override, key):
    p = plan.load_file(DCQCN_SETUPS / "dcqcn_incast.toml", [override])
    with pytest.raises(Unsupported, match=key) as e:
        htsim.dcqcn_settings(p)
    assert "dcqcn.cpp" in str(e.value)


def test_red_on_lossless_ports_is_refused_for_htsims_one_threshold():
    with pytest.raises(Unsupported, match=r"network.queue: 'red'; htsim's LosslessOutputQueue marks"):
        checked(lossless(queue="red"))


def _fake_build(cache, commit: str, built: str, protocols=None) -> None:
    d = cache / "peers" / "htsim" / commit
    d.mkdir(parents=True)
    (d / htsim_peer.BINARY).write_text("")
    meta = {"repository": f"repo-{commit[0]}", "commit": commit, "built": built}
    if protocols is not None:
        meta["protocols"] = list(protocols)
    (d / "peer.json").write_text(json.dumps(meta))


def test_the_crosscheck_takes_the_newest_build_that_runs_the_scenarios_protocols(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path))
    # a build before peer.json named its protocols: csg-htsim's
    _fake_build(tmp_path, "a" * 40, "2026-01-01T00:00:00Z")
    _fake_build(tmp_path, "b" * 40, "2026-02-01T00:00:00Z", htsim_peer.DCQCN_PROTOCOLS)
    assert htsim_peer.find(["dctcp"]).commit == "a" * 40
    assert htsim_peer.find(["roce", "hpcc"]).commit == "a" * 40
    assert htsim_peer.find(["dcqcn"]).commit == "b" * 40
    assert htsim_peer.find().commit == "b" * 40
    assert htsim_peer.find(["dcqcn", "roce"]) is None
    _fake_build(tmp_path, "c" * 40, "2026-03-01T00:00:00Z", htsim_peer.BASE_PROTOCOLS)
    assert htsim_peer.find(["tcp"]).commit == "c" * 40
    assert [b.commit[0] for b in htsim_peer.builds()] == ["c", "b", "a"]
    # `fctlab peers list` shows the newest and names the others
    assert main(["peers", "list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("htsim:"))
    assert (
        line.startswith("htsim: repo-c at cccccccccccc")
        and "also built: repo-b at bbbbbbbbbbbb, runs dcqcn; repo-a" in line
    )


def test_without_a_build_with_dcqcn_a_run_says_to_build_uet_htsim(tmp_path, monkeypatch):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path / "cache"))
    p = plan.load(dcqcn_setup())
    with pytest.raises(htsim.HtsimError) as e:
        htsim.run(p, 1, tmp_path / "run")
    assert str(e.value) == f"htsim is not built: {htsim_peer.how_to_get(['dcqcn'])}"
    assert "--source https://github.com/ultraethernet/uet-htsim" in str(e.value)
    _fake_build(tmp_path / "cache", "a" * 40, "2026-01-01T00:00:00Z")
    with pytest.raises(htsim.HtsimError) as e:
        htsim.run(p, 1, tmp_path / "run")
    assert str(e.value).startswith(
        "htsim is not built with dcqcn: fctlab peers build htsim --source https://github.com/ultraethernet/uet-htsim"
    )
    assert str(e.value).endswith("(built: repo-a at aaaaaaaaaaaa runs tcp, dctcp, roce, hpcc, swift)")
    # the line every other scenario gets names both
    assert "https://github.com/Broadcom/csg-htsim" in htsim_peer.how_to_get()
    assert "for DCQCN, --source https://github.com/ultraethernet/uet-htsim" in htsim_peer.how_to_get()


def test_the_build_defines_what_the_code_base_has(tmp_path):
    assert htsim_peer.features(tmp_path) == {d: False for d in htsim_peer.FEATURES}
    (tmp_path / "dcqcn.h").write_text("class DCQCNSrc;\n")
    (tmp_path / "queue_lossless_output.h").write_text("    static int _ecn_enabled;\n    static int _K;\n")
    (tmp_path / "roce.cpp").write_text("    if (ackno * _mss >= _flow_size){\n")
    (tmp_path / "datacenter").mkdir()
    (tmp_path / "datacenter" / "fat_tree_topology.h").write_text("class FatTreeTopologyCfg {\n};\n")
    (tmp_path / "uec.h").write_text("class UecSrc;\n")
    (tmp_path / "compositequeue.h").write_text("                   uint16_t trim_size, bool disable_trim=false);\n")
    defines = htsim_peer.features(tmp_path)
    assert {d for d, on in defines.items() if not on} == {"FCTLAB_HTSIM_EQDS"}
    # uet-htsim: DCQCN, and NSCC on its fat-tree
    assert htsim_peer.protocols_of(defines) == ("dcqcn", "nscc")
    assert htsim_peer.protocols_of({**defines, "FCTLAB_HTSIM_FATTREE": False}) == ("dcqcn",)
    assert htsim_peer.protocols_of({}) == htsim_peer.BASE_PROTOCOLS
    # csg-htsim: its EQDS (EqdsNIC(eventlist, rate)) on its fat-tree
    (tmp_path / "eqds.h").write_text("    EqdsNIC(EventList &eventList, linkspeed_bps linkspeed);\n")
    assert htsim_peer.features(tmp_path)["FCTLAB_HTSIM_EQDS"]
    csg = {"FCTLAB_HTSIM_FATTREE": True, "FCTLAB_HTSIM_EQDS": True}
    assert htsim_peer.protocols_of(csg) == (*htsim_peer.BASE_PROTOCOLS, "eqds")


def test_tcp_over_lossless_ports_is_refused():
    sc = lossless(TRANSPORT)
    with pytest.raises(Unsupported, match="network.pfc"):
        checked(sc)


def test_inputs_with_different_pause_thresholds_are_refused():
    # default thresholds from each link: the 40 Gbps links have more headroom than the 10 Gbps ones
    sc = lossless(buffer="100pkt")
    sc["network"] = {**sc["network"], "topology": "leafspine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2}
    sc["network"]["fabric_link_rate"] = "40Gbps"
    del sc["network"]["k"], sc["network"]["pfc_xoff"], sc["network"]["pfc_xon"]
    sc["flows"] = [{"src": "h0", "dst": "h3", "size": "100KB"}]
    with pytest.raises(Unsupported, match="network.pfc_xoff"):
        checked(sc)


def test_pause_lines_become_fctlabs_pfc_rows():
    p = checked(lossless())
    port = next(i for i, x in enumerate(p.ports) if x.nic)
    out = "\n".join(
        ["startflow src0 at 0", "S 0 0", "S 1 0", "F 0 0.001 0 0 1000", "F 1 0.0003 0 0 200"]
        + [f"P 0.0001 {port} 1", f"P 0.00012 {port} 0"]
        + [f"L {i} 10 10640 0 0 0.001 {1 if i == port else 0}" for i in range(len(p.ports))]
        + ["T 0.001"]
    )
    flows, links, summary, _, pfc = htsim.parse(p, out, 1, 0.1)
    assert [f["completed"] for f in flows] == [True, True]
    name = f"{p.ports[port].src}->{p.ports[port].dst}"
    assert [(r["link_id"], r["link"], r["event"]) for r in pfc] == [(port, name, "pause"), (port, name, "resume")]
    assert summary["drops"] == 0


#: NDP as htsim's NDP driver runs it: 9000 B of payload and a 64-byte header, every packet full
NDP = {
    "protocol": "ndp",
    "mss": "9000B",
    "header_bytes": "64B",
    "whole_packets": True,
    "ndp": {"ndp_initial_window": 30},
}
NP = 9064  # an NDP data packet on the wire


def ndp_fattree(flows=None, transport=None, **network) -> dict:
    """NDP over trimming switches that spray, on a k=4 fat-tree of 100 Gbps links (htsim's
    NDP driver's rate): a flow between pods (4 paths), one within an edge switch (1) and one
    within a pod (2)."""
    return {
        "seed": 1,
        "network": {
            "topology": "fattree",
            "k": 4,
            "link_rate": "100Gbps",
            "link_delay": "1us",
            "buffer": "1MB",
            "queue": "trim",
            "trim_threshold": "8pkt",
            "nic_queue": "trim",
            "load_balancing": "spray",
            **network,
        },
        "transport": {**NDP, **(transport or {})},
        "flows": flows
        or [
            {"src": "h0", "dst": "h15", "size": "2MB"},
            {"src": "h1", "dst": "h0", "size": "100KB"},
            {"src": "h2", "dst": "h1", "size": "20KB"},
        ],
    }


def test_ndp_runs_over_htsims_trimming_queues_with_its_sources_spraying_every_path():
    p = checked(ndp_fattree())
    text = htsim.script(p, 7)
    # NdpPacket is the payload and ACKSIZE (64) bytes: data_packet_size is the payload
    assert lines(text, "packet") == [["packet", "9000"]]
    # htsim's random() draws the path shuffles and CompositeQueue's coin: the crosscheck's seed
    assert lines(text, "seed") == [["seed", "7"]]
    # the first window in packets (setCwnd(30 x 9000) in the driver), the pull pacers' rate
    assert lines(text, "ndp") == [["ndp", "30", "0.99"]]
    for row, port in zip(lines(text, "port"), p.ports):
        if port.nic:
            assert row[6:] == ["host", "0"]  # FairPriorityQueue
        else:
            # CompositeQueue counts the packet in transmission: 8 waiting + 1, as fctlab trims
            # an arrival that finds 8 packets of data waiting
            assert row[6:] == ["composite", "0"] and int(row[4]) == 9 * NP and row[5] == "-1"
    flows = lines(text, "flow")
    assert [f[1:] for f in flows] == [
        ["0", "ndp", "223", "0", "-1", "-1", "/"],
        ["1", "ndp", "12", "0", "-1", "-1", "/"],
        ["2", "ndp", "3", "0", "-1", "-1", "/"],
    ]
    # every shortest path, each way: 4 between pods, 1 within an edge switch, 2 within a pod
    paths = lines(text, "path")
    for fl, n, hops in zip(p.flows, (4, 1, 2), (6, 2, 4)):
        for d, a, b in (("fwd", fl.src, fl.dst), ("rev", fl.dst, fl.src)):
            mine = [[int(x) for x in row[3:]] for row in paths if row[1] == str(fl.flow_id) and row[2] == d]
            assert len(mine) == n and len({tuple(m) for m in mine}) == n
            for m in mine:
                ports = [p.ports[i] for i in m]
                assert len(ports) == hops and ports[0].src == a and ports[-1].dst == b
                assert all(x.dst == y.src for x, y in zip(ports, ports[1:]))
    notes = " ".join(p.notes)
    for what in ("drand() < 0.5", "FairPriorityQueue", "RESEND_ON_TIMEOUT", "SCATTER_PERMUTE", "ndp.cpp:1817"):
        assert what in notes
    assert not any(n.startswith("paths:") for n in p.notes)
    # both spray every flow over all its paths: the flows pair up
    assert htsim.pairs_flows(p)
    assert "fctlab's switches draw every packet's next hop at random" in notes
    # fctlab's spraying by the sender is run too, and noted as such
    s = checked(ndp_fattree(load_balancing="permutation"))
    assert htsim.script(s, 7) == text
    assert "a x i + b mod P" in " ".join(s.notes) and "at random" not in " ".join(s.notes)
    # a threshold in bytes: it and the packet in transmission
    b = checked(ndp_fattree(trim_threshold="40000B"))
    row = next(r for r, x in zip(lines(htsim.script(b, 1), "port"), b.ports) if not x.nic)
    assert int(row[4]) == 40000 + NP


@pytest.mark.parametrize(
    "transport, network, key",
    [
        ({"header_bytes": "40B"}, {}, "transport.header_bytes"),
        ({"whole_packets": False}, {}, "transport.whole_packets"),
        ({}, {"load_balancing": "ecmp"}, "network.load_balancing"),
        ({}, {"queue": "droptail", "trim_threshold": None}, "network.queue"),
        ({}, {"nic_queue": "droptail"}, "network.nic_queue"),
        ({}, {"trim_header_bytes": "80B"}, "network.trim_header_bytes"),
        ({}, {"trim_ecn_threshold": "4pkt"}, "network.trim_ecn_threshold"),
    ],
)
def test_what_htsims_ndp_fixes_is_refused_naming_the_key(transport, network, key):
    sc = ndp_fattree(transport=transport)
    for k, v in network.items():
        if v is None:
            sc["network"].pop(k)
        else:
            sc["network"][k] = v
    with pytest.raises(Unsupported, match=key) as e:
        checked(sc)
    assert "\n" not in str(e.value)


def test_htsims_ndp_refuses_64_byte_headers_saying_why_and_spraying_for_other_protocols():
    with pytest.raises(
        Unsupported, match=r'transport.header_bytes: 40 B; .*NdpPacket::ACKSIZE.* set header_bytes = "64B"'
    ):
        checked(ndp_fattree(transport={"header_bytes": "40B"}))
    # spraying is NDP's only: htsim's TCP and RDMA sources here take one path per flow
    sc = fattree()
    sc["network"]["load_balancing"] = "spray"
    with pytest.raises(
        Unsupported, match=r"network.load_balancing: 'spray'; .*only its NdpSrc, EqdsSrc and UecSrc spray"
    ):
        checked(sc)
    # a per-packet policy other than spraying is refused before htsim's own checks
    p = plan.load(ndp_fattree(load_balancing="flowlet"))
    with pytest.raises(
        Unsupported, match=r'network.load_balancing: htsim does not run "flowlet" \(.* runs spray, permutation, reps\)'
    ):
        plan.refuse_balancing(p, htsim.PRODUCER, htsim.BALANCING)
    # one kind of port per scenario
    mixed = ndp_fattree()
    mixed["flows"][1]["protocol"] = "tcp"
    with pytest.raises(Unsupported, match="transport.protocol: the scenario mixes NDP"):
        checked(mixed)


def test_ndp_output_lines_give_each_ports_trimmed_packets():
    p = checked(ndp_fattree())
    out = "\n".join(
        ["S 0 0", "S 1 0", "S 2 0", "F 0 0.0002 3 0 226", "F 1 0.00002 0 0 12", "F 2 0.00001 0 0 3"]
        + [f"L {i} 10 90000 0 0 0.001 0 {5 if i == 3 else 0}" for i in range(len(p.ports))]
        + ["T 0.001"]
    )
    flows, links, summary, _, _ = htsim.parse(p, out, 1, 0.1)
    assert [r["trimmed_packets"] for r in links[:5]] == [0, 0, 0, 5, 0]
    assert flows[0]["retransmits"] == 3 and flows[0]["packets_sent"] == 226 and summary["flows_completed"] == 3
    # other protocols' ports carry no trim count
    d = checked(dumbbell())
    _, links, _, _, _ = htsim.parse(d, "\n".join(f"L {i} 1 1 0 0 0 0 0" for i in range(len(d.ports))), 1, 0.1)
    assert "trimmed_packets" not in links[0]


#: EQDS and NSCC as htsim's drivers run them: 4150-byte packets, 4086 B of payload and a 64-byte
#: header, the last packet of a flow carrying the bytes left
EQDS = {"protocol": "eqds", "mss": "4086B", "header_bytes": "64B"}
NSCC = {"protocol": "nscc", "mss": "4086B", "header_bytes": "64B", "nscc": {"nscc_network_rtt": "14023ns"}}
EP = 4150  # an EQDS or UEC data packet on the wire


def tree(transport: dict, flows=None, **network) -> dict:
    """EQDS (spraying at the sender) or NSCC (REPS, marking at 9 packets) over trimming
    switches on a k=4 fat-tree of 100 Gbps links: a flow between pods, one within an edge
    switch, one within a pod."""
    nscc = transport["protocol"] == "nscc"
    net = {
        "topology": "fattree",
        "k": 4,
        "link_rate": "100Gbps",
        "link_delay": "1us",
        "buffer": "1MB",
        "queue": "trim",
        "trim_threshold": "42pkt" if nscc else "34pkt",
        "nic_queue": "trim",
        "load_balancing": "reps" if nscc else "permutation",
    }
    if nscc:
        net["trim_ecn_threshold"] = "9pkt"
    for k, v in network.items():
        if v is None:
            net.pop(k, None)
        else:
            net[k] = v
    return {
        "seed": 1,
        "network": net,
        "transport": transport,
        "flows": flows
        or [
            {"src": "h0", "dst": "h15", "size": "2MB"},
            {"src": "h1", "dst": "h0", "size": "300KB"},
            {"src": "h2", "dst": "h1", "size": "250KB", "start": "10us"},
        ],
    }


def test_eqds_runs_on_htsims_own_fat_tree_each_of_its_ports_named_by_the_scenarios():
    p = checked(tree(EQDS))
    text = htsim.script(p, 7)
    # the whole packet (-mtu), the seed of the switches' hash salts and CompositeQueue's coin
    assert lines(text, "packet") == [["packet", "4150"]] and lines(text, "seed") == [["seed", "7"]]
    # htsim's fat-tree of 16 hosts, 100 Gbps, 1 us per link; CompositeQueue holds 34 waiting + 1
    assert lines(text, "fattree") == [["fattree", "16", "100000000000", "1000000", str(35 * EP)]]
    # the first window (packets), 64 entropy values (main_eqds.cpp -paths), the RTO, the pull rate
    assert lines(text, "eqds") == [["eqds", "50", "64", "220000000", "0.99"]]
    # every port of the scenario is one queue of htsim's fat-tree, and the wiring is htsim's:
    # host h under ToR h/2, ToR t in pod t/2, aggregation switch a at position a mod 2 reaching
    # the cores (a mod 2) + 2 l
    rows = {int(r[1]): (r[2], int(r[3]), int(r[4])) for r in lines(text, "ftport")}
    assert sorted(rows) == list(range(len(p.ports))) == list(range(96))
    assert len(set(rows.values())) == 96
    host = {h: i for i, h in enumerate(p.hosts)}
    tor, agg = {}, {}
    for i, port in enumerate(p.ports):
        tier, a, b = rows[i]
        if tier == "ns_nlp":
            assert host[port.src] == a and b == a // 2
            tor[port.dst] = b
        elif tier == "nlp_ns":
            assert host[port.dst] == b and a == b // 2
        elif tier == "nlp_nup":
            agg.setdefault(port.dst, b)
            assert agg[port.dst] == b
    for i, port in enumerate(p.ports):
        tier, a, b = rows[i]
        if tier == "nlp_nup":
            assert a == tor[port.src] and a // 2 == b // 2  # a ToR reaches its own pod's switches
        elif tier == "nup_nc":
            assert a == agg[port.src] and b % 2 == a % 2
        elif tier == "nc_nup":
            assert b == agg[port.dst] and a % 2 == b % 2
    # flows between hosts, in bytes: the last packet carries the bytes left in both
    assert [f[1:] for f in lines(text, "flow")] == [
        ["0", "eqds", "2000000", "0", "-1", "-1", "0", "/", "15"],
        ["1", "eqds", "300000", "0", "-1", "-1", "1", "/", "0"],
        ["2", "eqds", "250000", "10000000", "-1", "-1", "2", "/", "1"],
    ]
    notes = " ".join(p.notes)
    for what in (
        "FatTreeSwitch",
        "eqds.cpp:818-841",
        "332,481 ps",
        "ceil(9n / 8)",
        "16 KB",
        "20 to 1",
        "eqds.cpp:52-68",
    ):
        assert what in notes
    assert htsim.pairs_flows(p)
    # a threshold in bytes: it and the packet in transmission
    b = checked(tree(EQDS, trim_threshold="100000B"))
    assert lines(htsim.script(b, 1), "fattree")[0][4] == str(100000 + EP)


def test_nscc_runs_on_uet_htsims_fat_tree_with_reps_an_ack_per_packet_and_marking_at_one_threshold():
    p = checked(tree(NSCC))
    text = htsim.script(p, 3)
    assert lines(text, "fattree") == [["fattree", "16", "100000000000", "1000000", str(43 * EP)]]
    # the network's round trip and the target (0.75 of it) in ps, REPS over fctlab's 128 values,
    # an ACK per packet (-sack_threshold 4000), the RTO, no base RTT from NACKs, and kmin = kmax:
    # a data packet leaving with 9 full packets queued behind it is marked, as fctlab marks one
    # arriving to 9 waiting
    assert lines(text, "uec") == [
        ["uec", "14023000", "10517250", "128", "4000", "100000000", "0", str(9 * EP - 1), str(9 * EP - 1)]
    ]
    assert all(f[2] == "nscc" for f in lines(text, "flow"))
    notes = " ".join(p.notes)
    for what in ("compositequeue.cpp:74-98", "UecMpReps", "14,022.72 ns", "-disable_base_rtt_update_on_nack"):
        assert what in notes
    # uet-htsim's calculate_rtt on this fat-tree: six links, one packet and one ACK serialized on each
    assert htsim.calculate_rtt(p) == pytest.approx(14.02272e-6, abs=1e-15)
    # a marking threshold in bytes: a packet leaving with more than B - 1 bytes behind it
    b = checked(tree(NSCC, trim_ecn_threshold="40000B"))
    assert lines(htsim.script(b, 1), "uec")[0][7:] == ["39999", "39999"]


@pytest.mark.parametrize(
    "transport, network, key",
    [
        ({**EQDS, "header_bytes": "40B"}, {}, "transport.header_bytes"),
        ({**EQDS, "whole_packets": True}, {}, "transport.whole_packets"),
        ({**EQDS, "ack_interval": 2}, {}, "transport.ack_interval"),
        (EQDS, {"load_balancing": "ecmp"}, "network.load_balancing"),
        (EQDS, {"load_balancing": "reps"}, "network.load_balancing"),
        (EQDS, {"queue": "droptail", "trim_threshold": None}, "network.queue"),
        (EQDS, {"nic_queue": "droptail"}, "network.nic_queue"),
        (EQDS, {"trim_header_bytes": "80B"}, "network.trim_header_bytes"),
        (EQDS, {"trim_ecn_threshold": "9pkt"}, "network.trim_ecn_threshold"),
        (EQDS, {"topology": "leafspine", "k": None, "spines": 2, "leaves": 4, "hosts_per_leaf": 4}, "network.topology"),
        (NSCC, {"load_balancing": "permutation"}, "network.load_balancing"),
        (NSCC, {"trim_ecn_threshold": None}, "network.trim_ecn_threshold"),
        (NSCC, {"trim_ecn_threshold": "50pkt"}, "network.trim_ecn_threshold"),
        ({**NSCC, "nscc": {}}, {}, "transport.nscc_network_rtt"),
        ({**NSCC, "whole_packets": True}, {}, "transport.whole_packets"),
    ],
)
def test_what_htsims_eqds_and_nscc_fix_is_refused_naming_the_key(transport, network, key):
    with pytest.raises(Unsupported, match=key) as e:
        checked(tree(transport, **network))
    assert "\n" not in str(e.value)


def test_the_refusals_of_eqds_and_nscc_say_what_htsim_needs():
    # uet-htsim scales NSCC by its network's round trip: the refusal gives its value here
    with pytest.raises(Unsupported, match=r'calculate_rtt, main_uec.cpp:51-60: 14022.720 ns here.*"14023ns"'):
        checked(tree({**NSCC, "nscc": {}}))
    with pytest.raises(Unsupported, match=r'network.load_balancing: \'reps\'; htsim\'s EqdsSrc .* "permutation"'):
        checked(tree(EQDS, load_balancing="reps"))
    # one protocol per scenario: EQDS with NDP, or EQDS with NSCC, are refused
    mixed = tree(EQDS)
    mixed["flows"][1]["protocol"] = "nscc"
    with pytest.raises(Unsupported, match="transport.protocol: the scenario mixes EQDS or NSCC"):
        checked(mixed)
    # EqdsSrc's settings are one for all its flows
    two = tree(EQDS)
    two["flows"][1]["eqds"] = {"eqds_initial_window": 20}
    with pytest.raises(Unsupported, match=r"flows\[1\]\.eqds: its EQDS settings differ"):
        checked(two)


def test_eqds_output_lines_give_each_ports_trims_and_each_flows_counts():
    p = checked(tree(EQDS))
    out = "\n".join(
        ["S 0 0", "S 1 0", "S 2 0.00001", "F 0 0.000178 2 0 492", "F 1 0.00003 0 0 74", "F 2 0.00004 0 1 62"]
        + [f"L {i} 10 41500 0 0 0.001 0 {7 if i == 40 else 0}" for i in range(len(p.ports))]
        + ["T 0.0002"]
    )
    flows, links, summary, _, _ = htsim.parse(p, out, 1, 0.1)
    assert [r["trimmed_packets"] for r in links[39:42]] == [0, 7, 0]
    assert flows[0]["retransmits"] == 2 and flows[0]["packets_sent"] == 492 and flows[2]["timeouts"] == 1
    assert flows[2]["fct_s"] == pytest.approx(3e-5) and summary["flows_completed"] == 3


def test_without_a_build_with_nscc_a_run_says_to_build_uet_htsim(tmp_path, monkeypatch):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path / "cache"))
    _fake_build(tmp_path / "cache", "a" * 40, "2026-01-01T00:00:00Z", (*htsim_peer.BASE_PROTOCOLS, "eqds"))
    assert htsim_peer.find(["eqds"]).commit == "a" * 40
    with pytest.raises(htsim.HtsimError) as e:
        htsim.run(checked(tree(NSCC)), 1, tmp_path / "run")
    assert str(e.value).startswith(
        "htsim is not built with nscc: fctlab peers build htsim --source https://github.com/ultraethernet/uet-htsim"
    )


def test_output_lines_become_flows_and_links_rows():
    p = checked(
        dumbbell(flows=[{"src": "s0", "dst": "r0", "size": "100KB"}, {"src": "s1", "dst": "r1", "size": "1MB"}])
    )
    out = "\n".join(
        [
            "Flow src0 finished at 1.5",  # htsim's own messages are skipped
            "S 0 0",
            "S 1 0",
            "F 0 0.0015 2 0 14",
            "A 0 12 2 0 14",
            "A 1 50 3 1 60",
        ]
        + [f"L {i} 10 90000 {1 if i == 0 else 0} 4 0.001" for i in range(len(p.ports))]
        + ["T 0.01"]
    )
    flows, links, summary, _, _ = htsim.parse(p, out, 1, 0.1)
    assert flows[0]["completed"] and flows[0]["fct_s"] == pytest.approx(0.0015)
    assert flows[0]["retransmits"] == 2 and flows[0]["bytes_delivered"] == 100_000
    assert not flows[1]["completed"] and flows[1]["timeouts"] == 1 and flows[1]["bytes_delivered"] == 50 * 8960
    assert summary["drops"] == 1 and summary["flows_completed"] == 1
    assert summary["ecn_marks"] == 4 * sum(1 for x in p.ports if x.dst in p.hosts)
    assert links[0]["utilization"] == pytest.approx(90000 * 8 / 10e9 / 0.01)


def test_without_a_built_htsim_the_crosscheck_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path / "cache"))
    assert htsim_peer.find() is None
    sc = tmp_path / "s.json"
    sc.write_text(__import__("json").dumps(dumbbell()))
    assert main(["crosscheck", str(sc), "--against", "htsim", "--out", str(tmp_path / "o"), "--seeds", "1", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fctlab crosscheck: error: htsim is not built: {htsim_peer.how_to_get()}"]
    assert main(["peers", "list"]) == 0
    assert "htsim: not built (fctlab peers build htsim --source https://github.com/Broadcom/csg-htsim" in (
        capsys.readouterr().out
    )


def test_building_from_a_directory_that_is_not_htsim_fails_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FCTLAB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "src").mkdir()
    assert main(["peers", "build", "htsim", "--source", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fctlab peers: error:")


# --- beside htsim ----------------------------------------------------------------------------


@needs_htsim
def test_one_flow_alone_completes_as_in_fctlab(tmp_path):
    sc = dumbbell(flows=[{"src": "s0", "dst": "r0", "size": "1MB"}])
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert bool(b["completed"][0]) and int(b["timeouts"][0]) == 0
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.05)
    assert (tmp_path / "seed-1" / "htsim" / "peer.json").is_file()


@needs_htsim
def test_a_burst_into_a_full_buffer_drops_as_many_packets_in_both(tmp_path):
    # 20 servers' first windows of 3 packets (60) meet a 40-packet buffer at 10 Gbps: the
    # buffer translation (waiting packets + the one in transmission) must drop the same number
    sc = dumbbell(
        network={"topology": "star", "hosts": 21, "buffer": "40pkt", "queue": "droptail"},
        transport={**TRANSPORT, "protocol": "tcp", "initial_cwnd": 3},
        flows=[{"src": f"h{i}", "dst": "h0", "size": "26880B"} for i in range(1, 21)],
    )
    for k in ("senders", "receivers", "bottleneck_rate", "bottleneck_delay", "bottleneck_buffer", "ecn_threshold"):
        sc["network"].pop(k, None)
    sc["transport"].pop("dctcp")
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    drops = {c["counter"]: c for c in cc.stats["counters"]}["drops"]
    assert drops["fctlab"][0] == drops["other"][0] > 0


@needs_htsim
def test_acks_take_bytes_in_htsims_buffers_not_packet_places(tmp_path):
    # Every host of a k=4 fat-tree sends 2 MB to another and receives 2 MB: its NIC queue holds
    # its own slow-start burst and the ACKs of the flow it receives. htsim's queues count bytes,
    # so 40-byte ACKs hardly take room; fctlab's "100pkt" counts each ACK as a packet and drops
    # more data. With the buffer given in bytes fctlab counts as htsim does.
    sc = fattree()
    sc["workloads"] = [{"kind": "permutation", "senders": "all", "sizes": "2MB"}]
    del sc["flows"]
    pk = crosscheck(sc, against="htsim", out=tmp_path / "pkt", seeds=2)
    sc["network"]["buffer"] = "900000B"
    by = crosscheck(sc, against="htsim", out=tmp_path / "bytes", seeds=2)

    def drops(cc):
        d = {c["counter"]: c for c in cc.stats["counters"]}["drops"]
        return d["fctlab"][0], d["other"][0]

    (fp, hp), (fb, hb) = drops(pk), drops(by)
    assert hp == hb  # htsim's translation of both buffers is the same byte count
    assert fp > 1.25 * hp and abs(fb / hb - 1) <= 0.25


@needs_htsim
def test_htsims_dctcp_holds_a_shorter_queue_and_marks_fewer_packets(tmp_path):
    # One DCTCP flow of 20 MB from a 10 Gbps host into a 1 Gbps bottleneck that marks at 15
    # packets: no losses in either run and the same FCT, but htsim marks as a packet leaves (the
    # echo comes a queue's drain earlier) and cuts the window every window while alpha > 0, so
    # its queue stays shorter and fewer packets are marked (this is why the set-ups' ECN marks
    # and queues are lower in htsim)
    sc = dumbbell(
        network={"senders": 1, "receivers": 1, "bottleneck_rate": "1Gbps"},
        flows=[{"src": "s0", "dst": "r0", "size": "20MB"}],
    )
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert int(a["retransmits"][0]) == int(b["retransmits"][0]) == 0
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.01)
    la = pd.read_parquet(cc.runs[0].fctlab_dir / "links.parquet")
    lb = pd.read_parquet(cc.runs[0].other_dir / "links.parquet")
    bottleneck = (la["src"] == "left") & (la["dst"] == "right")
    assert la[bottleneck]["ecn_marks"].iloc[0] > 1.5 * lb[bottleneck]["ecn_marks"].iloc[0]
    assert la[bottleneck]["mean_queue_pkts"].iloc[0] > lb[bottleneck]["mean_queue_pkts"].iloc[0]


@needs_htsim
def test_ten_flows_leave_slow_start_earlier_in_htsim(tmp_path):
    # Ten DCTCP flows start together through one 10 Gbps bottleneck: htsim's echo, leaving with
    # the packet at the head of the queue, stops their slow start a queue's drain time (15
    # packets, 108 us, several RTTs here) earlier, so its overshoot drops a third of fctlab's;
    # both then share the link alike (the FCTs agree)
    sc = dumbbell(
        network={"senders": 10, "receivers": 10, "buffer": "900000B", "bottleneck_buffer": "900000B"},
        flows=[{"src": f"s{i}", "dst": f"r{i}", "size": "5MB"} for i in range(10)],
    )
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    checks = {c["what"]: c for c in cc.stats["checks"]}
    assert checks["1-10MB median FCT"]["ok"] and checks["1-10MB mean FCT"]["ok"]
    assert checks["drops"]["fctlab"] >= 2 * checks["drops"]["other"] > 0


@needs_htsim
def test_short_flows_wait_less_behind_htsims_dctcp(tmp_path):
    # Four 20 MB DCTCP flows hold the bottleneck while 20 KB flows cross it every 0.5 ms: the
    # long flows complete alike, but htsim's shorter queue (the test above) lets the short
    # flows through faster: the mechanism of the web-search set-up's short-flow medians
    flows = [{"src": f"s{i}", "dst": f"r{i}", "size": "20MB"} for i in range(4)]
    flows += [{"src": "s4", "dst": "r4", "size": "20KB", "start": f"{2 + 0.5 * k}ms"} for k in range(40)]
    sc = dumbbell(
        network={
            "senders": 5,
            "receivers": 5,
            "buffer": "900000B",
            "bottleneck_buffer": "900000B",
            "ecn_threshold": "135000B",
        },
        flows=flows,
    )
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    checks = {c["what"]: c for c in cc.stats["checks"]}
    assert checks["10-100KB median FCT"]["ratio"] > 1.08
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    long_a, long_b = a[a["size_bytes"] > 10**7]["fct_s"].mean(), b[b["size_bytes"] > 10**7]["fct_s"].mean()
    assert long_a / long_b == pytest.approx(1.0, abs=0.05)


@needs_htsim
def test_a_flow_alone_overflows_its_nic_in_slow_start_alike(tmp_path):
    # 2 MB from h4 to h6 of a k=4 fat-tree, alone: slow start outruns the host's own 10 Gbps NIC
    # (no marking there), whose 100-packet buffer overflows near the flow's end; both lose the
    # same packets and complete at the same time. In the permutation set-up the same overflow
    # sometimes takes a flow's last packets, which only a 250 ms timeout repairs.
    sc = fattree()
    sc["network"]["buffer"] = "900000B"
    sc["network"]["ecn_threshold"] = "135000B"
    sc["flows"] = [{"src": "h4", "dst": "h6", "size": "2MB"}]
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert int(a["retransmits"][0]) == int(b["retransmits"][0]) > 0
    assert int(a["timeouts"][0]) == int(b["timeouts"][0]) == 0
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.001)
    la = pd.read_parquet(cc.runs[0].fctlab_dir / "links.parquet")
    lb = pd.read_parquet(cc.runs[0].other_dir / "links.parquet")
    nic = (la["src"] == "h4") & (la["level"] == "nic")
    assert la[nic]["drops"].iloc[0] == lb[nic]["drops"].iloc[0] == a["retransmits"][0]


@needs_htsim
def test_htsims_syn_carries_a_stale_timestamp_so_a_burst_after_a_pause_waits_longer(tmp_path):
    # The burst of the test above, twice: at 0 and again at 1 s, after the first burst's
    # timeouts (250 ms) have left the network idle. TcpPacket::new_syn_pkt (tcppacket.h) does not
    # set the SYN's timestamp, so the SYN carries the one of the last packet freed into htsim's
    # packet pool (PacketDB reuses it), sent before the pause; TcpSrc::receivePacket takes the
    # SYN-ACK's echo as the first RTT sample (SRTT = the pause, RTO = 3 x SRTT). Both bursts lose
    # the same packets in both simulators; fctlab's second burst waits 250 ms like its first,
    # htsim's waits seconds: the tcp_incast set-up's rounds after a timeout.
    sc = dumbbell(
        network={"topology": "star", "hosts": 21, "buffer": "40pkt", "queue": "droptail"},
        transport={**TRANSPORT, "protocol": "tcp", "initial_cwnd": 3},
        flows=[{"src": f"h{i}", "dst": "h0", "size": "26880B", "start": t} for t in ("0s", "1s") for i in range(1, 21)],
    )
    for k in ("senders", "receivers", "bottleneck_rate", "bottleneck_delay", "bottleneck_buffer", "ecn_threshold"):
        sc["network"].pop(k, None)
    sc["transport"].pop("dctcp")
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    first, second = a["start_s"] < 0.5, a["start_s"] > 0.5
    assert list(a["timeouts"]) == list(b["timeouts"]) and a["timeouts"][second].sum() > 0
    waited = second & (a["timeouts"] > 0)
    assert a["fct_s"][first].max() / b["fct_s"][first].max() == pytest.approx(1.0, abs=0.01)
    assert a["fct_s"][waited].max() < 0.26 and b["fct_s"][waited].min() > 1.0


def _pauses(run_dir) -> int:
    f = run_dir / "pfc.parquet"
    return int((pd.read_parquet(f)["event"] == "pause").sum()) if f.is_file() else 0


@needs_htsim
def test_a_roce_message_alone_goes_at_line_rate_in_both(tmp_path):
    # RoceSrc spaces its packets by (Packet::data_packet_size + RocePacket::ACKSIZE) x 8 / rate
    # (roce.cpp): with the payload as data_packet_size that is the wire time of its own data
    # packet, so alone it sends back to back at the NIC's rate, as fctlab's roce does: 1000
    # packets of 1064 B at 10 Gbps, 851.2 us, and one packet's way across the fat-tree
    sc = lossless()
    sc["flows"] = [{"src": "h0", "dst": "h15", "size": "1MB"}]
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.002)
    assert b["fct_s"][0] > 1000 * W * 8 / 10e9
    assert _pauses(cc.runs[0].fctlab_dir) == _pauses(cc.runs[0].other_dir) == 0


@needs_htsim
def test_a_roce_incast_pauses_alike_and_drops_nothing(tmp_path):
    # Six servers of two pods answer h0 with 200 KB each at line rate: the client's port is
    # the bottleneck, priority flow control holds the rest; both finish together, drop nothing
    # and pause the same ports about as often
    sc = lossless()
    sc["flows"] = [{"src": f"h{i}", "dst": "h0", "size": "200KB"} for i in (1, 2, 3, 4, 5, 6)]
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    r = cc.runs[0]
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    assert a["completed"].all() and b["completed"].all()
    assert a["fct_s"].max() / b["fct_s"].max() == pytest.approx(1.0, abs=0.02)
    la, lb = pd.read_parquet(r.fctlab_dir / "links.parquet"), pd.read_parquet(r.other_dir / "links.parquet")
    assert la["drops"].sum() == lb["drops"].sum() == 0
    assert _pauses(r.fctlab_dir) / _pauses(r.other_dir) == pytest.approx(1.0, abs=0.25)


@needs_htsim
def test_hpccs_telemetry_reaches_the_bottleneck_from_every_pod_in_both(tmp_path):
    # Three HPCC servers answer h0 with 200 KB each, ten rounds: from h0's own pod (paths of
    # two and four ports) and from another pod (six ports: the NIC, two edge, two aggregation
    # switches and the core). Switch ports stamp a record, hosts' NICs none, in both (htsim:
    # LosslessOutputQueue::completeService; fctlab since its NICs stopped stamping), so the five
    # records of a path between pods end with the client's port, the bottleneck, and HPCC slows
    # the servers wherever they are: each simulator pauses about as often from either pod
    # (fctlab 63 and 40 times over 2 seeds, htsim 110 and 108). When fctlab's NIC took one of
    # the five places, the bottleneck's record was left out between pods and fctlab paused 370
    # times from another pod, 67 from the same pod: the hpcc_incast set-up's pauses, 4.14x
    # htsim's then.
    counts, fct = {}, {}
    for where, servers in (("same pod", "h1..h3"), ("other pod", "h4..h6")):
        sc = lossless(HPCC)
        sc.pop("flows")
        sc["workloads"] = [
            {"kind": "incast", "client": "h0", "servers": servers, "sizes": "200KB", "rounds": 10, "round_gap": "100us"}
        ]
        cc = crosscheck(sc, against="htsim", out=tmp_path / where.replace(" ", "_"), seeds=2)
        counts[where] = [sum(_pauses(getattr(r, d)) for r in cc.runs) for d in ("fctlab_dir", "other_dir")]
        checks = {c["what"]: c for c in cc.stats["checks"]}
        fct[where] = checks["100KB-1MB median FCT"]["ratio"]
    (fa_same, hb_same), (fa_other, hb_other) = counts["same pod"], counts["other pod"]
    assert 0 < fa_other <= 1.5 * fa_same
    assert hb_other == pytest.approx(hb_same, rel=0.3)
    assert fa_other < 2 * hb_other
    assert all(r == pytest.approx(1.0, abs=0.1) for r in fct.values())


@needs_htsim
def test_htsims_hpcc_window_grows_past_the_line_rate_where_the_path_is_underused(tmp_path):
    # One HPCC flow from a 10 Gbps host through a switch to a 40 Gbps host: the only stamped
    # hop is used at a quarter of its rate, below eta. htsim's HPCCSrc takes every ACK's window
    # as the next reference (hpcc.cpp processAck: _cwnd = computeWind(..., false)), so the
    # window grows by eta / U per ACK, without a cap at the line rate; the source paces at
    # W / T and the host queue (which stamps nothing) holds most of the message. fctlab's rate
    # stays at the line rate and its NIC queue empty. Both send at the NIC's rate; fctlab's
    # packets are 42 bytes longer (its telemetry header), and its FCT longer by that.
    sc = lossless(HPCC)
    sc["network"] = {
        k: v
        for k, v in sc["network"].items()
        if k in ("link_rate", "link_delay", "buffer", "pfc", "pfc_xoff", "pfc_xon")
    }
    sc["network"].update(
        topology="custom",
        nodes=[{"name": "s0", "kind": "switch"}, {"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
        links=[{"a": "a", "b": "s0"}, {"a": "s0", "b": "b", "rate": "40Gbps"}],
    )
    sc["flows"] = [{"src": "a", "dst": "b", "size": "1MB"}]
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    r = cc.runs[0]
    la, lb = pd.read_parquet(r.fctlab_dir / "links.parquet"), pd.read_parquet(r.other_dir / "links.parquet")
    nic = (la["src"] == "a") & (la["dst"] == "s0")
    assert la[nic]["mean_queue_pkts"].iloc[0] < 1
    assert lb[nic]["mean_queue_pkts"].iloc[0] > 100
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx((W + 42) / W, rel=0.01)


def _htsim_windows(out_file) -> pd.DataFrame:
    """HPCCSrc's window after each ACK: its "CWND1|CWND2 W ACKNO A at T src HPCCsrc N" lines
    (hpcc.cpp processAck; the driver makes the sources in the order of its flows)."""
    rows = []
    for line in Path(out_file).read_text().splitlines():
        if line.startswith(("CWND1 ", "CWND2 ")):
            p = line.split()
            rows.append((float(p[5]) * 1e-6, int(p[-1]), int(p[1])))
    return pd.DataFrame(rows, columns=["time_s", "flow_id", "cwnd_bytes"])


@needs_htsim
def test_htsims_hpcc_cuts_compound_per_ack_so_an_incast_falls_back_sooner_and_pauses_less(tmp_path):
    # hpcc_incast's first round (seed 1): 15 servers answer h0 with 200 KB each, every first
    # window T x 10 Gbps = 20,000 B. While the client's port is above eta, HPCCSrc::processAck
    # cuts by eta / U from the previous ACK's window (hpcc.cpp: _cwnd = computeWind(...), the
    # reference of the next ACK), so the cuts compound ACK after ACK; fctlab cuts from a
    # reference that moves once per round trip, a round trip lengthened by the queue. The twelve
    # servers in other pods: htsim's windows fall on each of the four ACKs after the first cut,
    # to under 30% of it, and below 3,000 B within 100 us; fctlab's take 300 us and more. Both
    # pause alike in the first 300 us; after it fctlab pauses on and htsim far less.
    sc = lossless(HPCC)
    sc.pop("flows")
    sc["workloads"] = [{"kind": "incast", "client": "h0", "servers": "h1..h15", "sizes": "200KB", "rounds": 1}]
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    r = cc.runs[0]
    sc["monitor"] = {"cwnd_interval": "1us"}
    mine = __import__("fctlab").run(sc)
    assert list(mine.flows["src"]) == list(pd.read_parquet(r.other_dir / "flows.parquet")["src"])
    windows = {
        "fctlab": mine.cwnd[["time_s", "flow_id", "cwnd_bytes"]],
        "htsim": _htsim_windows(r.other_dir / "htsim.out"),
    }
    other_pods = [i for i, s in enumerate(mine.flows["src"]) if int(s[1:]) >= 4]
    assert len(other_pods) == 12
    settle = {}
    for sim, w in windows.items():
        settle[sim] = []
        for i in other_pods:
            x = w[w["flow_id"] == i].sort_values("time_s")
            cut = x[x["cwnd_bytes"] < 20_000]
            below = cut[cut["cwnd_bytes"] < 3000]
            settle[sim].append(below["time_s"].iloc[0] - cut["time_s"].iloc[0])
            if sim == "htsim":
                w5 = list(cut["cwnd_bytes"].iloc[:5])
                assert all(a > b for a, b in zip(w5, w5[1:])), w5
                assert w5[4] < 0.3 * w5[0], w5
    assert np.median(settle["htsim"]) < 100e-6 < 300e-6 < np.median(settle["fctlab"])
    pauses = {}
    for sim, d in (("fctlab", r.fctlab_dir), ("htsim", r.other_dir)):
        p = pd.read_parquet(d / "pfc.parquet")
        t = p[p["event"] == "pause"]["time_s"]
        pauses[sim] = (int((t < 300e-6).sum()), int((t >= 300e-6).sum()))
    assert pauses["fctlab"][0] == pytest.approx(pauses["htsim"][0], rel=0.25)
    assert pauses["fctlab"][1] > 3 * pauses["htsim"][1]


@needs_htsim
def test_fctlabs_hpcc_window_lets_a_part_packet_go_and_htsims_does_not(tmp_path):
    # fctlab's RDMA sender sends while the bytes in flight are below the window
    # (crates/transport/src/roce/mod.rs, window_open), so a window of W bytes lets ceil(W / mss)
    # packets out; htsim's HPCCSrc sends while the window holds the flight and one more packet
    # (hpcc.cpp doNextEvent: _cwnd >= _flightsize + _mss), floor(W / mss). A message of three
    # packets between pods with a first window of 2.5 packets (T x 10 Gbps, T = 2 us): fctlab
    # sends the three at once, htsim two and the third after the first ACK, a round trip later;
    # with a first window of three packets (T = 2.4 us) both send the three at once.
    fct = {}
    for T, ai in (("2us", "4Gbps"), ("2.4us", "3333333333bps")):
        sc = lossless({**HPCC, "hpcc": {"hpcc_base_rtt": T, "hpcc_rate_ai": ai}})
        sc["flows"] = [{"src": "h15", "dst": "h0", "size": "3KB"}]
        cc = crosscheck(sc, against="htsim", out=tmp_path / T, seeds=1)
        r = cc.runs[0]
        a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
        fct[T] = (a["fct_s"][0], b["fct_s"][0])
    assert fct["2.4us"][0] / fct["2.4us"][1] == pytest.approx(1.0, abs=0.05)
    assert fct["2us"][0] == pytest.approx(fct["2.4us"][0], rel=0.01)
    assert fct["2us"][1] > 1.6 * fct["2us"][0]


@needs_uet_htsim
def test_a_short_dcqcn_message_alone_goes_at_line_rate_in_uet_htsim_as_in_fctlab(tmp_path):
    # Alone nothing marks, so neither DCQCN sends a CNP: both send at the NIC's rate. uet-htsim's
    # RoceSrc counts its sequence numbers in packets; the driver's flow size, (packets - 1) x
    # mss + 1 bytes, sends exactly the message's 40 packets and ends it at the last one's ACK.
    # 40 packets take 34 us, less than DCQCNSrc's period (55 us), after which its events
    # multiply (the test below).
    sc = dcqcn_setup()
    sc["flows"] = [{"src": "h0", "dst": "h15", "size": "40KB"}]
    res = __import__("fctlab").run(sc)
    flows, _, _, _, pfc = htsim.run(plan.load(sc), 1, tmp_path, binary=str(UET.binary))
    assert flows[0]["completed"] and flows[0]["packets_sent"] == 40 and flows[0]["retransmits"] == 0
    assert res.flows["fct_s"][0] / flows[0]["fct_s"] == pytest.approx(1.0, abs=0.005)
    assert not pfc


@needs_uet_htsim
def test_uet_htsims_dcqcn_events_multiply_every_period_even_alone(tmp_path):
    # One DCQCN message of 1 MB alone, nothing marked, no CNP. DCQCNSrc::doNextEvent
    # (dcqcn.cpp) paces its packets (RoceSrc::doNextEvent, which schedules the next packet's
    # event) and runs its timers: once a period (55 us) has passed since the flow started or
    # last got a CNP (_last_alpha_update moves only on a CNP), every call decays the shared
    # alpha and schedules one more call a period later, which paces again. So the source's
    # events multiply every period while it sends at line rate, 59 packets per 50 us: a 1 MB
    # message (851 us) does not reach its end. htsim prints one "Adding" line per call.
    events, sent = {}, {}
    for stop in (100, 150, 200, 250):
        sc = dcqcn_setup()
        sc["flows"] = [{"src": "h0", "dst": "h15", "size": "1MB"}]
        sc["stop_time"] = f"{stop}us"
        d = tmp_path / str(stop)
        flows, *_ = htsim.run(plan.load(sc), 1, d, binary=str(UET.binary))
        events[stop] = (d / "htsim.out").read_text().count("\nAdding ")
        sent[stop] = flows[0]["packets_sent"]
    assert events[100] == sent[100] == 118  # one call per packet until then
    per = {b: events[b] - events[a] for a, b in ((100, 150), (150, 200), (200, 250))}
    assert per[200] > 10 * per[150] > 100 * (sent[150] - sent[100])
    assert per[250] > 10 * per[200]
    assert sent[250] - sent[200] == pytest.approx(59, abs=1)


@needs_ndp_htsim
def test_an_ndp_flow_alone_goes_at_the_pull_rate_in_both(tmp_path):
    # One 2 MB NDP flow between pods: its first window (30 packets) covers the pull loop (a
    # 9064-byte packet over six links and a 64-byte ACK back, 16.4 us: 23 packets at 100 Gbps),
    # so pulls clock it at 99% of the link in both; with 20 packets it waits for its pulls at
    # every round trip, alike in both
    for iw, fct in ((30, 177e-6), (20, 198e-6)):
        sc = ndp_fattree(
            flows=[{"src": "h0", "dst": "h15", "size": "2MB"}], transport={"ndp": {"ndp_initial_window": iw}}
        )
        cc = crosscheck(sc, against="htsim", out=tmp_path / str(iw), seeds=1)
        a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
        b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
        assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.003)
        assert b["fct_s"][0] == pytest.approx(fct, rel=0.01)
        assert int(b["packets_sent"][0]) == 223 and int(b["retransmits"][0]) == 0


@needs_ndp_htsim
def test_an_ndp_incast_trims_and_ends_alike_in_both(tmp_path):
    # Fifteen servers answer h0 with 450 KB (50 packets) each: their first windows (450
    # packets) meet at h0's edge port and, from the other pods, at the aggregation ports on
    # the way; both trim about as many packets, resend each once, drop nothing and end within
    # a few percent
    sc = ndp_fattree(flows=[{"src": f"h{i}", "dst": "h0", "size": "450KB"} for i in range(1, 16)])
    cc = crosscheck(sc, against="htsim", out=tmp_path, seeds=1)
    r = cc.runs[0]
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    la, lb = pd.read_parquet(r.fctlab_dir / "links.parquet"), pd.read_parquet(r.other_dir / "links.parquet")
    assert a["completed"].all() and b["completed"].all()
    assert la["drops"].sum() == lb["drops"].sum() == 0
    ta, tb = la["trimmed_packets"].sum(), lb["trimmed_packets"].sum()
    assert tb > 300 and ta / tb == pytest.approx(1.0, abs=0.05)
    assert a["retransmits"].sum() == ta and b["retransmits"].sum() == tb
    assert a["fct_s"].mean() / b["fct_s"].mean() == pytest.approx(1.0, abs=0.03)
    assert a["fct_s"].max() / b["fct_s"].max() == pytest.approx(1.0, abs=0.03)


@needs_ndp_htsim
def test_switches_spraying_at_random_queue_and_trim_where_htsims_sources_permutation_does_not(tmp_path):
    # A permutation of 2 MB flows on the k=4 fat-tree: every host sends and receives at line
    # rate, so the core carries the full bisection. htsim's NdpSrc sends each flow's packets
    # over its paths in turn (a shuffled list, shuffled again after each pass): every path
    # gets its share of every flow, and queues stay short. fctlab's switches draw each next
    # hop at random: the ports' loads wander, queues grow, the pull loop lengthens and ports
    # trim. With nothing trimmed (a threshold of 100 packets) fctlab's flows still take longer:
    # the queues, not the resent packets, make the difference. fctlab's senders spraying over
    # their paths in turn (load_balancing = "permutation") trim nothing and end as htsim's
    rng = random.Random(1)
    perm = list(range(16))
    while any(i == j for i, j in enumerate(perm)):
        rng.shuffle(perm)
    flows = [{"src": f"h{i}", "dst": f"h{j}", "size": "2MB"} for i, j in enumerate(perm)]
    for threshold in ("8pkt", "100pkt"):
        cc = crosscheck(
            ndp_fattree(flows=flows, trim_threshold=threshold), against="htsim", out=tmp_path / threshold, seeds=1
        )
        r = cc.runs[0]
        a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
        ta = pd.read_parquet(r.fctlab_dir / "links.parquet")["trimmed_packets"].sum()
        tb = pd.read_parquet(r.other_dir / "links.parquet")["trimmed_packets"].sum()
        if threshold == "8pkt":
            assert ta >= 20 and tb <= 2
        else:
            assert ta == tb == 0
        assert 1.03 < a["fct_s"].mean() / b["fct_s"].mean() < 1.15
    cc = crosscheck(
        ndp_fattree(flows=flows, load_balancing="permutation"), against="htsim", out=tmp_path / "sender", seeds=1
    )
    r = cc.runs[0]
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    assert pd.read_parquet(r.fctlab_dir / "links.parquet")["trimmed_packets"].sum() <= 2
    assert a["fct_s"].mean() / b["fct_s"].mean() == pytest.approx(1.0, abs=0.01)


def _permutation(n: int, seed: int, size: str) -> list:
    rng = random.Random(seed)
    perm = list(range(n))
    while any(i == j for i, j in enumerate(perm)):
        rng.shuffle(perm)
    return [{"src": f"h{i}", "dst": f"h{j}", "size": size} for i, j in enumerate(perm)]


def _uplink_spread(links: pd.DataFrame) -> float:
    """The coefficient of variation of the bytes the ToRs' uplinks carried."""
    up = links[links["src"].str.startswith("edge") & links["dst"].str.startswith("agg")]
    return float(up["tx_bytes"].std() / up["tx_bytes"].mean())


def test_eqds_over_switch_hashed_entropy_values_loads_ports_unevenly_and_takes_longer():
    # Shown in fctlab alone: one permutation of 2 MB EQDS flows on the k=8 fat-tree. Spraying
    # at the sender over every path in turn (load_balancing = "permutation") gives every port
    # an even share of each flow; entropy values hashed by the switches ("reps", as htsim's
    # EqdsSrc's are) leave some ports more of a flow than others, queues grow there, and the
    # flows take about 5% longer: the difference of eqds_permutation from htsim
    # (docs/crosscheck_htsim.md, "EQDS")
    out = {}
    for lb in ("permutation", "reps"):
        sc = tree(EQDS, flows=_permutation(128, 1, "2MB"), k=8, load_balancing=lb)
        r = __import__("fctlab").run(sc)
        out[lb] = (r.flows["fct_s"].mean(), _uplink_spread(r.links))
    assert out["reps"][0] > 1.03 * out["permutation"][0]
    assert out["reps"][1] > 1.2 * out["permutation"][1]


@needs_eqds_htsim
def test_an_eqds_flow_alone_goes_at_the_pull_rate_in_both(tmp_path):
    # One 2 MB flow between pods: a first window of 50 packets, the rest on credit. htsim's
    # EqdsNIC asks its source for each packet as the link frees, and fctlab's sender hands its
    # NIC one packet per transmission time: both stop speculating at their first ACK, a round
    # trip (about 40 packet times) in, and the rest of the first window waits for credit. What is
    # left is the credit's rate: htsim's pacer grants 4096 B per 332,481 ps, fctlab's one
    # 4150-byte packet per 336 ns, 0.26% faster, so fctlab's flow ends a little sooner, by
    # less than that; with fctlab's pacer slowed to htsim's rate (337 ns per pull) it ends
    # with htsim's
    flows = [{"src": "h0", "dst": "h15", "size": "2MB"}]
    cc = crosscheck(tree(EQDS, flows=flows), against="htsim", out=tmp_path)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert int(a["packets_sent"][0]) == int(b["packets_sent"][0]) == 490
    assert int(b["retransmits"][0]) == 0 and int(b["timeouts"][0]) == 0
    assert int(a["retransmits"][0]) == 0 and int(a["timeouts"][0]) == 0
    assert b["fct_s"][0] == pytest.approx(177.8e-6, rel=0.002)
    credit = (4096 / 332.481) / (EP / 336.0)  # htsim's credit rate / fctlab's, 0.9974
    assert credit < a["fct_s"][0] / b["fct_s"][0] < 0.9995
    slow = __import__("fctlab").run(tree({**EQDS, "eqds": {"eqds_pull_rate": 0.98556}}, flows=flows))
    assert slow.flows["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.0015)


@needs_nscc_htsim
def test_an_nscc_flow_alone_completes_alike_in_both(tmp_path):
    # One 2 MB flow between pods: a window of 1.5 BDPs, nothing queued, nothing marked; both
    # send 490 packets and end at 176.2 us (uet-htsim's README: 176.2 us for 2 MB)
    cc = crosscheck(tree(NSCC, flows=[{"src": "h0", "dst": "h15", "size": "2MB"}]), against="htsim", out=tmp_path)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert int(a["packets_sent"][0]) == int(b["packets_sent"][0]) == 490
    assert b["fct_s"][0] == pytest.approx(176.2e-6, rel=0.002)
    assert a["fct_s"][0] / b["fct_s"][0] == pytest.approx(1.0, abs=0.002)


@needs_eqds_htsim
def test_eqds_stops_speculating_mid_window_in_both_so_the_near_server_waits_behind_retransmissions(tmp_path):
    # Fifteen servers answer h0 with 450 KB each on the k=4 fat-tree. In both simulators a
    # source hands its NIC one packet at a time and stops speculating at its first ACK: h1, on
    # h0's edge switch, hears back after a few packets and sends no more of its first window,
    # so few of its packets are trimmed; h2 and h3, in h0's pod, hear back later, and the
    # servers of other pods later still, after most of their windows. Their trimmed packets
    # are owed retransmission pulls, which h0's pacer serves first: h1 waits, and ends after
    # every server of another pod, in both
    flows = [{"src": f"h{i}", "dst": "h0", "size": "450KB"} for i in range(1, 16)]
    cc = crosscheck(tree(EQDS, flows=flows), against="htsim", out=tmp_path)
    r = cc.runs[0]
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    for f in (a, b):
        f["pod"] = f["src"].str[1:].astype(int) // 4
        far, pod = f[f["pod"] > 0], f[f["src"].isin(["h2", "h3"])]
        h1 = f[f["src"] == "h1"].iloc[0]
        # the farther the server, the more of its first window it sends and has trimmed
        assert h1["retransmits"] < 0.3 * far["retransmits"].mean()
        assert h1["retransmits"] < pod["retransmits"].min() and pod["retransmits"].max() < far["retransmits"].min()
        assert h1["fct_s"] > far["fct_s"].max()
    # the same packets resent, and the flows end alike: the client's link is the bottleneck in both
    assert a["retransmits"].sum() / b["retransmits"].sum() == pytest.approx(1.0, abs=0.05)
    assert a["fct_s"].mean() / b["fct_s"].mean() == pytest.approx(1.0, abs=0.02)
    assert a["fct_s"].max() / b["fct_s"].max() == pytest.approx(1.0, abs=0.01)


@needs_eqds_htsim
def test_htsims_eqds_hashes_its_entropy_values_so_its_ports_carry_uneven_loads_and_trim(tmp_path):
    # One permutation of 2 MB flows on the k=8 fat-tree. htsim's switches hash each flow's 64
    # entropy values onto their next hops: the ToRs' uplinks carry uneven shares, queue, and
    # trim; fctlab's senders spread every flow evenly and trim nothing, and end sooner
    cc = crosscheck(tree(EQDS, flows=_permutation(128, 1, "2MB"), k=8), against="htsim", out=tmp_path)
    r = cc.runs[0]
    la, lb = pd.read_parquet(r.fctlab_dir / "links.parquet"), pd.read_parquet(r.other_dir / "links.parquet")
    a, b = pd.read_parquet(r.fctlab_dir / "flows.parquet"), pd.read_parquet(r.other_dir / "flows.parquet")
    up = lb["src"].str.startswith("edge") & lb["dst"].str.startswith("agg")
    assert la["trimmed_packets"].sum() == 0
    assert lb["trimmed_packets"].sum() > 500 and lb[up]["trimmed_packets"].sum() > 0.5 * lb["trimmed_packets"].sum()
    assert _uplink_spread(lb) > 1.15 * _uplink_spread(la)
    assert 0.9 < a["fct_s"].mean() / b["fct_s"].mean() < 0.97


@pytest.mark.parametrize("name", ["ndp_permutation", "eqds_incast", "nscc_incast"])
@pytest.mark.parametrize("key", ["queue", "nic_queue"])
def test_a_trimming_transports_set_up_refuses_a_port_that_does_not_trim(name, key):
    """htsim runs NDP, EQDS and NSCC on trimming switches and NICs that keep their bands: a
    port with another discipline is refused naming its key and what htsim runs there."""
    f = DCQCN_SETUPS.parent / f"{name}.toml"
    htsim.check(plan.load(f))  # as stored: accepted
    where = "FairPriorityQueue" if key == "nic_queue" else "CompositeQueue"
    with pytest.raises(Unsupported, match=rf"network\.{key}: 'droptail'; with {name.split('_')[0].upper()} .*{where}"):
        # (the switches' trimming keys go with their trimming queue)
        trim_keys = (
            [] if key == "nic_queue" else [k for k in tomllib.loads(f.read_text())["network"] if k.startswith("trim_")]
        )
        htsim.check(plan.load(f, [f'network.{key}="droptail"'], [f"network.{k}" for k in trim_keys]))
