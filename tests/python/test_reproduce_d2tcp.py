"""`fctlab reproduce d2tcp --quick --items 2`: rows graded from missed deadlines against the
fan-in degree under D2TCP, DCTCP and D3 on the same flows, beside long-lived flows."""

from __future__ import annotations

import json

from fctlab.reproduce import default_scenario_dir, main_reproduce
from fctlab.reproduce.common import MATCH, NO_MATCH
from fctlab.reproduce.d2tcp import SCHEMES
from fctlab.reproduce.d3 import QUICK
from fctlab.reproduce.expected import Expected

EXPECTED = Expected(default_scenario_dir("d2tcp") / "expected.toml")


def test_quick_item2_writes_its_rows_figure_and_numbers(tmp_path):
    rc = main_reproduce(["d2tcp", "--quick", "--items", "2", "--out", str(tmp_path)])
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    for e in EXPECTED.of_item(2):
        assert f"| {e.quantity} | {e.shown} |" in md, e.id
    assert (tmp_path / "d2tcp_item2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    items = json.loads((tmp_path / "results.json").read_text())["items"]
    assert items["2"]["status"] == "done" and items["1"]["status"] == "not run"
    numbers = items["2"]["numbers"]
    assert sorted(numbers) == sorted(SCHEMES)
    for series in numbers.values():
        assert sorted(int(n) for n in series) == list(QUICK.senders)
        assert all(0.0 <= v <= 1.0 for v in series.values())
    runs = sorted((tmp_path / "traces").glob("item2_*.csv"))
    assert len(runs) == len(QUICK.senders) * len(QUICK.seeds)
    verdicts = {r["rid"]: r["verdict"] for r in items["2"]["rows"]}
    assert all(verdicts[e.id] in (MATCH, NO_MATCH) for e in EXPECTED.of_item(2))
