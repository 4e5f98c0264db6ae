"""PIAS on the namespace testbed: strict-priority ports (HTB bands on DSCP, the BPF marker
keeping their shared buffer), the senders' BPF tagger, and the simulator and the kernel on
one scenario (docs/testbed.md, "PIAS"). The plan and command tests need no root; the run
needs root, network namespaces and BPF, and skips saying which is missing."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import fctlab
from fctlab import kernel as K
from fctlab.testbed import priority
from fctlab.testbed import netns
from fctlab.testbed.netns import check_machine, list_namespaces
from fctlab.testbed.pias import PARAMS_FORMAT, pack
from fctlab.testbed.programs import pias_thresholds, set_bands
from fctlab.testbed.scenario import load_plan

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "testbed_pias.toml"
MSS = 1448  # the kernel's segment payload on a 1500-byte MTU with timestamps


def _need_testbed_bpf():
    probs = check_machine() if os.geteuid() == 0 else ["needs root (network namespaces)"]
    if probs:
        pytest.skip("testbed unavailable: " + "; ".join(probs))
    why = K.bpf_unavailable()
    if why:
        pytest.skip(f"PIAS on the testbed needs BPF (struct_ops DCTCP, tc programs): {why}")


def test_plan_of_the_pias_scenario_without_root():
    plan = load_plan(SCENARIO)
    assert (plan.bands, plan.nic_bands, str(plan.ecn_threshold)) == (4, 1, "20pkt")
    assert pias_thresholds(plan) == [50_000, 200_000, 1_000_000]
    assert {f.protocol for f in plan.flows} == {"pias"} and all(f.ecn for f in plan.flows)


def test_flows_of_other_protocols_take_the_band_of_their_tag(tmp_path):
    """As the simulator's priority port: the first of `priority_tags` is band 0, and any other
    tag the last band; the band is the sockets' DSCP."""
    p = tmp_path / "tags.toml"
    p.write_text(
        'name = "tags"\nstop_time = "1s"\n[network]\ntopology = "star"\nhosts = 3\nlink_rate = "100Mbps"\n'
        'queue = "priority"\npriority_tags = ["query", "bulk"]\npriority_bands = 3\n'
        '[[flows]]\nsrc = "h1"\ndst = "h0"\nsize = "10KB"\ntag = "query"\n'
        '[[flows]]\nsrc = "h2"\ndst = "h0"\nsize = "10KB"\ntag = "bulk"\n'
        '[[flows]]\nsrc = "h2"\ndst = "h0"\nsize = "10KB"\n'
    )
    plan = load_plan(p)
    set_bands(plan)
    assert [plan.sockopts[f.flow_id].tos >> 2 for f in plan.flows] == [0, 1, 2]
    assert pias_thresholds(plan) is None


@pytest.mark.parametrize(
    "extra, message",
    [
        ("priority_pushout = true", "priority_pushout"),
        ('priority_ecn_threshold = "20pkt"', "per-band ECN marking"),
        ('priority_band_buffer = "20pkt"', "priority_band_buffer"),
    ],
)
def test_priority_ports_the_testbed_cannot_build_are_refused(tmp_path, extra, message):
    text = SCENARIO.read_text().replace("priority_ecn_per_port = true", "")
    text = text.replace('priority_ecn_threshold = "20pkt"', extra)
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(netns.TestbedError, match=message):
        load_plan(tmp_path / "s.toml")


def test_a_host_sending_pias_and_other_flows_is_refused(tmp_path):
    text = SCENARIO.read_text() + '\n[[flows]]\nsrc = "h3"\ndst = "h0"\nsize = "1MB"\nprotocol = "dctcp"\n'
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(netns.TestbedError, match=r"host h3 sends PIAS flows and a dctcp flow"):
        pias_thresholds(load_plan(tmp_path / "s.toml"))


