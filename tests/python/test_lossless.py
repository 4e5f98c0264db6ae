"""`[network] pfc = true` from Python: the plan says it, the keys are checked in one line each,
and the engines that do not run priority flow control refuse it by name."""

from __future__ import annotations

import pytest

import fctlab
from fctlab import ScenarioError
from fctlab.plan import Unsupported, load as load_plan, refuse_lossless


def _incast(**network) -> dict:
    net = {"topology": "star", "hosts": 5, "link_rate": "10Gbps", "link_delay": "1us", "buffer": "100pkt"}
    net.update(network)
    flows = [{"src": f"h{i}", "dst": "h4", "size": "1MB"} for i in range(4)]
    return {"network": net, "transport": {"initial_cwnd": 64}, "flows": flows}


def test_a_lossless_incast_drops_nothing_where_a_lossy_one_drops():
    lossy = fctlab.run(_incast())
    lossless = fctlab.run(_incast(pfc=True))
    assert lossy.summary["drops"] > 0
    assert lossless.summary["drops"] == 0 and bool(lossless.flows["completed"].all())


def test_the_plan_says_the_network_is_lossless():
    assert load_plan(_incast()).pfc is None
    assert load_plan(_incast(pfc=True)).pfc == {"xoff": None, "xon": None, "headroom": None}
    given = load_plan(_incast(pfc=True, pfc_xoff="100KB", pfc_xon="90KB"))
    assert (given.pfc["xoff"], given.pfc["xon"]) == (100_000, 90_000)


@pytest.mark.parametrize(
    "network, key, words",
    [
        ({"pfc_xoff": "100KB"}, "network.pfc_xoff", "applies with pfc = true only"),
        ({"pfc": True, "queue": "priority"}, "network.queue", "first-in-first-out"),
        ({"pfc": True, "buffer": "3pkt"}, "network.pfc", "leaves no room above the headroom"),
        ({"pfc": True, "buffer": "unlimited"}, "network.pfc", "give pfc_xoff"),
        ({"pfc": True, "pfc_xoff": "50KB", "pfc_xon": "60KB"}, "network.pfc_xon", "must not be above pfc_xoff"),
        ({"pfc": True, "buffer_model": "ns2"}, "network.buffer_model", "waiting"),
    ],
)
def test_bad_lossless_settings_are_one_line_naming_the_key(network, key, words):
    with pytest.raises(ScenarioError) as e:
        fctlab.run(_incast(**network))
    msg = str(e.value)
    assert f": {key}: " in msg and words in msg and "\n" not in msg, msg


def test_the_other_engines_refuse_a_lossless_scenario_by_name():
    with pytest.raises(Unsupported, match=r"network\.pfc: ns-2\.35 does not run priority flow control"):
        refuse_lossless(load_plan(_incast(pfc=True)), "ns-2.35")
    refuse_lossless(load_plan(_incast()), "ns-2.35")  # a lossy one passes
