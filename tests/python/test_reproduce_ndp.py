"""`fctlab reproduce ndp --quick`: rows graded from the permutation's per-flow throughput and
the incast's completion times under NDP and DCTCP; the optimum and the servers drawn."""

from __future__ import annotations

import json

import pandas as pd

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.expected import Expected
from fctlab.reproduce.ndp import LINK_BPS, WIRE_BYTES, incast_servers, optimal_last, throughputs

EXPECTED = Expected(default_scenario_dir("ndp") / "expected.toml")


def test_the_quick_run_writes_every_items_rows_figure_and_numbers(tmp_path):
    assert main_reproduce(["ndp", "--quick", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "report.md").read_text()
    items = json.loads((tmp_path / "results.json").read_text())["items"]
    for n in (1, 2):
        for e in EXPECTED.of_item(n):
            assert f"| {e.quantity} | {e.shown} |" in md, e.id
        assert (tmp_path / f"ndp_item{n}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert items[str(n)]["status"] == "done"
        assert all(r["verdict"] in (MATCH, NO_MATCH) for r in items[str(n)]["rows"])
    perm = items["1"]["numbers"]
    for s in ("ndp", "dctcp", "dctcp_spray"):
        rates = perm[s]["sorted_gbps"]
        assert len(rates) == 16 and rates == sorted(rates) and 0 < rates[0] and rates[-1] <= 10.0
    # sprayed over every path with trimming switches, NDP's flows fill the links; ECMP's collide
    assert perm["ndp"]["mean_share"] > perm["dctcp"]["mean_share"]
    incast = items["2"]["numbers"]
    for s in ("ndp", "dctcp"):
        assert [x["servers"] for x in incast[s]] == [4, 8, 15]
        for x in incast[s]:
            # nothing finishes before the optimum, and the fastest before the last
            assert x["last_s"] >= x["optimal_s"] > 0 and x["fastest_s"] <= x["last_s"]


def test_the_optimum_keeps_the_frontends_link_busy_from_the_nearest_servers_first_packet():
    flows = pd.DataFrame({"ideal_fct_s": [0.0004, 0.0005, 0.0006]})
    per_response = 50 * WIRE_BYTES * 8 / LINK_BPS  # 450 KB in 9,000-byte payloads
    assert optimal_last(flows, 3) == 0.0004 + 2 * per_response


def test_throughput_is_the_bytes_delivered_over_each_flows_life_and_servers_are_distinct():
    flows = pd.DataFrame({"flow_id": [1, 0], "bytes_delivered": [1_000, 2_000], "start_s": [0.5, 0.0]})
    assert list(throughputs(flows, 1.0)) == [16_000.0, 16_000.0]
    s = incast_servers(432, 431)
    assert len(set(s)) == 431 and "h0" not in s
    assert incast_servers(432, 10) == incast_servers(432, 10)