def test_priority_port_commands_and_tagger_parameters():
    """The HTB tree serves band b at `prio` b, and DSCP past the last band goes to the last
    band (the simulator clamps it); the tagger's .rodata layout matches the C struct."""
    cmds = [" ".join(c) for c in priority.commands("p1", 100e6, 300_000, 3, 12_500, 1514)]
    leaves = [c for c in cmds if c.startswith("class add") and "parent 1:1 " in c]
    assert [c.split(" prio ")[1].split()[0] for c in leaves] == ["0", "1", "2"]
    flow_of = {c.split("dsfield ")[1].split()[0]: c.split("flowid ")[1] for c in cmds if "dsfield" in c}
    assert flow_of["0x04"] == "1:11" and flow_of["0x08"] == "1:12" and flow_of["0x1c"] == "1:12"
    assert "default 10" in cmds[0]
    blob = pack([50_000, 200_000])
    assert len(blob) == struct.calcsize(PARAMS_FORMAT) == 64
    assert struct.unpack(PARAMS_FORMAT, blob)[:4] == (2, 0, 50_000, 200_000)
    with pytest.raises(netns.TestbedError, match="must rise"):
        pack([200_000, 50_000])


@pytest.mark.wallclock
def test_pias_on_the_testbed_matches_the_simulator_for_small_flows(tmp_path):
    """testbed_pias.toml (4 s, 101 small flows; shorter runs spread too much for a 20% check):
    the small flows' median FCT on the kernel is within 20% of the simulator's, and well below
    the simulator's DCTCP with every flow in one band (where small flows wait behind the long
    flows' queue). The tagger demotes the long flows at each threshold: their hosts' segments
    per band match the bytes between the thresholds."""
    _need_testbed_bpf()
    # `fctlab testbed run` in a process of its own, as a user runs it: the senders and
    # receivers are threads of the running interpreter, and this test process, with the whole
    # suite's objects behind it, delayed them by a few tenths of a millisecond
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.testbed", "run", str(SCENARIO), "--out", str(tmp_path / "kernel")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "kernel" / "summary.json").read_text())
    sim = fctlab.run(SCENARIO).flows
    fifo = fctlab.run(SCENARIO, set=["transport.protocol=dctcp"]).flows
    kernel = pq.read_table(tmp_path / "kernel" / "flows.parquet").to_pandas()

    def small_median(flows) -> float:
        small = flows[flows["tag"] == "small"]
        assert small["completed"].all(), small[~small["completed"]]
        return float(small["fct_s"].median())

    k, m, d = small_median(kernel), small_median(sim), small_median(fifo)
    tagged = s["pias_tagged"]
    print(
        f"small-flow median FCT: kernel PIAS {k * 1e3:.2f} ms, simulator PIAS {m * 1e3:.2f} ms, simulator DCTCP {d * 1e3:.2f} ms"
    )
    print(f"tagged segments per host: {tagged}; drops {s['drops']}, marks {s['ecn_marks']}")
    assert abs(k - m) <= 0.2 * m, (k, m)
    assert k < 0.5 * d, (k, d)
    assert s["ecn_marks"] > 0
    for h in ("h1", "h2"):  # long flows: 50 KB in band 0, 150 KB in band 1, 800 KB in band 2, the rest in 3
        t = tagged[h]  # (a retransmission counts again, in the band of the bytes it carries)
        for band, nbytes in ((0, 50_000), (1, 150_000), (2, 800_000)):
            assert nbytes // MSS <= t[f"band{band}"] <= 1.5 * nbytes / MSS, (band, t)
        assert t["band3"] > 10 * t["band2"], t
    for h in ("h3", "h4"):  # small flows (2-60 KB): band 0, and band 1 past 50 KB
        t = tagged[h]
        assert t["band0"] > 5 * t["band1"] and t["band2"] == t["band3"] == 0, t
    assert list_namespaces(f"fctlab-{os.getpid()}-") == []
