"""Sizes that drive allocations are checked against their limits while the scenario is read,
before anything is built: a topology size of 10^9 gives its one-line error at once and
without the memory the topology would take."""

from __future__ import annotations

import os
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


def test_flows_listed_up_front_beyond_the_memory_a_run_may_take_exit_2_before_they_are_made(tmp_path):
    """20,000,000 incast responses (the most a run accepts) listed up front need about 3.2 GB:
    with 1 GB to spend (`FCTLAB_MEMORY`, else the machine's available memory), `fctlab run`
    exits 2 with one line naming the key and what to reduce, at once and without the memory."""
    s = tmp_path / "incast.toml"
    s.write_text(
        '[network]\ntopology = "star"\nhosts = 21\n\n[[workloads]]\nkind = "incast"\nclient = "h0"\n'
        'servers = "h1..h20"\nresponse_size = "1KB"\nrounds = 1000000\n'
    )
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "run", str(s), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "FCTLAB_MEMORY": "1GB"},
    )
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr)
    assert "workloads[0].rounds: rounds × servers = 20,000,000 flows" in lines[0], lines[0]
    assert "need about 3.2 GB, more than the 1.0 GB a run may take here (FCTLAB_MEMORY)" in lines[0], lines[0]
    assert "poisson workload or a trace sorted by start_s" in lines[0], lines[0]
    assert time.perf_counter() - t < 20  # generating the flows alone takes longer
    assert not (tmp_path / "o").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "validate", str(s)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FCTLAB_MEMORY": "lots"},
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and ": FCTLAB_MEMORY: expected a size" in bad.stderr


def test_a_device_or_an_oversized_file_as_a_scenario_exits_2(tmp_path):
    for path, says in (("/dev/zero", "not a regular file"), (str(tmp_path), "is a directory")):
        p = subprocess.run(
            [sys.executable, "-m", "fctlab.cli", "validate", path], capture_output=True, text=True, timeout=60
        )
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, (path, p.stderr)
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)
    p = subprocess.run([sys.executable, "-m", "fctlab.cli", "validate", str(big)], capture_output=True, text=True)
    assert p.returncode == 2 and "more than a scenario file may hold (64 MiB)" in p.stderr, p.stderr


def test_a_tag_of_a_megabyte_costs_one_copy(tmp_path):
    """A workload's tag is shared by its flows, in memory and in the flows table: with a 1 MB
    tag on its 2,000 flows, the web-search example runs within 10% of its memory without one,
    where a copy per flow would take 2 GB."""
    import re

    import pyarrow.parquet as pq

    base = (Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "websearch_poisson.toml").read_text()
    tagged = tmp_path / "tagged.toml"
    tagged.write_text(re.sub(r"^tag = .*$", 'tag = "' + "x" * 1_000_000 + '"', base, count=1, flags=re.M))
    assert tagged.read_text().count("x" * 1_000_000) == 1
    plain = tmp_path / "plain.toml"
    plain.write_text(base)
    peaks = {}
    for name in ("plain", "tagged", "plain", "tagged"):  # alternated; the larger of two kept
        code = (
            "import resource, sys, fctlab.cli as c\n"
            f"r = c.main(['run', {str(tmp_path / (name + '.toml'))!r}, '--out', {str(tmp_path / name)!r}])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(r)\n"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        peaks[name] = max(peaks.get(name, 0), int(p.stdout.strip().splitlines()[-1]) / 1024)
    assert peaks["tagged"] < 1.10 * peaks["plain"], peaks
    tags = pq.read_table(tmp_path / "tagged" / "flows.parquet", columns=["tag"]).column("tag")
    assert tags.length() == 2000 and tags[0].as_py() == "x" * 1_000_000


def test_the_largest_size_is_written_exactly_and_unsigned(tmp_path):
    """A flow of 2^53 B (the largest size) keeps its size to the flows table: exact, positive,
    beside the bytes it delivered before the stop time."""
    import pyarrow.parquet as pq

    demo = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "demo.toml"
    r = fctlab.run(demo, set=["flows.1.size=9007199254740992B", "stop_time=20ms"])
    f = r.flows.set_index("flow_id")
    assert int(f.loc[1, "size_bytes"]) == 2**53 and not bool(f.loc[1, "completed"])
    assert 0 < int(f.loc[1, "bytes_delivered"]) < 2**53
    r.write(tmp_path / "o")
    t = pq.read_table(tmp_path / "o" / "flows.parquet", columns=["size_bytes"]).column("size_bytes")
    assert max(v for v in t.to_pylist() if v is not None) == 2**53 and min(v for v in t.to_pylist() if v) > 0
