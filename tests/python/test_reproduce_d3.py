"""`fctlab reproduce d3 --quick --items 1`: rows graded from the share of flows that meet their
deadline under D3, RCP and TCP on the same flows; the flows' generator and the statistics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.d3 import QUICK, SCHEMES, met_fraction, most_supported, trace_rows, write_trace
from fctlab.reproduce.expected import Expected

EXPECTED = Expected(default_scenario_dir("d3") / "expected.toml")


def test_quick_item1_writes_its_rows_figure_and_numbers(tmp_path):
    rc = main_reproduce(["d3", "--quick", "--items", "1", "--out", str(tmp_path)])
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    for e in EXPECTED.of_item(1):
        assert f"| {e.quantity} | {e.shown} |" in md, e.id
    assert (tmp_path / "d3_item1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = json.loads((tmp_path / "results.json").read_text())["items"]
    assert items["1"]["status"] == "done" and items["2"]["status"] == "not run"
    numbers = items["1"]["numbers"]
    assert sorted(numbers) == sorted(SCHEMES)
    for series in numbers.values():
        assert sorted(int(n) for n in series) == list(QUICK.senders)
        assert all(0.0 <= v <= 1.0 for v in series.values())
    verdicts = {r["rid"]: r["verdict"] for r in items["1"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(1))


def test_the_flows_of_a_run_are_the_papers_distributions_and_repeat_by_seed(tmp_path):
    rows = trace_rows(2000, 0.03, 7)
    assert rows == trace_rows(2000, 0.03, 7) and rows != trace_rows(2000, 0.03, 8)
    starts, srcs, dsts, sizes, deadlines = map(np.array, zip(*rows))
    assert sorted(set(srcs)) == sorted(f"h{i}" for i in range(1, 2001)) and set(dsts) == {"h0"}
    assert list(starts) == sorted(starts) and starts.min() >= 0 and starts.max() < 1e-3
    assert sizes.min() >= 2000 and sizes.max() <= 50000 and abs(sizes.mean() - 26000) < 1000
    assert abs(deadlines.mean() - 0.03) < 0.003  # exponential, mean 30 ms
    text = write_trace(tmp_path / "t.csv", rows[:2]).read_text().splitlines()
    assert text[0] == "start_s,src,dst,size_bytes,deadline_s" and len(text) == 3


def test_the_share_that_met_and_the_senders_supported():
    flows = pd.DataFrame(
        {
            "deadline_s": [0.01, 0.01, 0.01, None],
            "fct_s": [0.005, 0.02, None, 0.5],
            "completed": [True, True, False, True],
        }
    )
    assert met_fraction(flows) == 1 / 3  # late, unfinished, and one without a deadline left out
    assert most_supported({5: 1.0, 10: 0.995, 20: 0.98, 30: 1.0}) == 10
    assert most_supported({5: 0.9, 10: 1.0}) == 0
