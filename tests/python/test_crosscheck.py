"""fctlab crosscheck --against ns2: the translation (without ns), and runs beside ns-2.35 itself
(skipped, saying why, where `ns` is not installed: scripts/setup.sh installs Debian's ns2)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fctlab.cli import main
from fctlab import plan
from fctlab.crosscheck import crosscheck, ns2
from fctlab.plan import Unsupported
from scenario_dicts import merged

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "scenarios" / "crosscheck" / "ns2"

needs_ns = pytest.mark.skipif(
    ns2.find_ns() is None,
    reason="ns-2.35's `ns` is not installed (Debian: apt-get install ns2; make test installs it as root)",
)


def star(**extra) -> dict:
    sc = {
        "seed": 1,
        "network": {"topology": "star", "hosts": 3, "link_rate": "1Gbps", "link_delay": "50us", "buffer": "100pkt"},
        "transport": {"profile": "ns2", "sack": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
        "flows": [{"src": "h1", "dst": "h0", "size": "100KB"}],
    }
    return merged(sc, extra)


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
    for line in (
        "Agent/TCP set packetSize_ 1000",
        "Agent/TCP set window_ 1000",
        "Agent/TCP set minrto_ 0.01",
        "Agent/TCP set rtxcur_init_ 3",
        "Agent/TCP set syn_ true",
        "Agent/TCP set tcpTick_ 0.01",
        "new Agent/TCP/Sack1",
        "new Agent/TCPSink/Sack1",
    ):
        assert line in tcl, line
    newreno = tcl_of(star(transport={"sack": False, "delayed_ack": True}))
    assert "new Agent/TCP/Newreno" in newreno and "new Agent/TCPSink/DelAck" in newreno


def test_atcp_weight_is_increase_num():
    sc = star(flows=[{"src": "h1", "dst": "h0", "protocol": "atcp", "atcp": {"weight_function": "fixed", "weight": 4}}])
    sc["stop_time"] = "10ms"
    assert "flow 0 h1 h0 -1 0 4" in tcl_of(sc)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"transport": {"protocol": "dctcp"}}, "flows[0].protocol"),
        ({"transport": {"profile": "linux"}}, "transport.tail_loss_probe"),
        ({"transport": {"profile": "linux", "tail_loss_probe": False}}, "transport.cwr"),
        ({"transport": {"scheduler": "srpt"}}, "transport.scheduler"),
        ({"transport": {"initial_cwnd": 10}}, "transport.initial_cwnd"),
        (
            {"network": {"topology": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "hosts": None}},
            "network.topology",
        ),
    ],
)
def test_what_ns2_cannot_run_is_an_error_naming_the_key(change, key):
    sc = star(**change)
    sc["network"] = {k: v for k, v in sc["network"].items() if v is not None}
    if sc["network"]["topology"] == "leafspine":
        sc["flows"] = [{"src": "h0", "dst": "h3", "size": "10KB"}]
    with pytest.raises(Unsupported, match=key.replace("[", r"\[").replace("]", r"\]")):
        ns2.check(plan.load(sc))


def test_what_ns2_runs_its_own_way_is_listed_in_the_report():
    p = plan.load(star(transport={"sack_recovery": "rfc6675", "window_model": "bytes", "whole_packets": False}))
    ns2.check(p)
    assert [n.split(" = ")[0] for n in p.notes] == [
        "transport.sack_recovery",
        "transport.window_model",
        "transport.whole_packets",
    ]
    ecn = plan.load(star(network={"queue": "ecn", "ecn_threshold": "20pkt"}))
    ns2.check(ecn)
    assert len(ecn.notes) == 1 and "ECN threshold" in ecn.notes[0]


def test_a_weight_function_that_varies_continuously_is_an_error():
    sc = star(
        transport={"atcp": {"weight_function": "linear", "threshold_low": "1MB", "threshold_high": "2MB"}},
        flows=[{"src": "h1", "dst": "h0", "size": "3MB", "protocol": "atcp"}],
    )
    with pytest.raises(Unsupported, match=r"flows\[0\].weight_function"):
        ns2.check(plan.load(sc))


def test_ecn_ports_run_as_droptail_when_no_flow_is_ecn_capable():
    """fctlab's threshold marker queues packets that are not ECN-capable up to the buffer's
    end; ns-2's RED-based marker would drop them above K, so such ports are DropTail there."""
    ecn = {"queue": "ecn", "ecn_threshold": "20pkt"}
    tcl = tcl_of(star(network=ecn))
    assert "$ns simplex-link $n(sw0) $n(h0) 1000000000 5e-05 DropTail" in tcl and "thresh_" not in tcl
    marked = tcl_of(star(network=ecn, transport={"ecn": True}))
    assert "$ns simplex-link $n(sw0) $n(h0) 1000000000 5e-05 RED" in marked and "set thresh_ 20" in marked


