"""`fctlab reproduce pfabric --quick --items 1`: a report whose rows carry measurements of the
same web-search flows under pFabric, DCTCP and TCP; the normalized-FCT statistics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.expected import Expected
from fctlab.reproduce.pfabric import QUICK, SCHEMES, stats

EXPECTED = Expected(default_scenario_dir("pfabric") / "expected.toml")


@pytest.fixture(scope="module")
def quick_item1(tmp_path_factory):
    out = tmp_path_factory.mktemp("pfabric_quick")
    rc = main_reproduce(["pfabric", "--quick", "--items", "1", "--out", str(out)])
    return rc, out


def test_quick_item1_writes_its_rows_figure_and_numbers(quick_item1):
    rc, out = quick_item1
    assert rc == 0
    md = (out / "report.md").read_text()
    for e in EXPECTED.of_item(1):
        assert f"| {e.quantity} | {e.shown} |" in md, e.id
    assert (out / "pfabric_item1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = json.loads((out / "results.json").read_text())["items"]
    assert items["1"]["status"] == "done" and items["2"]["status"] == "not run"
    numbers = items["1"]["numbers"]
    assert sorted(numbers) == sorted(SCHEMES)
    for s in SCHEMES:
        assert sorted(numbers[s]) == sorted(str(x) for x in QUICK.loads)
        for v in numbers[s].values():
            assert v["small_flows"] > 100 and v["small_mean"] >= 1.0 and v["small_p99"] >= v["small_mean"]
    # The graded rows have verdicts from their checks, and pFabric's small flows are the
    # fastest of the three (the shape every load of the paper shows).
    verdicts = {r["rid"]: r["verdict"] for r in items["1"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(1))
    assert verdicts["item1.small_below"] == MATCH


def test_normalized_fct_statistics_by_size_group():
    sizes = [1_000] * 99 + [50_000, 20_000_000, 30_000_000]
    slow = list(np.linspace(1.0, 2.0, 99)) + [10.0, 3.0, 5.0]
    flows = pd.DataFrame(
        {
            "size_bytes": sizes,
            "ideal_fct_s": [1e-5] * len(sizes),
            "fct_s": [1e-5 * x for x in slow],
            "completed": [True] * len(sizes),
        }
    )
    s = stats(flows)
    assert s["small_flows"] == 100 and s["large_flows"] == 2
    assert s["small_mean"] == pytest.approx((sum(slow[:99]) + 10.0) / 100)
    assert s["small_p99"] == pytest.approx(pd.Series(slow[:100]).quantile(0.99))
    assert s["large_mean"] == pytest.approx(4.0)
    flows.loc[0, "completed"] = False
    with pytest.raises(RuntimeError, match="1 flows did not complete"):
        stats(flows)
