"""PIAS's demotion thresholds from the size distribution and the load: the model
(`fctlab.models.pias`, crates/dist/src/mlfq.rs) against the authors' published thresholds, and
a scenario that leaves them out deriving them, printing them and refusing what it cannot
derive from."""

from __future__ import annotations

import pytest

import fctlab
from fctlab import ScenarioError
from fctlab.models import pias
from fctlab.plan import load as load_plan
from fctlab.reproduce import default_scenario_dir
from fctlab.reproduce.pias import AUTHORS_CDF, THRESHOLDS

SCENARIO = "scenarios/size_aware/pias.toml"
LEFT_OUT = ["transport.pias.pias_thresholds"]


def _authors(workload: str):
    src, unit = AUTHORS_CDF[workload]
    return (default_scenario_dir("pias") / src if src.endswith(".txt") else src), unit


@pytest.mark.parametrize("workload", sorted(THRESHOLDS))
def test_the_derived_thresholds_are_the_models_best_and_no_worse_than_the_authors(workload):
    sizes, unit = _authors(workload)
    for load, authors in THRESHOLDS[workload].items():
        d = pias.thresholds(sizes, load, 8, unit)
        assert d["thresholds"] == sorted(set(d["thresholds"])) and 1 <= len(d["thresholds"]) <= 7
        assert d["mean_time"] == pytest.approx(pias.mean_time(sizes, load, d["thresholds"], unit))
        theirs = pias.mean_time(sizes, load, [p * 1460 for p in authors], unit)
        assert d["mean_time"] <= theirs, (load, d, theirs)
        assert d["mean_time"] < d["one_band"]
        # Moving any threshold by 2% either way (keeping the order) does not improve the model.
        t = d["thresholds"]
        for i in range(len(t)):
            for f in (0.98, 1.02):
                moved = t[:i] + [int(t[i] * f)] + t[i + 1 :]
                if moved == sorted(set(moved)):
                    assert pias.mean_time(sizes, load, moved, unit) >= d["mean_time"] * (1 - 1e-3)


def test_the_first_threshold_falls_at_web_searchs_80th_percentile_step():
    # The distribution's step at 1333 packets (80% of flows) is where the model splits first,
    # at every load; the authors' first threshold is below it (909 packets at 80% load).
    sizes, unit = _authors("websearch")
    for load in (0.6, 0.8):
        first = pias.thresholds(sizes, load, 8, unit)["thresholds"][0] / 1460
        assert 1320 <= first <= 1345, first


def test_a_scenario_without_thresholds_derives_the_models_and_says_so():
    plan = load_plan(SCENARIO, [], LEFT_OUT)
    want = pias.thresholds("websearch", 0.6, bands=8)["thresholds"]
    assert {tuple(f.params["pias_thresholds"]) for f in plan.flows} == {tuple(want)}
    assert len(plan.derived) == 1 and plan.derived[0].startswith("workloads[0]: pias_thresholds derived from")
    # The thresholds given are kept, and nothing is said.
    given = load_plan(SCENARIO)
    assert given.derived == [] and given.flows[0].params["pias_thresholds"][0] == 909 * 1460
    # At most one fewer than the ports' bands.
    four = load_plan(SCENARIO, ["network.priority_bands=2", "workloads.0.load=0.9"], LEFT_OUT)
    assert len(four.flows[0].params["pias_thresholds"]) == 1
    assert "for 2 bands" in four.derived[0]


def test_a_rate_instead_of_a_load_derives_from_the_load_it_makes():
    # 16 receivers at 10 Gbps, web search's mean 1,711,250 B: 0.6 of the links is this rate.
    rate = 0.6 * 16 * 10e9 / (8 * 1_711_250)
    by_rate = load_plan(SCENARIO, [f'workloads.0.arrival_rate="{rate:.6f}/s"'], LEFT_OUT + ["workloads.0.load"])
    assert by_rate.flows[0].params["pias_thresholds"] == pias.thresholds("websearch", 0.6)["thresholds"]


def test_flows_with_nothing_to_derive_from_take_the_default_and_say_so(tmp_path):
    flows = [{"src": "h0", "dst": "h1", "size": "3MB"}, {"src": "h2", "dst": "h1", "size": "1MB"}]
    sc = {
        "network": {"topology": "star", "hosts": 3, "queue": "priority", "priority_ecn_threshold": "20pkt"},
        "transport": {"protocol": "pias"},
        "flows": flows,
    }
    plan = load_plan(sc)
    assert plan.flows[0].params["pias_thresholds"][0] == 909 * 1460
    assert plan.derived == [plan.derived[0]] and plan.derived[0].startswith("flows: pias_thresholds left out")


def test_an_overloaded_workload_is_refused_in_one_line_naming_the_fix():
    with pytest.raises(ScenarioError) as e:
        fctlab.validate(SCENARIO, set=["workloads.0.load=1.2"], unset=LEFT_OUT)
    msg = str(e.value)
    assert "workloads[0].load" in msg and "give them as [transport.pias] pias_thresholds" in msg and "\n" not in msg


def test_the_model_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="neither a shipped distribution"):
        pias.thresholds("webserch", 0.5)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        pias.thresholds("websearch", 1.0)
    with pytest.raises(ValueError, match="bands"):
        pias.thresholds("websearch", 0.5, bands=9)
    with pytest.raises(ValueError, match="must rise"):
        pias.mean_time("websearch", 0.5, [2_000_000, 1_000_000])