@needs_ns
def test_step_weight_switches_past_the_threshold_as_in_fctlab(tmp_path):
    """An ATCP `step` flow larger than its threshold (W_H = 3 up to 1 MB, W_L = 1 after)
    beside a TCP flow: ns-2's increase_num_ is switched by the script's check of maxseq_
    every millisecond; both simulators switch the weight within that millisecond and
    complete the flows within 1%. The windows sampled by both agree."""
    from fctlab import run
    from fctlab.crosscheck import run_other

    sc = {
        "seed": 1,
        "stop_time": "3s",
        "network": {
            "topology": "dumbbell",
            "senders": 2,
            "receivers": 2,
            "link_rate": "1Gbps",
            "bottleneck_rate": "100Mbps",
            "link_delay": "50us",
            "buffer": "50pkt",
        },
        "transport": {
            "profile": "ns2",
            "rwnd": "1000000B",
            "initial_ssthresh": "1000000B",
            "atcp": {"w_high": 3, "w_low": 1, "threshold": "1MB"},
        },
        "monitor": {"cwnd_interval": "1ms"},
        "flows": [
            {"src": "s0", "dst": "r0", "size": "3MB", "protocol": "atcp"},
            {"src": "s1", "dst": "r1", "size": "3MB", "protocol": "tcp"},
        ],
    }
    a = run(sc)
    b = run_other(sc, a, out=tmp_path)
    assert any("step weight" in n for n in b.summary["notes"])
    for x, y in zip(a.flows.itertuples(), b.flows.itertuples()):
        assert x.completed and y.completed
        assert y.fct_s == pytest.approx(x.fct_s, rel=0.01)

    def switch(res):
        w = res.cwnd[res.cwnd.flow_id == 0]
        assert set(w.weight) == {3.0, 1.0}
        return float(w[w.weight == 1.0].time_s.min())

    assert abs(switch(a) - switch(b)) <= 0.0011
    ca = a.cwnd.groupby("flow_id").cwnd_bytes.mean()
    cb = b.cwnd.groupby("flow_id").cwnd_bytes.mean()
    assert list(cb.index) == list(ca.index) == [0, 1]
    assert cb.to_numpy() == pytest.approx(ca.to_numpy(), rel=0.05)


