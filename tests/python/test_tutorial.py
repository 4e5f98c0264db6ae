"""docs/tutorial.md's study, as the tutorial runs it: `fctlab sweep` and `fctlab report` on the
shipped files give the slowdown-by-size figure against the load with one line per transport,
SRPT at the hosts separate from plain TCP."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from fctlab.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_tutorial_study_gives_one_line_per_transport(tmp_path, capsys, monkeypatch):
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
        "img/screenshot_sweep_report.png",
        "img/screenshot_run_report.png",
    ):
        assert cmd in doc, cmd
    for img in ("tutorial_slowdown_by_size.png", "screenshot_sweep_report.png", "screenshot_run_report.png"):
        assert (ROOT / "docs" / "img" / img).is_file(), img
    # The tutorial's Python version, as written there, on the store the commands wrote: the
    # sweep resumes with nothing to run, and the figure is the report's, byte for byte.
    code = re.search(r"## 5\. The same study from Python.*?```python\n(.*?)```", doc, re.S).group(1)
    (tmp_path / "scenarios").mkdir()
    shutil.copytree(tmp_path / "tutorial", tmp_path / "scenarios" / "tutorial")
    (tmp_path / "out").mkdir()
    shutil.copytree(tmp_path / "study", tmp_path / "out" / "study")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    exec(compile(code, "docs/tutorial.md", "exec"), {})
    out = capsys.readouterr()
    assert "0 to run" in out.err and "small" in out.out and "dctcp" in out.out, out
    png = (tmp_path / "out" / "study-slowdown.png").read_bytes()
    assert png == (tmp_path / "report" / "slowdown_by_size.png").read_bytes()


_BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_BROWSER is None, reason="no Chromium to take screenshots (apt-get install chromium)")
def test_the_screenshot_command_photographs_both_reports(tmp_path):
    """`make screenshots` (scripts/screenshots.sh) writes the two pictures the docs show, as
    PNG images 1100 pixels wide with something drawn in them."""
    r = subprocess.run(
        [str(ROOT / "scripts" / "screenshots.sh"), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    for name, height in (("screenshot_sweep_report.png", 1900), ("screenshot_run_report.png", 1500)):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, h = struct.unpack(">II", data[16:24])
        assert (width, h) == (1100, height)
        assert len(data) > 50_000, "a blank page compresses to a few kilobytes"
