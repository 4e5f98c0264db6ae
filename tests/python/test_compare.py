"""compare_runs, format_comparison and main_compare on small fake run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest


from fctlab import compare


def _make_run(root: Path, name: str, fct: list, sizes: list | None = None) -> Path:
    n = len(fct)
    sizes = sizes or [1_000, 2_000, 200_000, 20_000_000, 3_000][:n]
    d = root / name
    d.mkdir()
    pd.DataFrame(
        {
            "flow_id": pd.array(range(1, n + 1), dtype="int64"),
            "src": ["h0"] * n,
            "dst": [f"h{i}" for i in range(1, n + 1)],
            "size_bytes": pd.array(sizes, dtype="Int64"),
            "start_s": [0.0] * n,
            "finish_s": fct,
            "fct_s": fct,
            "ideal_fct_s": [0.5] * n,
            "slowdown": [None if f is None else f / 0.5 for f in fct],
            "completed": [f is not None for f in fct],
            "protocol": ["tcp"] * n,
        }
    ).to_parquet(d / "flows.parquet", index=False)
    (d / "summary.json").write_text(
        json.dumps(
            {
                "sim_time_s": 10.0,
                "wall_time_s": 1.0,
                "events_per_s": 1e6,
                "drops": 0,
                "scenario_name": "pair",
            }
        )
    )
    return d


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    # flow 1: 1.0 -> 0.5 faster (-50%), flow 2: 2.0 -> 1.5 faster (-25%), flow 3: 1.0 -> 1.02
    # equal within 5%, flow 4: 4.0 -> 5.0 slower (+25%), flow 5 completes only in A
    a = _make_run(tmp_path, "a", [1.0, 2.0, 1.0, 4.0, 1.0])
    b = _make_run(tmp_path, "b", [0.5, 1.5, 1.02, 5.0, None])
    return a, b


def test_compare_runs(pair):
    r = compare.compare_runs(*pair)
    assert r["tolerance"] == 0.05
    assert r["runs"]["a"]["completed"] == 5 and r["runs"]["b"]["completed"] == 4
    assert [e["bucket"] for e in r["buckets"]] == ["all", "small", "medium", "large"]
    small = r["buckets"][1]
    assert small["a"]["count"] == 3 and small["a"]["median_fct_s"] == 1.0
    assert small["b"]["completed"] == 2 and small["b"]["excluded_incomplete"] == 1
    assert small["b"]["mean_fct_s"] == pytest.approx(1.0)  # 0.5 and 1.5
    p = r["paired"]
    assert r["paired_skipped_reason"] is None
    assert (p["faster"], p["slower"], p["equal"], p["completed_only_a"]) == (2, 1, 1, 1)
    assert p["mean_gain"] == pytest.approx(0.375) and p["mean_loss_s"] == pytest.approx(1.0)
    json.dumps(r, allow_nan=False)  # JSON-ready


def test_format_comparison(pair):
    text = compare.format_comparison(compare.compare_runs(*pair))
    lines = text.splitlines()
    assert lines[0].startswith("Run A: a (") and "5 flows, 5 completed" in lines[0]
    assert "4 completed" in lines[1]
    assert "FCT statistics per size bucket" in text
    assert any(l.split()[:3] == ["small", "flows", "3"] for l in lines)
    assert any(l.split() == ["median", "FCT", "1", "s", "1", "s", "+0.0%"] for l in lines)
    assert "Paired comparison of B against A (4 flows completed in both; equal when within 5% of A's FCT)" in text
    rows = {
        l.split()[0]: l.split()[1:]
        for l in lines
        if l.startswith("  ") and l.split()[0] in ("faster", "slower", "equal")
    }
    assert rows["faster"] == ["50.0%", "2", "-37.5%", "(-500", "ms)"]
    assert rows["slower"] == ["25.0%", "1", "+25.0%", "(+1", "s)"]
    assert rows["equal"] == ["25.0%", "1"]
    assert "completed only in A: 1, only in B: 0, in neither: 0" in text


def test_paired_comparison_skipped_when_flows_differ(tmp_path):
    a = _make_run(tmp_path, "a", [1.0, 2.0, 3.0])
    b = _make_run(tmp_path, "b", [1.0, 2.0, 3.0], sizes=[1_000, 9_999, 200_000])
    r = compare.compare_runs(a, b)
    assert r["paired"] is None
    assert "size_bytes" in r["paired_skipped_reason"]
    text = compare.format_comparison(r)
    assert "Paired comparison skipped: 1 flow(s) differ in size_bytes" in text
    c = _make_run(tmp_path, "c", [1.0, 2.0])
    assert "different flows" in compare.compare_runs(a, c)["paired_skipped_reason"]


def test_main_compare(pair, tmp_path, capsys):
    assert compare.main_compare([str(pair[0]), str(pair[1])]) == 0
    assert "Paired comparison of B against A" in capsys.readouterr().out

    assert compare.main_compare([str(pair[0]), str(pair[1]), "--json", "--tolerance", "0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tolerance"] == 0 and result["paired"]["slower"] == 2

    missing = tmp_path / "no-such-run"
    assert compare.main_compare([str(pair[0]), str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("fctlab compare: error: ") and "no-such-run" in captured.err
    assert "does not exist" in captured.err and "Traceback" not in captured.err

    (pair[1] / "flows.parquet").unlink()
    assert compare.main_compare([str(pair[0]), str(pair[1])]) == 2
    assert "has no flows.parquet" in capsys.readouterr().err

    assert compare.main_compare([str(pair[0])]) == 2  # DIR_B missing from the arguments
    assert capsys.readouterr().err.count("\n") == 1
    assert compare.main_compare([str(pair[0]), str(pair[0]), "--tolerance", "-1"]) == 2
    assert "tolerance" in capsys.readouterr().err
