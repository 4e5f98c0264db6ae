"""`fctlab reproduce hpcc --quick --items 3`: rows graded from the 95th-percentile slowdown by
flow size and the PFC pauses under HPCC, DCQCN, TIMELY and DCTCP on the same flows; the size
groups, the pause totals, the incast flows and the fork's topology."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.expected import Expected
from fctlab.reproduce.hpcc import (
    GROUPS,
    INCAST_BYTES,
    INCAST_SENDERS,
    OVERRIDES,
    SCHEMES,
    by_size,
    incast_trace,
    pauses,
    short_groups,
    topology_lines,
)

SCENARIOS = default_scenario_dir("hpcc")
EXPECTED = Expected(SCENARIOS / "expected.toml")


def test_the_quick_run_writes_every_items_rows_figure_and_numbers(tmp_path):
    rc = main_reproduce(["hpcc", "--quick", "--out", str(tmp_path)])
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    items = json.loads((tmp_path / "results.json").read_text())["items"]
    for n in (1, 2, 3, 4):
        for e in EXPECTED.of_item(n):
            assert f"| {e.quantity} | {e.shown} |" in md, e.id
        assert (tmp_path / f"hpcc_item{n}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert items[str(n)]["status"] == "done"
    # without incast, no incast flows and no trace of them
    assert items["1"]["numbers"]["incast_events"] == 0 and not (tmp_path / "hpcc_item1_incast.csv").exists()
    numbers = items["3"]["numbers"]
    assert sorted(numbers["groups"]) == sorted(SCHEMES) and sorted(numbers["pfc"]) == sorted(SCHEMES)
    for groups in numbers["groups"].values():
        # the background flows only, all of them, in twenty groups
        assert len(groups) == GROUPS and sum(g["flows"] for g in groups) == 300
        assert all(g["p99"] >= g["p95"] >= g["median"] >= 1.0 for g in groups)
        sizes = [g["up_to_bytes"] for g in groups]
        assert sizes == sorted(sizes)
    assert numbers["incast_events"] >= 2
    # the incast events fill switch buffers: PFC pauses somewhere under the rate controls that
    # start at line rate and wait for marks
    assert numbers["pfc"]["dcqcn"]["pauses"] > 0 and numbers["pfc"]["dcqcn"]["paused_s"] > 0
    trace = (tmp_path / "hpcc_item3_incast.csv").read_text().splitlines()
    assert len(trace) - 1 == numbers["incast_events"] * INCAST_SENDERS
    verdicts = {r["rid"]: r["verdict"] for r in items["3"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(3))


def test_slowdown_groups_are_twenty_equal_counts_by_size_each_at_least_one():
    sizes = np.arange(1, 201, dtype=float) * 1000
    flows = pd.DataFrame(
        {
            "flow_id": np.arange(200)[::-1],
            "size_bytes": sizes[::-1],
            "ideal_fct_s": 1e-5,
            "fct_s": 1e-5 * (0.5 + sizes[::-1] / 1e5),
            "completed": True,
        }
    )
    groups = by_size(flows)
    assert [g["flows"] for g in groups] == [10] * 20
    assert groups[0]["up_to_bytes"] == 10_000 and groups[-1]["up_to_bytes"] == 200_000
    assert groups[0]["median"] == 1.0  # a slowdown below 1 counts as 1, as the fork's analysis
    assert groups[-1]["median"] == pytest.approx(0.5 + 195_500 / 1e5)
    assert short_groups(groups) == list(range(19))  # the last group reaches 200 KB
    flows.loc[3, "completed"] = False
    with pytest.raises(RuntimeError, match="1 flows did not complete"):
        by_size(flows)


def test_paused_time_sums_pause_to_resume_per_port_and_priority_and_runs_an_open_pause_to_the_end():
    pfc = pd.DataFrame(
        {
            "time_s": [1.0, 1.5, 2.0, 2.0, 3.0, 4.0],
            "link_id": [7, 7, 7, 9, 7, 9],
            "prio": [0, 0, 3, 0, 0, 0],
            "event": ["pause", "resume", "pause", "pause", "pause", "resume"],
        }
    )
    # port 7 prio 0: 1.0-1.5 and 3.0-end(5.0); port 7 prio 3: 2.0-end; port 9 prio 0: 2.0-4.0
    assert pauses(pfc, 5.0) == {"pauses": 4, "ports_paused": 2, "paused_s": pytest.approx(0.5 + 2.0 + 3.0 + 2.0)}
    assert pauses(pfc.iloc[:0], 5.0) == {"pauses": 0, "ports_paused": 0, "paused_s": 0.0}


def test_incast_events_have_sixty_distinct_senders_other_than_the_receiver_and_repeat_by_seed(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    n = incast_trace(a, 1, 0.01)
    assert incast_trace(b, 1, 0.01) == n and a.read_bytes() == b.read_bytes()
    # 2% of 320 x 100 Gbps in 60 x 500 KB events: 2,667 a second, about 27 in 10 ms
    assert 12 <= n <= 45
    rows = pd.read_csv(a)
    assert len(rows) == n * INCAST_SENDERS and (rows["size_bytes"] == INCAST_BYTES).all()
    for _, ev in rows.groupby("start_s"):
        assert ev["dst"].nunique() == 1 and ev["src"].nunique() == INCAST_SENDERS
        assert ev["dst"].iloc[0] not in set(ev["src"])
    assert incast_trace(a, 1, 1e-6) == 2  # at least two events, however short the run


def test_the_scenario_holds_the_forks_fat_tree():
    text = (SCENARIOS / "fabric.toml").read_text()
    lines = topology_lines()
    assert "\n".join(lines) in text
    assert sum(1 for line in lines if "kind = " in line) == 320 + 20 + 20 + 16
    assert sum(1 for line in lines if line.startswith("  { a = ")) == 320 + 80 + 80


def test_dctcp_nic_queues_mark_as_the_switches(tmp_path):
    """Four 5 MB DCTCP flows from one host to four others: its own link is their bottleneck.
    With the reproduction's settings its NIC marks at the switches' threshold and holds about
    that much; with an unmarked NIC queue the windows grow into it."""
    import fctlab

    trace = tmp_path / "fan_out.csv"
    trace.write_text("start_s,src,dst,size_bytes\n" + "".join(f"0,h0,h{d},5000000\n" for d in (20, 40, 60, 80)))
    kw = {k: v for k, v in OVERRIDES["dctcp"].items() if k != "unset"}
    common = {"workloads__0__count": 1, "workloads__1__file": str(trace), "unset": OVERRIDES["dctcp"]["unset"]}
    nic = {}
    for q in ("switch", "droptail"):
        res = fctlab.run(str(SCENARIOS / "fabric.toml"), **{**common, **kw, "network__nic_queue": q})
        links = res.links
        nic[q] = int(links[(links["src"] == "h0") & (links["level"] == "nic")]["max_queue_bytes"].iloc[0])
        assert res.flows["completed"].all()
    # the four initial windows (4 x 150 x 1,048 B = 629 KB) and their growth until the marks act
    assert nic["switch"] < 1_000_000, nic
    assert nic["droptail"] > 5 * nic["switch"], nic
