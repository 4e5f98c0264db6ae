"""The validation matrix (docs/validation.md) is generated from the recorded crosscheck suites
(docs/results/validation) and the stored paper runs: this test fails when the doc is not its
rendering, or when a recorded suite no longer stands for the tree (a scenario file of it
changed, a set-up was added, a golden output of fctlab changed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fctlab import _core, validation
from fctlab.cli import main
from fctlab.crosscheck import TARGETS

ROOT = Path(__file__).resolve().parents[2]


def test_the_doc_is_its_rendering_and_every_recorded_suite_is_current():
    problems = validation.check(ROOT)
    assert not problems, "run the suite again and record it, then `make docs`:\n" + "\n".join(problems)


def test_the_ns2_suite_is_recorded_and_every_set_up_of_its_directory_is_in_it():
    data = validation.load("ns2", ROOT)
    assert data is not None
    files = sorted(f.relative_to(ROOT).as_posix() for f in (ROOT / "scenarios/crosscheck/ns2").glob("*.toml"))
    assert sorted(s["scenario"] for s in data["setups"].values()) == files
    for s in data["setups"].values():
        assert s["protocols"] and len(s["seeds"]) >= 5 and s["graded"] == len(s["figures"])


def test_one_row_per_protocol_fctlab_ships():
    text = (ROOT / validation.DOC).read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [p["names"][0] for p in _core.protocols()]


def test_every_reason_names_a_shipped_protocol_and_a_column_that_cannot_fill_it():
    shipped = {p["names"][0] for p in _core.protocols()}
    columns = {t for t, _ in validation.SUITE_COLUMNS} | {validation.MODEL, validation.PAPER}
    for (column, proto), why in validation.REASONS.items():
        assert proto in shipped and column in columns and why, (column, proto)
        runs = getattr(TARGETS.get(column), "PROTOCOLS", None)
        assert runs is None or proto not in runs, f"{column} runs {proto}: the reason {why!r} is wrong"
        assert not (column == validation.MODEL and proto in validation.MODELS)


def test_a_protocol_a_target_cannot_run_says_so_without_a_listed_reason():
    ns2 = TARGETS["ns2"]
    cell = validation.suite_cell("ns2", "ns-2.35", "a-new-protocol", {"setups": {}})
    assert cell == validation.UNSUPPORTED.format(producer=ns2.PRODUCER)
    assert validation.suite_cell("ns2", "ns-2.35", "dctcp", None) == validation.REASONS[("ns2", "dctcp")]
    assert validation.suite_cell("htsim", "htsim", "tcp", None) == validation.NOT_RUN


def _fig(ratio, ok):
    return {"what": "x", "ratio": ratio, "verdict": "agrees" if ok else "differs"}


def test_a_suite_cell_counts_the_figures_of_the_set_ups_that_run_the_protocol():
    data = {
        "setups": {
            "a": {"protocols": ["tcp"], "figures": [_fig(1.02, True), _fig(0.5, False)]},
            "b": {"protocols": ["tcp", "atcp"], "figures": [_fig(1.3, False)]},
            "c": {"protocols": ["atcp"], "figures": []},
        }
    }
    assert validation.suite_cell("ns2", "ns-2.35", "tcp", data) == (
        "1/3 agree, worst 0.50x ([2 set-ups](#set-ups-run-beside-ns-235))"
    )
    assert validation.suite_cell("ns2", "ns-2.35", "atcp", data).startswith("0/1 agree, worst 1.30x")
    assert validation.suite_cell("ns2", "ns-2.35", "sdc", data) == validation.REASONS[("ns2", "sdc")]
    assert validation.worst_ratio([_fig(0.8, True), _fig(1.2, True)]) == 0.8
    assert validation.worst_ratio([]) is None


def test_a_row_counts_for_the_protocols_it_names():
    names = validation._name_table()
    assert validation._names_in("Change, weighted TCP vs TCP", names) == {"atcp", "tcp"}
    assert validation._names_in("Small-flow median, DCTCP vs D2TCP", names) == {"dctcp", "d2tcp"}
    assert validation._names_in("RACS utilization", names) == {"racs"}
    assert validation._names_in("Class B throughput per flow", names) == set()


def _suite_output(tree: Path, out: Path) -> None:
    """A finished two-set-up suite in `out`, its scenarios and golden outputs in `tree`."""
    (tree / "tests" / "golden").mkdir(parents=True)
    (tree / "tests" / "golden" / "a.flows.csv").write_text("flow_id\n0\n")
    scen = tree / "scenarios" / "crosscheck" / "ns2"
    scen.mkdir(parents=True)
    for name, proto, ok in (("one", "tcp", True), ("two", "atcp", False)):
        (scen / f"{name}.toml").write_text(f'[transport]\nprotocol = "{proto}"\n')
        d = out / name
        stats = {
            "scenario": str(scen / f"{name}.toml"),
            "against": "ns2",
            "seeds": [1, 2],
            "checks": [
                {
                    "what": "drops",
                    "fctlab": 11.0,
                    "other": 10.0,
                    "ratio": 1.1,
                    "tolerance": 0.25,
                    "ok": ok,
                    "unit": "count",
                }
            ],
            "goodput": [],
            "notes": ["a note"],
            "wall_s": {"fctlab": [0.1, 0.0]},
        }
        for s in (1, 2):
            (d / f"seed-{s}" / "fctlab").mkdir(parents=True)
            (d / f"seed-{s}" / "ns2").mkdir(parents=True)
            pq.write_table(pa.table({"protocol": [proto]}), d / f"seed-{s}" / "fctlab" / "flows.parquet")
            (d / f"seed-{s}" / "ns2" / "summary.json").write_text(json.dumps({"producer": "ns-2.35"}))
        (d / "crosscheck.json").write_text(json.dumps(stats))
    (out / "suite.md").write_text("| ... |\n\nRegenerate: `fctlab crosscheck DIR --against ns2 --out OUT --seeds 2`\n")


def test_recording_a_suite_and_what_makes_it_stale(tmp_path):
    tree, out = tmp_path / "tree", tmp_path / "out"
    _suite_output(tree, out)
    data = validation.record(out, "ns2", "fctlab validation --record OUT --against ns2", tree)
    assert json.loads(validation.record_path("ns2", tree).read_text()) == data
    one, two = data["setups"]["one"], data["setups"]["two"]
    assert one["scenario"] == "scenarios/crosscheck/ns2/one.toml" and one["protocols"] == ["tcp"]
    assert (one["agree"], two["agree"], two["graded"], two["worst_ratio"]) == (1, 0, 1, 1.1)
    assert data["made"]["command"] == "fctlab crosscheck DIR --against ns2 --out OUT --seeds 2"
    assert data["made"]["producer"] == "ns-2.35" and two["notes"] == ["a note"]
    assert validation.stale("ns2", tree) == []
    # a set-up added to the suite's directory
    (tree / "scenarios/crosscheck/ns2/three.toml").write_text("")
    assert validation.stale("ns2", tree) == [
        "set-up three: scenarios/crosscheck/ns2/three.toml is not in the recorded suite"
    ]
    (tree / "scenarios/crosscheck/ns2/three.toml").unlink()
    # a scenario file changed
    (tree / "scenarios/crosscheck/ns2/one.toml").write_text('[transport]\nprotocol = "tcp"  # changed\n')
    assert validation.stale("ns2", tree) == ["set-up one: scenarios/crosscheck/ns2/one.toml changed"]
    # fctlab's behaviour changed
    validation.record(out, "ns2", "again", tree)
    (tree / "tests/golden/a.flows.csv").write_text("flow_id\n1\n")
    assert validation.stale("ns2", tree) == ["fctlab's golden outputs changed since: tests/golden/a.flows.csv"]


def test_a_suite_of_another_target_or_outside_the_tree_is_refused(tmp_path):
    tree, out = tmp_path / "tree", tmp_path / "out"
    _suite_output(tree, out)
    with pytest.raises(validation.ValidationError, match="not 'htsim'"):
        validation.record(out, "htsim", "x", tree)
    with pytest.raises(validation.ValidationError, match="no crosscheck output"):
        validation.record(tmp_path / "nothing", "ns2", "x", tree)
    other = tmp_path / "elsewhere"
    shutil.copytree(tree, other)
    with pytest.raises(validation.ValidationError, match="not in the source tree"):
        validation.record(out, "ns2", "x", tmp_path / "elsewhere")


def test_the_command_checks_and_reports_errors_on_one_line(capsys):
    assert main(["validation", "--docs", "--check"]) == 0
    assert main(["validation", "--record", "/nonexistent", "--against", "ns2"]) == 2
    assert "no crosscheck output" in capsys.readouterr().err
    assert main(["validation", "--record", "/nonexistent"]) == 2
