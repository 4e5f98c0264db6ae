"""`fctlab reproduce homa --quick --items 2`: rows graded from slowdowns by message size under
Homa, pFabric and PIAS on the same messages; the per-size statistics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.expected import Expected
from fctlab.reproduce.homa import SCHEMES, by_size

EXPECTED = Expected(default_scenario_dir("homa") / "expected.toml")


def test_quick_item2_writes_its_rows_figure_and_numbers(tmp_path):
    rc = main_reproduce(["homa", "--quick", "--items", "2", "--out", str(tmp_path)])
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    for e in EXPECTED.of_item(2):
        assert f"| {e.quantity} | {e.shown} |" in md, e.id
    assert (tmp_path / "homa_item2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = json.loads((tmp_path / "results.json").read_text())["items"]
    assert items["2"]["status"] == "done" and items["1"]["status"] == "not run"
    numbers = items["2"]["numbers"]
    assert sorted(numbers) == sorted(SCHEMES)
    for groups in numbers.values():
        assert len(groups) == 10 and sum(g["messages"] for g in groups) == 1000
        assert all(g["p99"] >= g["median"] >= 1.0 for g in groups)
    verdicts = {r["rid"]: r["verdict"] for r in items["2"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(2))


def test_slowdown_by_tenths_of_the_messages():
    sizes = np.arange(1, 101, dtype=float) * 1000
    flows = pd.DataFrame(
        {"size_bytes": sizes, "ideal_fct_s": 1e-5, "fct_s": 1e-5 * (1 + sizes / 1e5), "completed": True}
    )
    groups = by_size(flows, np.quantile(sizes, np.linspace(0, 1, 11)))
    assert [g["messages"] for g in groups] == [10] * 10
    assert groups[0]["median"] == pytest.approx(1.055) and groups[-1]["up_to_bytes"] == 100_000
    flows.loc[0, "completed"] = False
    with pytest.raises(RuntimeError, match="1 messages did not complete"):
        by_size(flows, np.linspace(0, 1e5, 11))
