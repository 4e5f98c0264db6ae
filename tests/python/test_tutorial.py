"""docs/tutorial.md's study, as the tutorial runs it: `fctlab sweep` and `fctlab report` on the
shipped files give the slowdown-by-size figure against the load with one line per transport,
SRPT at the hosts separate from plain TCP."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from fctlab.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_tutorial_study_gives_one_line_per_transport(tmp_path, capsys):
    shutil.copytree(ROOT / "scenarios" / "tutorial", tmp_path / "tutorial")
    assert main(["sweep", str(tmp_path / "tutorial" / "study.toml"), "--out", str(tmp_path / "study")]) == 0
    assert main(["report", str(tmp_path / "study"), "--out", str(tmp_path / "report")]) == 0
    t = pd.read_csv(tmp_path / "report" / "slowdown_by_size.csv")
    lines = sorted(set(zip(t["transport.protocol"], t["transport.scheduler"])))
    assert lines == [("atcp", "tcp"), ("dctcp", "tcp"), ("tcp", "srpt"), ("tcp", "tcp")], lines
    assert sorted(set(t["workloads.0.load"])) == [0.3, 0.5, 0.7]
    assert {"small", "medium"} <= set(t["bucket"]) and set(t["stat"]) == {"mean", "p99"}
    assert (t["seeds"] == 2).all()
    # Every point of every line of the small flows is there (4 lines x 3 loads, two statistics).
    assert len(t[t["bucket"] == "small"]) == 24
    assert (tmp_path / "report" / "slowdown_by_size.png").stat().st_size > 10_000
    # The tutorial shows these commands and this figure.
    doc = (ROOT / "docs" / "tutorial.md").read_text()
    for cmd in (
        "fctlab sweep scenarios/tutorial/study.toml --out out/study",
        "fctlab report out/study --out out/study-report",
        "img/tutorial_slowdown_by_size.png",
    ):
        assert cmd in doc, cmd
    assert (ROOT / "docs" / "img" / "tutorial_slowdown_by_size.png").is_file()
