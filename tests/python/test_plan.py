"""The plan (fctlab.plan): the scenario as every engine runs it, and ``rows_for``, through which
every producer of a flows, links or cwnd table fills its columns."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

import fctlab
from fctlab import _core, plan as plan_mod
from fctlab.api import _schema
from fctlab.plan import rows_for

ROOT = Path(__file__).resolve().parents[2]
THEOREM1 = ROOT / "scenarios" / "papers" / "atcp" / "kernel_theorem1.toml"
MIX = ROOT / "scenarios" / "crosscheck" / "ns2" / "thesis_mix_red_ecn.toml"


def test_the_plan_holds_the_flows_the_simulator_starts():
    p = plan_mod.load(MIX)
    res = fctlab.run(MIX)
    sim = res.flows.sort_values("flow_id")
    assert [f.flow_id for f in p.flows] == sim["flow_id"].tolist()
    assert [(f.src, f.dst) for f in p.flows] == list(zip(sim["src"], sim["dst"]))
    assert [f.size_bytes for f in p.flows] == [None if s != s else int(s) for s in sim["size_bytes"]]
    # start times are the simulator's integer nanoseconds
    assert all(abs(f.start_s - s) < 1e-9 for f, s in zip(p.flows, sim["start_s"]) if s == s)
    assert len(p.ports) == 2 * len(p.links()) and {q.nic for q in p.ports} == {True, False}


def test_a_plan_without_flows_is_the_plan_with_its_flows_left_out():
    """``load(..., flows=False)`` (what `fctlab validate` reads for its notes on queues and
    buffers) is the whole plan but for an empty list of flows."""
    whole, bare = plan_mod.load(MIX), plan_mod.load(MIX, flows=False)
    assert len(whole.flows) > 10 and bare.flows == []
    a = json.loads(_core.plan(MIX.read_text(), str(MIX)))
    b = json.loads(_core.plan(MIX.read_text(), str(MIX), flows=False))
    assert b.pop("flows") == [] and len(a.pop("flows")) == len(whole.flows)
    assert a == b


def test_the_plan_carries_every_resolved_protocol_setting():
    """A flow's params hold every key its protocol has a default for (the engines read them;
    none restates a default)."""
    defaults = {n: r["defaults"] for r in _core.protocols() for n in r["names"]}
    text = '[network]\ntopology = "dumbbell"\nsenders = 2\nreceivers = 1\n[[flows]]\nsrc = "s0"\ndst = "r0"\nsize = "1MB"\nprotocol = "{p}"\n'
    for proto in ("rcp", "racs", "sdc", "dctcp", "cubic", "atcp"):
        f = plan_mod.from_json(_core.plan(text.replace("{p}", proto), "s.toml")).flows[0]
        assert defaults[proto].items() <= f.params.items(), (proto, f.params)


def test_every_discipline_describes_itself():
    for q in ('"droptail"', '"ecn"\necn_threshold = "20pkt"', '"red"', '"priority"', '"pfabric"'):
        text = (
            f'[network]\ntopology = "star"\nhosts = 2\nqueue = {q}\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "1MB"\n'
        )
        if "pfabric" in q:
            text += 'protocol = "pfabric"\n'
        d = json.loads(_core.plan(text, "s.toml"))
        kinds = {p["queue"]["kind"] for p in d["ports"] if not p["nic"]}
        assert kinds == {q.split('"')[1]}, d["ports"]


def test_a_plan_of_another_version_is_refused():
    d = json.loads(
        _core.plan(
            '[network]\ntopology = "star"\nhosts = 2\n[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "1KB"\n', "s.toml"
        )
    )
    d["plan_version"] = 99
    with pytest.raises(fctlab.ScenarioError, match="plan version 99"):
        plan_mod.from_json(json.dumps(d))


def test_rows_for_fills_by_rule_and_refuses_unknown_names():
    schema = pa.schema([("a", pa.int64()), ("b", pa.float64())])
    assert rows_for(schema, [{"a": 1}]) == [{"a": 1, "b": None}]
    with pytest.raises(ValueError, match=r"here: \['c'\] are not columns"):
        rows_for(schema, [{"a": 1, "c": 2}], where="here")


def _extended(monkeypatch, table: str, modules: list) -> pa.Schema:
    """The schema of `table` with a column no producer knows, set where each module reads it."""
    schema = _schema(table).append(pa.field("new_column", pa.float64()))
    name = {"flows": "FLOW_SCHEMA", "links": "LINK_SCHEMA", "cwnd": "CWND_SCHEMA"}[table]
    for m in modules:
        monkeypatch.setattr(m, name, schema, raising=False)
    return schema


def _testbed_measured(plan):
    from fctlab.testbed.results import Measured
    from fctlab.testbed.traffic import Transfer

    t0 = 1000.0
    results = {
        f.flow_id: Transfer(start=t0 + 0.01, finish=t0 + 1.0, received=n, retransmits=1, segs_out=n // 1448)
        for f, n in zip(plan.flows, (33_415_000, 66_580_000))
    }
    stats = {}
    for link in plan.links:
        for a, b in ((link.a, link.b), (link.b, link.a)):
            port = SimpleNamespace(rate_bps=100e6, limit_bytes=100 * 1514)
            stats[f"{a}->{b}"] = {"bytes": 10_000_000, "packets": 6_800, "drops": 3, "ecn_marks": 12, "port": port}
    cwnd = [dict(time_s=0.1, flow_id=0, cwnd_bytes=14480, ssthresh_bytes=None, rate_bps=1e6, weight=None)]
    return Measured(
        results, stats, {(f.src, f.dst): 0.004 for f in plan.flows}, set(), t0, 8.0, 9.6, False, None, None, cwnd
    )


def test_a_new_column_reaches_every_producer(monkeypatch):
    """A column added to the results schema appears, null, in the tables of the testbed, of
    ns-2 (and every crosscheck target) and of the socket scheduler, with no edit to them."""
    import fctlab.crosscheck as xc
    import fctlab.sched as sched
    import fctlab.testbed.results as tb
    from fctlab.testbed.scenario import load_plan

    flows_s = _extended(monkeypatch, "flows", [tb, sched])
    links_s = _extended(monkeypatch, "links", [tb])
    cwnd_s = _extended(monkeypatch, "cwnd", [tb])
    plan = load_plan(THEOREM1)
    flows, links, _, cwnd = tb.collect(plan, _testbed_measured(plan))
    for t, s in ((flows, flows_s), (links, links_s), (cwnd, cwnd_s)):
        assert t.schema.names == s.names and t.column("new_column").null_count == t.num_rows > 0

    df = sched._flows_table(
        [{"index": 0, "start_unix_s": 5.0, "transfer_s": 0.01, "error": None}], [2000], [""], "h0", "h1", "srpt"
    )
    assert "new_column" in df.columns and df["new_column"].isna().all()

    real = _schema
    monkeypatch.setattr(xc, "_schema", lambda t: {"flows": flows_s, "links": links_s, "cwnd": cwnd_s}.get(t) or real(t))
    fc = fctlab.run(THEOREM1, set=["stop_time=10ms"])
    rows = [
        {"flow_id": 0, "src": "s0", "dst": "r0", "size_bytes": None, "start_s": 0.0, "finish_s": None, "fct_s": None}
    ]
    res = xc.other_result(rows, [], {}, fc.flows_table, producer="x")
    assert "new_column" in res.flows_table.schema.names and res.flows_table.column("new_column").null_count == 1


def test_one_plan_type():
    """One Plan and one Flow class in the Python package (the testbed's plan extends it)."""
    out = subprocess.run(
        ["grep", "-rn", r"class Plan\|class Flow", str(ROOT / "python" / "fctlab")],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert len(out) == 2 and all("fctlab/plan.py" in line for line in out), out
