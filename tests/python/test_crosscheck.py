"""fctlab crosscheck --against ns2: the translation (without ns), and runs beside ns-2.35 itself
(skipped, saying why, where `ns` is not installed: scripts/setup.sh installs Debian's ns2)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from fctlab.cli import main
from fctlab.crosscheck import crosscheck, ns2, plan
from fctlab.crosscheck.plan import Unsupported

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "scenarios" / "crosscheck"

needs_ns = pytest.mark.skipif(ns2.find_ns() is None, reason="ns-2.35's `ns` is not installed (Debian: apt-get install ns2; make test installs it as root)")


def star(**extra) -> dict:
    sc = {"seed": 1, "network": {"topology": "star", "hosts": 3, "link_rate": "1Gbps", "link_delay": "50us", "buffer": "100pkt"},
          "transport": {"profile": "ns2", "sack": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
          "flows": [{"src": "h1", "dst": "h0", "size": "100KB"}]}
    for table, values in extra.items():
        if isinstance(values, dict):
            sc.setdefault(table, {}).update(values)
        else:
            sc[table] = values
    return sc


def tcl_of(sc: dict) -> str:
    p = plan.load(sc)
    ns2.check(p)
    return ns2.script(p, 1)


# --- the translation -------------------------------------------------------------------------

def test_every_link_direction_is_a_port_with_the_limit_of_its_queue():
    tcl = tcl_of(star())
    # 3 host links, 2 directions each
    assert tcl.count("simplex-link") == 6
    # DropTail holds limit - 1 waiting packets (drop-tail.cc): 100 waiting need 101
    assert "$ns queue-limit $n(sw0) $n(h0) 101" in tcl
    red = tcl_of(star(network={"queue": "red"}))
    # RED drops at length >= limit (red.cc): 100 waiting need 100; NICs stay DropTail
    assert "$ns queue-limit $n(sw0) $n(h0) 100" in red
    assert "$ns simplex-link $n(h0) $n(sw0) 1000000000 5e-05 DropTail" in red
    assert "$ns simplex-link $n(sw0) $n(h0) 1000000000 5e-05 RED" in red


def test_tcp_settings_follow_the_resolved_profile():
    tcl = tcl_of(star(transport={"min_rto": "10ms", "initial_rto": "3s"}))
    for line in ("Agent/TCP set packetSize_ 1000", "Agent/TCP set window_ 1000", "Agent/TCP set minrto_ 0.01",
                 "Agent/TCP set rtxcur_init_ 3", "Agent/TCP set syn_ true", "Agent/TCP set tcpTick_ 0.01",
                 "new Agent/TCP/Sack1", "new Agent/TCPSink/Sack1"):
        assert line in tcl, line
    newreno = tcl_of(star(transport={"sack": False, "delayed_ack": True}))
    assert "new Agent/TCP/Newreno" in newreno and "new Agent/TCPSink/DelAck" in newreno


def test_atcp_weight_is_increase_num():
    sc = star(flows=[{"src": "h1", "dst": "h0", "protocol": "atcp", "weight_function": "fixed", "weight": 4}])
    sc["stop_time"] = "10ms"
    assert "flow 0 h1 h0 -1 0 4" in tcl_of(sc)


@pytest.mark.parametrize("change, key", [
    ({"transport": {"protocol": "dctcp"}}, "flows[0].protocol"),
    ({"transport": {"profile": "linux"}}, "transport.tail_loss_probe"),
    ({"transport": {"profile": "linux", "tail_loss_probe": False}}, "transport.cwr"),
    ({"transport": {"scheduler": "srpt"}}, "transport.scheduler"),
    ({"transport": {"initial_cwnd": 10}}, "transport.initial_cwnd"),
    ({"network": {"topology": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "hosts": None}}, "network.topology"),
])
def test_what_ns2_cannot_run_is_an_error_naming_the_key(change, key):
    sc = star(**change)
    sc["network"] = {k: v for k, v in sc["network"].items() if v is not None}
    if sc["network"]["topology"] == "leafspine":
        sc["flows"] = [{"src": "h0", "dst": "h3", "size": "10KB"}]
    with pytest.raises(Unsupported, match=key.replace("[", r"\[").replace("]", r"\]")):
        ns2.check(plan.load(sc))


def test_step_weight_that_changes_during_a_flow_is_an_error():
    sc = star(flows=[{"src": "h1", "dst": "h0", "size": "20MB", "protocol": "atcp"}])
    with pytest.raises(Unsupported, match=r"flows\[0\].weight_function"):
        ns2.check(plan.load(sc))


def test_groups_wait_by_number_whatever_their_names():
    sc = star(flows=[{"src": "h1", "dst": "h0", "size": "10KB", "group": "a {b} $c"},
                     {"src": "h2", "dst": "h0", "size": "10KB", "after": "a {b} $c", "start": "1ms"}])
    tcl = tcl_of(sc)
    assert "set groupleft(0) 1" in tcl and "set groupof(0) 0" in tcl and "set waiters(0) {{1 0.001}}" in tcl
    assert '"start_flow 1"' not in tcl  # flow 1 starts from flow 0's completion only


# --- beside ns-2.35 --------------------------------------------------------------------------

@needs_ns
def test_a_lone_flow_completes_at_the_same_time_in_both(tmp_path):
    """No loss, no competition: handshake, slow start from 2 segments, store-and-forward on
    three hops, ACK per packet. Both simulators must agree to the nanosecond-rounding."""
    cc = crosscheck(star(), against="ns2", out=tmp_path, seeds=1)
    a = pd.read_parquet(cc.runs[0].fctlab_dir / "flows.parquet")
    b = pd.read_parquet(cc.runs[0].other_dir / "flows.parquet")
    assert a.loc[0, "completed"] and b.loc[0, "completed"]
    assert b.loc[0, "fct_s"] == pytest.approx(a.loc[0, "fct_s"], rel=1e-6)
    assert b.loc[0, "timeouts"] == a.loc[0, "timeouts"] == 0


@needs_ns
def test_cli_writes_both_runs_and_the_report(tmp_path, capsys):
    out = tmp_path / "xc"
    rc = main(["crosscheck", str(SUITE / "lossy_bottleneck.toml"), "--against", "ns2", "--out", str(out), "--seeds", "2", "-q"])
    assert rc == 0, capsys.readouterr().err
    for seed in (1, 2):
        for sim in ("fctlab", "ns2"):
            d = out / f"seed-{seed}" / sim
            assert (d / "flows.parquet").exists() and (d / "links.parquet").exists() and (d / "summary.json").exists()
        assert (out / f"seed-{seed}" / "ns2" / "run.tcl").exists()
    stats = json.loads((out / "crosscheck.json").read_text())
    assert stats["seeds"] == [1, 2] and stats["checks"]
    report = (out / "report.md").read_text()
    assert "fctlab crosscheck" in report and "| drops |" in report
    printed = capsys.readouterr().out
    assert "figures within tolerance over 2 seeds" in printed
    # ns-2's run directory is a run directory: `fctlab compare` reads it
    assert main(["compare", str(out / "seed-1" / "fctlab"), str(out / "seed-1" / "ns2")]) == 0


def test_cli_errors_are_one_line(tmp_path, capsys):
    sc = tmp_path / "dctcp.toml"
    sc.write_text('[network]\ntopology = "star"\nhosts = 2\n[transport]\nprofile = "ns2"\nprotocol = "dctcp"\n'
                  '[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "10KB"\n')
    rc = main(["crosscheck", str(sc), "--against", "ns2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "flows[0].protocol" in err and "dctcp" in err
    assert main(["crosscheck", str(sc), "--against", "ns3", "--out", str(tmp_path / "o")]) == 2


def test_a_missing_ns_binary_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FCTLAB_NS", str(tmp_path / "no-such-ns"))
    rc = main(["crosscheck", str(SUITE / "lossy_bottleneck.toml"), "--against", "ns2", "--out", str(tmp_path / "o"), "--seeds", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "ns-2.35's `ns` was not found" in err
