"""`fctlab reproduce pias --quick --items 1`: a report whose rows carry measurements of the same
web-search flows under PIAS, DCTCP and pFabric; the thresholds and statistics behind them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.expected import Expected
from fctlab.reproduce.pias import QUICK, SCHEMES, THRESHOLDS, stats, thresholds

EXPECTED = Expected(default_scenario_dir("pias") / "expected.toml")


@pytest.fixture(scope="module")
def quick_item1(tmp_path_factory):
    out = tmp_path_factory.mktemp("pias_quick")
    rc = main_reproduce(["pias", "--quick", "--items", "1", "--out", str(out)])
    return rc, out


def test_quick_item1_writes_its_rows_figure_and_numbers(quick_item1):
    rc, out = quick_item1
    assert rc == 0
    md = (out / "report.md").read_text()
    for e in EXPECTED.of_item(1):
        assert f"| {e.quantity} | {e.shown} |" in md, e.id
    assert (out / "pias_item1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = json.loads((out / "results.json").read_text())["items"]
    assert items["1"]["status"] == "done" and items["2"]["status"] == "not run"
    numbers = items["1"]["numbers"]
    assert sorted(numbers) == sorted(SCHEMES)
    for s in SCHEMES:
        assert sorted(numbers[s]) == sorted(str(x) for x in QUICK.loads)
        for v in numbers[s].values():
            assert v["small_flows"] > 100 and 0 < v["small_mean"] <= v["small_p99"]
    verdicts = {r["rid"]: r["verdict"] for r in items["1"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(1))
    # Without flow sizes PIAS's small flows are still ahead of DCTCP's, behind pFabric's.
    assert verdicts["item1.small_below"] == MATCH
    for x in map(str, QUICK.loads):
        assert numbers["pfabric"][x]["small_mean"] < numbers["pias"][x]["small_mean"]


def test_thresholds_are_the_authors_for_each_workload_and_load():
    assert thresholds("websearch", 0.8)[0] == f"{909 * 1460}B"
    assert thresholds("datamining", 0.5)[-1] == f"{22272 * 1460}B"
    for per_load in THRESHOLDS.values():
        assert sorted(per_load) == [0.5, 0.6, 0.7, 0.8, 0.9]
        assert all(list(t) == sorted(t) and len(t) == 7 for t in per_load.values())


def test_fct_statistics_by_size_group_in_milliseconds():
    sizes = [1_000] * 99 + [102_399, 102_401, 11_000_000]
    fct = [1e-4] * 99 + [2e-3, 5e-3, 0.1]
    flows = pd.DataFrame({"size_bytes": sizes, "fct_s": fct, "completed": [True] * len(sizes)})
    s = stats(flows)
    # 100 KB and 10 MB are 100 x 1024 and 10 x 1024^2 bytes, as the authors' result.py counts.
    assert (s["small_flows"], s["large_flows"]) == (100, 1)
    assert s["small_mean"] == pytest.approx((99 * 0.1 + 2.0) / 100)
    assert s["large_mean"] == pytest.approx(100.0)
    flows.loc[3, "completed"] = False
    with pytest.raises(RuntimeError, match="1 flows did not complete"):
        stats(flows)


def test_quick_item3_sets_derived_thresholds_beside_the_authors_and_runs_both(tmp_path):
    rc = main_reproduce(["pias", "--quick", "--items", "3", "--out", str(tmp_path)])
    assert rc == 0
    item = json.loads((tmp_path / "results.json").read_text())["items"]["3"]
    verdicts = {r["rid"]: r["verdict"] for r in item["rows"]}
    assert sorted(verdicts) == sorted(e.id for e in EXPECTED.of_item(3))
    # The solver reaches the model's optimum: no worse than the authors' under it.
    assert verdicts["item3.model_optimum"] == MATCH
    # The runs used different thresholds, and small flows fare alike with either.
    model = item["numbers"]["model"]["websearch"]["0.8"]
    assert model["derived_packets"] != list(THRESHOLDS["websearch"][0.8])
    assert verdicts["item3.sim_small"] == MATCH
    assert verdicts["item3.values"] in (MATCH, NO_MATCH)
    sim = item["numbers"]["simulated"]["datamining"]
    assert sorted(sim) == ["derived", "pias"] and all(v["small_flows"] > 100 for v in sim["derived"].values())
    assert (tmp_path / "pias_item3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
