"""Sizes that drive allocations are checked against their limits while the scenario is read,
before anything is built: a topology size of 10^9 gives its one-line error at once and
without the memory the topology would take."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fctlab
from fctlab.api import ScenarioError

BIG = 1_000_000_000

#: (topology, its size keys with workable values)
TOPOLOGIES = {
    "star": {"hosts": 4},
    "dumbbell": {"senders": 2, "receivers": 2},
    "chain": {"switches": 3, "hosts_per_switch": 2},
    "tree": {"racks": 3, "hosts_per_rack": 4},
    "leafspine": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
}
CASES = [(topo, key) for topo, sizes in TOPOLOGIES.items() for key in sizes]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("topo,key", CASES, ids=[f"{t}.{k}" for t, k in CASES])
def test_a_topology_size_of_a_billion_is_refused_before_it_is_built(topo, key):
    network = {"topology": topo, **TOPOLOGIES[topo], key: BIG}
    scenario = {"network": network, "flows": [{"src": "h0", "dst": "h1", "size": "1MB"}]}
    rss = _peak_rss_mb()
    t = time.perf_counter()
    with pytest.raises(ScenarioError) as e:
        fctlab.validate(scenario)
    took = time.perf_counter() - t
    msg = str(e.value)
    assert f"network.{key}:" in msg and "more than this simulator supports" in msg and "\n" not in msg, msg
    # the topology would take gigabytes and seconds; the check takes neither
    assert _peak_rss_mb() - rss < 100, f"peak memory grew by {_peak_rss_mb() - rss:.0f} MB"
    assert took < 1.0, f"{took:.2f} s"


def test_the_message_gives_the_count_and_the_limit():
    flows = [{"src": "h0", "dst": "h1", "size": "1MB"}]
    over = {"network": {"topology": "star", "hosts": 1_000_000}, "flows": flows}
    with pytest.raises(
        ScenarioError, match=r"network\.hosts: hosts \+ 1 = 1,000,001 nodes is more than .* \(1,000,000\)"
    ):
        fctlab.validate(over)
    mesh = {"network": {"topology": "leafspine", "leaves": 3000, "spines": 2000, "hosts_per_leaf": 1}, "flows": flows}
    with pytest.raises(ScenarioError, match=r"network\.leaves: 6,003,000 links is more than .* \(4,000,000\)"):
        fctlab.validate(mesh)


WORKLOADS = [
    ("incast", {"client": "h0", "servers": "h1..h999", "response_size": "1KB", "rounds": 1_000_000}, "rounds"),
    (
        "partition_aggregate",
        {"aggregator": "h0", "workers": "h1..h999", "response_size": "1KB", "jobs": 10_000_000},
        "jobs",
    ),
    ("shuffle", {"mappers": "h0..h499", "reducers": "h500..h999", "block_size": "1KB", "jobs": 1000}, "jobs"),
    ("long_lived", {"senders": "all", "receivers": "all", "pattern": "all_to_all"}, "senders"),
]


@pytest.mark.parametrize("kind,keys,key", WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_a_workload_of_too_many_flows_is_refused_before_it_is_generated(kind, keys, key):
    scenario = {
        "stop_time": "1s",
        "network": {"topology": "star", "hosts": 10_000},
        "workloads": [{"kind": kind, **keys}],
    }
    rss = _peak_rss_mb()
    with pytest.raises(ScenarioError, match=rf"workloads\[0\]\.{key}: .* flows is more than this simulator accepts"):
        fctlab.validate(scenario)
    assert _peak_rss_mb() - rss < 100, f"peak memory grew by {_peak_rss_mb() - rss:.0f} MB"


def test_routing_entries_time_horizon_and_poisson_windows_are_checked_before_building():
    flows = [{"src": "h0", "dst": "h1", "size": "1MB"}]
    star = {"network": {"topology": "star", "hosts": 20_000}, "flows": flows}
    with pytest.raises(ScenarioError, match=r"network\.hosts: 20,001 nodes × 20,000 hosts = 400,020,000 routing"):
        fctlab.validate(star)
    base = {"stop_time": "1s", "network": {"topology": "star", "hosts": 4}}
    window = {**base, "workloads": [{"kind": "poisson", "senders": "h1", "receivers": "h0", "sizes": "1KB",
                                     "arrival_rate": "1000/us", "until": "1s"}]}  # fmt: skip
    rss = _peak_rss_mb()
    with pytest.raises(ScenarioError, match=r"workloads\[0\]\.until: about 1000000000 flows"):
        fctlab.validate(window)
    assert _peak_rss_mb() - rss < 100
    # sizes so large for the load that the arrivals fall past the horizon of a run
    late = {**base, "workloads": [{"kind": "poisson", "senders": "h1", "receivers": "h0",
                                   "sizes": 9_000_000_000_000_000_000, "load": 0.5, "count": 3}]}  # fmt: skip
    with pytest.raises(ScenarioError, match=r"workloads\[0\]: draws a flow starting at .* past the"):
        fctlab.validate(late)


#: Values past what the simulator represents, one per unit family, with the key the error names
#: and the largest value it takes (docs/scenarios.md, "Ranges").
OVERFLOWS = [
    ("network.link_delay=18446744074s", "network.link_delay", "1000000s"),
    ("transport.rwnd=18446744073709551615B", "transport.rwnd", "2^53 B"),
    ("flows.1.size=18446744073709551615B", "flows[1].size", "2^53 B"),
    ("network.link_rate=2000Tbps", "network.link_rate", "1Pbps"),
    ("network.buffer=18446744073709551615B", "network.buffer", "2^53 B"),
    (f"network.link_delay={'9' * 300}s", "network.link_delay", "(301 characters)"),
]


@pytest.mark.parametrize("override, key, says", OVERFLOWS, ids=[o[1] for o in OVERFLOWS])
def test_a_value_past_the_simulators_range_exits_2_naming_the_key(tmp_path, override, key, says):
    demo = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "demo.toml"
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "run", str(demo), "--out", str(tmp_path / "o"), "--set", override],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr)
    assert f": {key}: " in lines[0] and says in lines[0] and len(lines[0]) < 300, lines[0]
    assert not (tmp_path / "o").exists()
