"""Queue disciplines from Python: strict priority runs from a scenario and shows in
the plan (``fctlab.plan``); the peers that cannot run it say so."""

from __future__ import annotations

import pytest

import fctlab
from fctlab import _core
from fctlab import plan as plan_mod
from fctlab.crosscheck import ns2
from fctlab.plan import Unsupported

SCENARIO = """
seed = 1
stop_time = "120ms"
[network]
topology = "dumbbell"
senders = 2
receivers = 1
link_rate = "1Gbps"
link_delay = "20us"
buffer = "200pkt"
{queue}
[transport]
protocol = "tcp"
[[flows]]
src = "s0"
dst = "r0"
tag = "bulk"
""" + "".join(
    f'[[flows]]\nsrc = "s1"\ndst = "r0"\nsize = "20KB"\nstart = "{20 + 4 * k}ms"\ntag = "query"\n' for k in range(20)
)


def _file(tmp_path, queue: str):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.format(queue=queue))
    return p


def _query_fct(tmp_path, queue: str) -> float:
    r = fctlab.run(_file(tmp_path, queue))
    q = r.flows[r.flows["tag"] == "query"]
    assert q["completed"].all()
    return float(q["fct_s"].mean())


def test_strict_priority_runs_from_a_scenario(tmp_path):
    fifo = _query_fct(tmp_path, "")
    prio = _query_fct(tmp_path, 'queue = "priority"\npriority_tags = ["query"]\npriority_ecn_threshold = "20pkt"')
    assert prio < fifo / 3, (prio, fifo)
    text = SCENARIO.format(queue='queue = "priority"\npriority_tags = ["query"]')
    q = plan_mod.from_json(_core.plan(text, "s.toml", "toml", [], [])).queue(nic=False)
    assert q == {
        "kind": "priority",
        "tags": ["query"],
        "bands": 2,
        "band_buffer": None,
        "ecn_threshold": None,
        "ecn_per_port": False,
        "pushout": False,
    }


def test_bad_priority_keys_are_one_line_errors(tmp_path):
    with pytest.raises(
        fctlab.ScenarioError, match=r"network.priority_bands: expected 2 to 8 bands \(one per tag plus one\), got 9"
    ):
        fctlab.run(_file(tmp_path, 'queue = "priority"\npriority_bands = 9'))
    with pytest.raises(fctlab.ScenarioError, match=r"network.priority_pushout: only used with queue = \"priority\""):
        fctlab.run(_file(tmp_path, "priority_pushout = true"))
    with pytest.raises(
        fctlab.ScenarioError, match=r"unknown queue \"prio\" \(known: droptail, ecn, red, priority, pfabric, trim\)"
    ):
        fctlab.run(_file(tmp_path, 'queue = "prio"'))
    # Scenario text where a path belongs: one line saying so.
    with pytest.raises(fctlab.ScenarioError, match="a string of several lines"):
        fctlab.run(SCENARIO.format(queue=""))


def test_ns2_crosscheck_refuses_what_it_cannot_translate(tmp_path):
    f = _file(tmp_path, 'queue = "priority"\npriority_tags = ["query"]')
    f.write_text(f.read_text().replace('protocol = "tcp"', 'protocol = "tcp"\nprofile = "ns2"'))
    p = plan_mod.load(f)
    with pytest.raises(Unsupported, match=r"network.queue = 'priority': not translated to ns-2"):
        ns2.check(p)