def test_groups_wait_by_number_whatever_their_names():
    sc = star(
        flows=[
            {"src": "h1", "dst": "h0", "size": "10KB", "group": "a {b} $c"},
            {"src": "h2", "dst": "h0", "size": "10KB", "after": "a {b} $c", "start": "1ms"},
        ]
    )
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
def test_cli_writes_both_runs_and_the_report(tmp_path, capsys, monkeypatch):
    # --out relative to the working directory, as docs/crosscheck.md writes it
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "xc"
    rc = main(
        ["crosscheck", str(SUITE / "lossy_bottleneck.toml"), "--against", "ns2", "--out", "xc", "--seeds", "2", "-q"]
    )
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
    sc.write_text(
        '[network]\ntopology = "star"\nhosts = 2\n[transport]\nprofile = "ns2"\nprotocol = "dctcp"\n'
        '[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "10KB"\n'
    )
    rc = main(["crosscheck", str(sc), "--against", "ns2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "flows[0].protocol" in err and "dctcp" in err
    assert main(["crosscheck", str(sc), "--against", "omnetpp", "--out", str(tmp_path / "o")]) == 2


def test_a_missing_ns_binary_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FCTLAB_NS", str(tmp_path / "no-such-ns"))
    rc = main(
        [
            "crosscheck",
            str(SUITE / "lossy_bottleneck.toml"),
            "--against",
            "ns2",
            "--out",
            str(tmp_path / "o"),
            "--seeds",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "ns-2.35's `ns` was not found" in err


# --- each ns-2 mechanism of the ns2 profile, on a tiny set-up, beside ns-2 itself -------------


def both(scenario, sets=(), tmp=None) -> dict:
    """fctlab and ns-2 on `scenario` (seed 1): per simulator its flows, links and summary."""
    import tempfile

    cc = crosscheck(scenario, against="ns2", out=tmp or tempfile.mkdtemp(), seeds=1, set=list(sets))
    out = {}
    for sim, d in (("fctlab", cc.runs[0].fctlab_dir), ("ns2", cc.runs[0].other_dir)):
        out[sim] = {
            "flows": pd.read_parquet(d / "flows.parquet"),
            "links": pd.read_parquet(d / "links.parquet"),
            "summary": json.loads((d / "summary.json").read_text()),
        }
    return out


def two_flows(buffer: str, start: str) -> dict:
    return {
        "seed": 1,
        "network": {
            "topology": "dumbbell",
            "senders": 2,
            "receivers": 2,
            "link_rate": "10Gbps",
            "bottleneck_rate": "1Gbps",
            "link_delay": "50us",
            "buffer": buffer,
        },
        "transport": {"profile": "ns2", "sack": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
        "flows": [{"src": "s0", "dst": "r0", "size": "5MB"}, {"src": "s1", "dst": "r1", "size": "5MB", "start": start}],
    }


@needs_ns
def test_sack1_recovery_as_ns2(tmp_path):
    """Two 5 MB flows overflowing a 30-packet bottleneck: with ns-2's Sack1 recovery
    (`sack_recovery = "ns2"`) every FCT is within 0.1% of ns-2's and the retransmissions agree
    within one; RFC 6675 recovery, on the same set-up, is off by percents."""
    sc = two_flows("30pkt", "1ms")
    r = both(sc, tmp=tmp_path / "a")
    a, b = r["fctlab"]["flows"], r["ns2"]["flows"]
    assert (abs(a.fct_s / b.fct_s - 1) < 1e-3).all(), (list(a.fct_s), list(b.fct_s))
    assert (abs(a.retransmits - b.retransmits) <= 1).all()
    rfc = both(sc, ['transport.sack_recovery="rfc6675"'], tmp=tmp_path / "b")["fctlab"]["flows"]
    assert (abs(rfc.fct_s / b.fct_s - 1) > 0.01).any(), (list(rfc.fct_s), list(b.fct_s))


@needs_ns
def test_singledup_as_ns2(tmp_path):
    """One 2 MB flow into a 10-packet bottleneck: each fast retransmit is preceded by duplicate
    ACKs on which ns-2 sends one new segment each (singledup_). With `singledup` fctlab resends
    as many segments as ns-2 and finishes within 0.5%; without, it resends one more and later."""
    sets = ['flows.0.size="2MB"', 'network.buffer="10pkt"']
    r = both(SUITE / "lossy_bottleneck.toml", sets, tmp=tmp_path / "a")
    a, b = r["fctlab"]["flows"].iloc[0], r["ns2"]["flows"].iloc[0]
    assert a.retransmits == b.retransmits and a.timeouts == b.timeouts == 0
    assert a.fct_s == pytest.approx(b.fct_s, rel=5e-3)
    off = both(SUITE / "lossy_bottleneck.toml", sets + ["transport.singledup=false"], tmp=tmp_path / "b")["fctlab"][
        "flows"
    ].iloc[0]
    assert off.retransmits != b.retransmits
    assert abs(off.fct_s / b.fct_s - 1) > abs(a.fct_s / b.fct_s - 1)


@needs_ns
def test_sack_blocks_add_to_the_ack_size_as_ns2(tmp_path):
    """ns-2's Sack1 sink adds 8 bytes per SACK block to each ACK: one flow through a lossy
    bottleneck sends the same bytes on every port in both simulators, the ACK direction
    included (more than 40 bytes per ACK there); the RFC 6675 mode's ACKs stay 40 bytes."""
    r = both(SUITE / "lossy_bottleneck.toml", tmp=tmp_path / "a")
    a, b = r["fctlab"]["links"], r["ns2"]["links"]
    assert list(a.tx_packets) == list(b.tx_packets) and list(a.tx_bytes) == list(b.tx_bytes)
    acks = a[(a.src == "right") & (a.dst == "left")].iloc[0]
    assert acks.tx_bytes > 40 * acks.tx_packets
    rfc = both(SUITE / "lossy_bottleneck.toml", ['transport.sack_recovery="rfc6675"'], tmp=tmp_path / "b")["fctlab"][
        "links"
    ]
    acks = rfc[(rfc.src == "right") & (rfc.dst == "left")].iloc[0]
    assert acks.tx_bytes == 40 * acks.tx_packets


@needs_ns
def test_whole_packets_as_ns2(tmp_path):
    """A 2,500-byte flow: ns-2 sends three full 1000-byte packets (sendmsg rounds up), and so does
    fctlab with `whole_packets`: the same FCT; sending the exact bytes finishes earlier."""
    sc = star(flows=[{"src": "h1", "dst": "h0", "size": "2500B"}])
    r = both(sc, tmp=tmp_path / "a")
    a, b = r["fctlab"]["flows"].iloc[0], r["ns2"]["flows"].iloc[0]
    assert a.fct_s == pytest.approx(b.fct_s, rel=1e-6) and a.bytes_delivered == b.bytes_delivered == 2500
    exact = both(sc, ["transport.whole_packets=false"], tmp=tmp_path / "b")["fctlab"]["flows"].iloc[0]
    assert exact.fct_s < b.fct_s * 0.999


@needs_ns
@pytest.mark.parametrize("model", ["waiting", "ns2"])
def test_buffer_models_drop_as_ns2(tmp_path, model):
    """A 20 MB flow into a 20-packet bottleneck, under either buffer model (the script gives ns-2
    the queue-limit that holds what the scenario's buffer holds): the same drops as ns-2."""
    r = both(SUITE / "lossy_bottleneck.toml", [f'network.buffer_model="{model}"'], tmp=tmp_path)
    a, b = r["fctlab"], r["ns2"]
    assert a["links"].drops.sum() == b["links"].drops.sum() > 0
    assert a["flows"].fct_s[0] == pytest.approx(b["flows"].fct_s[0], rel=1e-3)


ECN_STAR = {
    "seed": 1,
    "stop_time": "300ms",
    "network": {
        "topology": "star",
        "hosts": 9,
        "link_rate": "1Gbps",
        "link_delay": "10us",
        "buffer": "100pkt",
        "queue": "red",
        "red_variant": "ns2",
        "red_bytes": False,
        "red_min_threshold": "5pkt",
        "red_max_threshold": "5pkt",
        "red_weight": 1.0,
        "red_mark_p": 2.0,
        "red_wait": False,
        "red_gentle": False,
        "red_ecn": True,
    },
    "transport": {"profile": "ns2", "sack": True, "ecn": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
    "workloads": [{"kind": "long_lived", "senders": "h1..h8", "receivers": ["h0"] * 8}],
}


@needs_ns
def test_ecn_reaction_as_ns2(tmp_path):
    """Eight ECN flows into one port marked at 5 packets (windows of one to a few segments):
    ns-2's reaction (TcpAgent::ecn, the window halved down to one segment, no growth on echoes)
    keeps the queue short enough that, as in ns-2, nothing overflows; the two-segment floor of
    the `linux` reaction overflows the buffer hundreds of times."""
    r = both(ECN_STAR, tmp=tmp_path / "a")
    assert r["ns2"]["links"].drops.sum() <= 5 and r["fctlab"]["links"].drops.sum() <= 5
    assert r["ns2"]["summary"]["ecn_marks"] > 1000 and r["fctlab"]["summary"]["ecn_marks"] > 1000
    goodput = [x["flows"].bytes_delivered.sum() for x in (r["fctlab"], r["ns2"])]
    assert goodput[0] == pytest.approx(goodput[1], rel=0.02)
    linux = both(ECN_STAR, ['transport.ecn_reaction="linux"'], tmp=tmp_path / "b")["fctlab"]
    assert linux["links"].drops.sum() > 100


@needs_ns
def test_ns2_red_byte_mode_and_mark_p_as_ns2(tmp_path):
    """The thesis's mix under ns-2's RED 5/15 with ECN: byte mode (thresholds of 500-byte mean
    packets, the 100-packet limit in 500-byte units) and mark_p_ (ECN-capable packets dropped once
    the probability passes 0.1) give drops and marks within 25% of ns-2's, and the short
    flows' median FCT within 10%; the same RED marking at any probability drops far fewer."""
    sets = ['stop_time="4s"']  # the marking, not the responses' tail, is what is compared
    r = both(SUITE / "thesis_mix_red_ecn.toml", sets, tmp=tmp_path / "a")
    a, b = r["fctlab"], r["ns2"]
    assert a["links"].drops.sum() == pytest.approx(b["links"].drops.sum(), rel=0.25)
    assert a["summary"]["ecn_marks"] == pytest.approx(b["summary"]["ecn_marks"], rel=0.25)
    short = lambda f: f[f.tag == "response"].fct_s.median()  # noqa: E731
    assert short(a["flows"]) == pytest.approx(short(b["flows"]), rel=0.10)
    always_mark = both(SUITE / "thesis_mix_red_ecn.toml", sets + ["network.red_mark_p=2.0"], tmp=tmp_path / "b")[
        "fctlab"
    ]
    assert always_mark["links"].drops.sum() < 0.5 * b["links"].drops.sum()


@needs_ns
def test_a_run_with_a_long_lived_flow_lasts_until_the_stop_time(tmp_path):
    """As in fctlab: the short flow completing does not end ns-2's run while a long-lived flow
    runs, so counters and goodput cover the same time in both."""
    sc = star(flows=[{"src": "h1", "dst": "h0", "size": "10KB"}, {"src": "h2", "dst": "h0"}])
    sc["stop_time"] = "50ms"
    r = both(sc, tmp=tmp_path)
    assert r["ns2"]["summary"]["sim_time_s"] == pytest.approx(0.05)
    a, b = (r[s]["flows"].bytes_delivered[1] for s in ("fctlab", "ns2"))
    assert a == pytest.approx(b, rel=0.01)


@needs_ns
@pytest.mark.parametrize("name", ["two_flow_rate", "two_flow_rate_tcp", "two_flow_cwnd"])
def test_atcp_two_flows_as_ns2(tmp_path, name):
    """The ATCP paper's two-flow set-ups under the ns2 profile (as `fctlab reproduce atcp` runs
    them): ATCP as ns-2's increase_num_, Newreno recovery, 100 Mbps DropTail chain. fctlab and
    ns-2.35 give the same completions, goodputs, retransmissions and drops."""
    sets = ['transport.profile="ns2"', 'transport.rwnd="1000000B"', 'transport.initial_ssthresh="1000000B"']
    if name == "two_flow_cwnd":
        sets.append('stop_time="2s"')
    r = both(ROOT / "scenarios" / "papers" / "atcp" / f"{name}.toml", sets, tmp=tmp_path)
    a, b = r["fctlab"], r["ns2"]
    assert a["links"].drops.sum() == b["links"].drops.sum() > 0
    assert list(a["flows"].retransmits) == list(b["flows"].retransmits)
    for x, y in zip(a["flows"].itertuples(), b["flows"].itertuples()):
        if x.completed:
            assert x.fct_s == pytest.approx(y.fct_s, rel=1e-6)
        else:
            assert x.bytes_delivered == pytest.approx(y.bytes_delivered, rel=1e-3)


def tie_star(h1_delay: str, buffer: str) -> dict:
    """Two hosts blasting 300 KB each (initial window 10, no handshake) into one port of a
    small buffer; all links 1 Gbps, so arrivals and departures fall on the same nanoseconds."""
    return {
        "seed": 1,
        "network": {
            "topology": "custom",
            "link_rate": "1Gbps",
            "link_delay": "50us",
            "buffer": buffer,
            "buffer_model": "ns2",
            "nodes": [
                {"name": "sw0", "kind": "switch"},
                {"name": "h0", "kind": "host"},
                {"name": "h1", "kind": "host"},
                {"name": "h2", "kind": "host"},
            ],
            "links": [{"a": "h0", "b": "sw0"}, {"a": "h1", "b": "sw0", "delay": h1_delay}, {"a": "h2", "b": "sw0"}],
        },
        "transport": {
            "profile": "ns2",
            "sack": True,
            "handshake": False,
            "initial_cwnd": 10,
            "rwnd": "1000000B",
            "initial_ssthresh": "1000000B",
        },
        "flows": [{"src": "h1", "dst": "h0", "size": "300KB"}, {"src": "h2", "dst": "h0", "size": "300KB"}],
    }


@needs_ns
def test_exact_ties_decide_which_flow_waits_for_its_timeout(tmp_path):
    """The difference that remains (docs/crosscheck.md, "Differences that remain"): when
    packets of two hosts reach a full port at the same nanosecond as a departure, which one gets
    the freed slot is decided by event order, in fctlab by integer time and a FIFO, in ns-2 by the
    rounding of its double-precision times. On equal links the two simulators then time out
    different flows; one nanosecond more delay on one link removes the ties, and both time out
    the same flow at the same time."""
    tied = both(tie_star("50us", "4pkt"), tmp=tmp_path / "a")
    slow = {s: list(tied[s]["flows"].fct_s > 0.2) for s in ("fctlab", "ns2")}
    assert sum(slow["fctlab"]) == sum(slow["ns2"]) == 1
    assert slow["fctlab"] != slow["ns2"]
    apart = both(tie_star("50.001us", "4pkt"), tmp=tmp_path / "b")
    a, b = apart["fctlab"], apart["ns2"]
    assert list(a["flows"].fct_s > 0.2) == list(b["flows"].fct_s > 0.2) == [True, False]
    # One drop apart at most: on a few ACKs the sinks list different SACK blocks (ns-2 repeats
    # earlier blocks from a history stack, tcp/tcp-sink.cc lines 700-735), so those ACKs differ
    # by 8 bytes and later packets by fractions of a microsecond.
    assert abs(int(a["links"].drops.sum()) - int(b["links"].drops.sum())) <= 1
    assert a["flows"].fct_s[0] == pytest.approx(b["flows"].fct_s[0], rel=1e-3)


def _fake_run(tmp, seed: int, fcts: dict) -> object:
    """A seed's two run directories holding the given FCTs (size -> list of FCTs per simulator)."""
    from types import SimpleNamespace

    dirs = {}
    for sim, rows in fcts.items():
        d = tmp / f"seed-{seed}" / sim
        d.mkdir(parents=True)
        flows = pd.DataFrame(
            [
                {
                    "flow_id": i,
                    "size_bytes": float(size),
                    "completed": True,
                    "fct_s": fct,
                    "timeouts": 0,
                    "start_s": 0.0,
                    "bytes_delivered": size,
                }
                for i, (size, fct) in enumerate(rows)
            ]
        )
        flows.to_parquet(d / "flows.parquet")
        pd.DataFrame([{"drops": 0}]).to_parquet(d / "links.parquet")
        (d / "summary.json").write_text(json.dumps({"drops": 0, "ecn_marks": 0, "sim_time_s": 1.0}))
        dirs[sim] = d
    return SimpleNamespace(
        seed=seed, fctlab_dir=dirs["fctlab"], other_dir=dirs["ns2"], fctlab_wall_s=0.0, other_wall_s=0.0, own_wall_s=0.0
    )


def test_all_sizes_figures_sit_beside_two_buckets_or_more(tmp_path):
    """The report grades the median and mean over all sized flows when they fall in two
    buckets or more (and not as a copy of a single bucket's)."""
    from types import SimpleNamespace

    from fctlab.crosscheck.report import statistics

    plan = SimpleNamespace(tcp={"initial_rto_s": 3.0})
    rows = [(5_000, 0.001)] * 10 + [(50_000, 0.004)] * 10
    runs = [_fake_run(tmp_path / "two", s, {"fctlab": rows, "ns2": [(sz, f * 2) for sz, f in rows]}) for s in (1, 2)]
    st = statistics(runs, plan)
    whole = next(b for b in st["buckets"] if b["bucket"] == "all sizes")
    assert whole["fctlab"]["mean"][0] == pytest.approx(0.0025) and whole["other"]["mean"][0] == pytest.approx(0.005)
    checks = {c["what"]: c for c in st["checks"]}
    assert checks["all sizes mean FCT"]["ratio"] == pytest.approx(0.5) and not checks["all sizes mean FCT"]["ok"]
    one = [(5_000, 0.001)] * 10
    st1 = statistics([_fake_run(tmp_path / "one", 1, {"fctlab": one, "ns2": one})], plan)
    assert [b["bucket"] for b in st1["buckets"]] == ["<10KB"]


@needs_ns
def test_byte_counts_past_two_gib_are_not_wrapped(tmp_path):
    """ns-2's QueueMonitor counts departed bytes in a 32-bit int, which wraps after 2 GiB
    (18 s at 1 Gbps here); the script adds its progress up every second, so a long run's bytes
    and utilization are ns-2's own, equal to fctlab's."""
    from fctlab import run
    from fctlab.crosscheck import run_other

    sc = {
        "seed": 1,
        "stop_time": "18s",
        "network": {
            "topology": "dumbbell",
            "senders": 1,
            "receivers": 1,
            "link_rate": "10Gbps",
            "bottleneck_rate": "1Gbps",
            "link_delay": "10us",
            "buffer": "100pkt",
        },
        "transport": {"profile": "ns2", "sack": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
        "flows": [{"src": "s0", "dst": "r0"}],
    }
    a = run(sc)
    b = run_other(sc, a, out=tmp_path)
    la = a.links.set_index(["src", "dst"]).loc[("left", "right")]
    lb = b.links.set_index(["src", "dst"]).loc[("left", "right")]
    assert la.tx_bytes > 2**31
    assert lb.tx_bytes == pytest.approx(la.tx_bytes, rel=1e-5)
    assert lb.utilization == pytest.approx(la.utilization, rel=1e-5)


@needs_ns
def test_a_flow_of_more_than_two_gib_completes_in_ns2(tmp_path):
    """ns-2's FTP `send` takes a 32-bit int: a 2.2 GB flow is handed over in chunks of whole
    packets and completes when fctlab's does."""
    from fctlab import run
    from fctlab.crosscheck import run_other

    sc = {
        "seed": 1,
        "network": {
            "topology": "dumbbell",
            "senders": 1,
            "receivers": 1,
            "link_rate": "10Gbps",
            "bottleneck_rate": "10Gbps",
            "link_delay": "10us",
            "buffer": "1000pkt",
        },
        "transport": {"profile": "ns2", "sack": True, "rwnd": "1000000B", "initial_ssthresh": "1000000B"},
        "flows": [{"src": "s0", "dst": "r0", "size": "2200000000B"}],
    }
    a = run(sc)
    b = run_other(sc, a, out=tmp_path)
    assert a.flows.completed[0] and b.flows.completed[0]
    assert b.flows.fct_s[0] == pytest.approx(a.flows.fct_s[0], rel=1e-3)


def test_red_thresholds_scaled_per_port_rate_are_refused_by_every_target(tmp_path):
    red = {"queue": "red", "red_min_threshold": "5pkt", "red_max_threshold": "15pkt", "red_threshold_rate": "10Gbps"}
    p = plan.load(star(network=red))
    assert p.queue(nic=False)["threshold_rate_bps"] == 10_000_000_000
    with pytest.raises(Unsupported, match=r"network.red_threshold_rate: ns-2.35 is given one RED setting"):
        plan.refuse_scaled_red(p, "ns-2.35")
    # the crosscheck refuses it before anything runs, whichever target
    from fctlab.crosscheck import crosscheck

    for target in ("ns2", "htsim", "ns3"):
        with pytest.raises(Unsupported, match=r"network.red_threshold_rate"):
            crosscheck(star(network=red), against=target, out=tmp_path / target, seeds=1)
    # without it, the plan carries no such field
    plain = {k: v for k, v in red.items() if k != "red_threshold_rate"}
    assert "threshold_rate_bps" not in plan.load(star(network=plain)).queue(nic=False)


def test_per_packet_load_balancing_is_refused_by_every_target(tmp_path):
    from fctlab.crosscheck import crosscheck

    assert plan.load(star()).load_balancing is None, "per-flow ECMP leaves the plan's field empty"
    lb = {"load_balancing": "flowlet", "flowlet_gap": "20us"}
    p = plan.load(star(network=lb))
    assert p.load_balancing == {"policy": "flowlet", "flowlet_gap_ns": 20_000}
    for target in ("ns2", "htsim", "ns3"):
        with pytest.raises(Unsupported, match=r'network.load_balancing: .* does not run "flowlet"'):
            crosscheck(star(network=lb), against=target, out=tmp_path / target, seeds=1)


def test_racks_loss_detection_is_refused_by_ns2_and_ns3(tmp_path):
    from fctlab.crosscheck import crosscheck

    assert plan.load(star()).tcp["rack"] is False
    sc = star(transport={"rack": True, "sack_recovery": "rfc6675"})
    assert plan.load(sc).tcp["rack"] is True
    # (htsim's TcpSrc has no SACK, which RACK needs: htsim refuses `sack` first.)
    for target in ("ns2", "ns3"):
        with pytest.raises(Unsupported, match=r"transport.rack"):
            crosscheck(sc, against=target, out=tmp_path / target, seeds=1)
