"""`fctlab reproduce atcp`: the quick run writes a complete report, and bad arguments exit 2."""

from __future__ import annotations

import json
import time

import pytest

from fctlab.reproduce import main_reproduce
from fctlab.reproduce.common import DIRECTION, MATCH, NO_MATCH, judge_change, judge_value, markdown_to_html

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# the paper's numbers, as they must appear in the report
PAPER_NUMBERS = [
    "1.8 s", "1.2 s",                       # item 2
    "2.3 s", "1.4 s", "84.6%",              # item 3
    "625 ms", "543 ms", "813 ms", "707 ms",  # item 4
    "562 ms", "489 ms", "688 ms", "598 ms",  # item 5
    "102 ms", "80 ms",                      # item 6
    "210 / 20 / 21 ms", "1.1 / 0.93 / 0.81 s", "23% / 62% / 61%",  # item 7
    "-33%", "-25%", "-10.5%", "-61%", "-59%",  # item 8
]

ITEM_HEADINGS = [f"## Item {n}:" for n in range(1, 9)]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("atcp_quick")
    t0 = time.perf_counter()
    rc = main_reproduce(["atcp", "--quick", "--out", str(out)])
    wall = time.perf_counter() - t0
    return rc, out, wall


def _check_report(out, items=range(1, 9)):
    md = (out / "report.md").read_text()
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    for n in items:
        assert f"## Item {n}:" in md
    results = json.loads((out / "results.json").read_text())
    pngs = sorted(out.glob("*.png"))
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == PNG_MAGIC, png
        import matplotlib.image

        img = matplotlib.image.imread(str(png))
        assert img.shape[0] > 100 and img.shape[1] > 100
        assert f"({png.name})" in md
    return md, results, pngs


def test_quick_run_writes_full_report(quick_run):
    rc, out, wall = quick_run
    assert rc == 0
    assert wall < 240, f"--quick took {wall:.0f} s"
    md, results, pngs = _check_report(out)
    for h in ITEM_HEADINGS:
        assert h in md
    for number in PAPER_NUMBERS:
        assert number in md, number
    names = {p.name for p in pngs}
    # figures where the paper has one: cwnd traces (1), throughput (2), shuffle CDF (8)
    assert {"item1_cwnd.png", "item2_throughput.png", "item8_shuffle_cdf.png"} <= names
    for n in range(1, 9):
        item = results["items"][str(n)]
        assert item["status"] == "done", (n, item["reason"])
        assert item["rows"], n
        for row in item["rows"]:
            assert row["verdict"] in (MATCH, DIRECTION, NO_MATCH, "not measured", "see next rows")


def test_quick_run_reproduces_theorem1_and_two_flow(quick_run):
    _, out, _ = quick_run
    r = json.loads((out / "results.json").read_text())["items"]
    # Theorem 1: weights 1 and 2 give a 2 : 1 window ratio; TCP shares equally
    assert r["1"]["numbers"]["weighted_cwnd_ratio"] == pytest.approx(2.0, rel=0.1)
    assert r["1"]["numbers"]["tcp_cwnd_ratio"] == pytest.approx(1.0, rel=0.1)
    # Theorem 2: the 10 MB flow completes sooner with weight 2; the 100 MB flow does not suffer
    n2 = r["2"]["numbers"]
    assert n2["small_fct_weighted"] < n2["small_fct_tcp"]
    assert n2["large_fct_weighted"] == pytest.approx(n2["large_fct_tcp"], rel=0.02)


def test_items_subset_reports_the_others_as_not_run(tmp_path):
    rc = main_reproduce(["atcp", "--quick", "--items", "1,2", "--out", str(tmp_path)])
    assert rc == 0
    md, results, _ = _check_report(tmp_path, items=range(1, 9))
    assert results["items"]["1"]["status"] == "done"
    assert results["items"]["2"]["status"] == "done"
    for n in range(3, 9):
        assert results["items"][str(n)]["status"] == "not run"
        assert "not selected" in results["items"][str(n)]["reason"]
    assert "not run: not selected (--items)" in md


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nopaper"],
        ["atcp", "--items", "9"],
        ["atcp", "--items", "x"],
        ["atcp", "--bogus"],
        ["atcp", "--budget", "-1"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys, tmp_path):
    rc = main_reproduce(argv + ["--out", str(tmp_path / "o")] if argv else argv)
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fctlab reproduce: error:")


def test_verdict_rules():
    assert judge_change(-0.33, -0.22) == MATCH
    assert judge_change(-0.40, -0.10) == DIRECTION
    assert judge_change(-0.90, 0.01) == NO_MATCH
    assert judge_change(0.0, 0.001) == MATCH
    assert judge_value(2.0, 1.95, 0.10, reference=1.0) == MATCH
    assert judge_value(2.0, 1.5, 0.10, reference=1.0) == DIRECTION
    assert judge_value(2.0, 0.9, 0.10, reference=1.0) == NO_MATCH


def test_markdown_to_html_tables_and_images():
    html = markdown_to_html("# T\n\n| a | b |\n|---|---|\n| 1 \\| 2 | **x** |\n\n![c](f.png)\n\n- one\n- two\n", "T")
    assert "<h1>T</h1>" in html and "<td>1 | 2</td>" in html and "<strong>x</strong>" in html
    assert '<img src="f.png"' in html and "<li>one</li>" in html


@pytest.mark.slow
def test_full_run(tmp_path):
    rc = main_reproduce(["atcp", "--out", str(tmp_path)])
    assert rc == 0
    md, results, _ = _check_report(tmp_path)
    for number in PAPER_NUMBERS:
        assert number in md, number
    assert all(results["items"][str(n)]["status"] == "done" for n in range(1, 9))
