"""Sweep figures: the numeric swept key is the x axis and categorical keys are lines; slowdown
and FCT intervals are computed on the log scale, so they never reach below 1 (slowdown) or 0
(FCT); the data each figure draws is checked, on small runs of the shipped sweeps."""

from __future__ import annotations

import concurrent.futures as cf
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fctlab.sweeps as S
from fctlab.cli import main
from fctlab.report.sweep import (
    axis_label,
    legend_labels,
    quantity,
    slowdown_by_size,
    slowdown_figure,
    sweep_table,
)
from fctlab.stats import interval, log_interval

from test_sweep import BASE

ROOT = Path(__file__).resolve().parents[2]
DCTCP = BASE.replace('buffer = "100pkt"', 'buffer = "100pkt"\nqueue = "ecn"\necn_threshold = "20pkt"').replace(
    'min_rto = "1ms"', 'min_rto = "1ms"\nprotocol = "dctcp"'
)


@pytest.fixture
def threads(monkeypatch):
    """Sweeps run their runs on two threads of this process (the same runs and store as worker
    processes, without a process start per run)."""
    real = S._execute

    def on_threads(sw, todo, out, workers, cluster, retries, prog, **kw):
        with cf.ThreadPoolExecutor(max_workers=2) as ex:
            return real(sw, todo, out, workers, cluster, retries, prog, executor=ex)

    monkeypatch.setattr(S, "_execute", on_threads)


def _shrunk(src: Path, dst: Path, sweep_file: str, edits: dict) -> Path:
    """A copy of a shipped sweep folder with its sweep file edited (text -> text)."""
    shutil.copytree(src, dst)
    text = (dst / sweep_file).read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    (dst / sweep_file).write_text(text)
    return dst / sweep_file


def _check_intervals(points: pd.DataFrame, floor: float) -> int:
    """No drawn interval below `floor`, each around its point; returns how many are drawn."""
    drawn = points[points["lo"].notna()]
    assert (drawn["lo"] >= floor).all() and (drawn["lo"] <= drawn["mean"] * (1 + 1e-12)).all(), drawn
    assert (drawn["hi"] >= drawn["mean"] * (1 - 1e-12)).all(), drawn
    assert (points["mean"] > 0).all()
    return len(drawn)


def test_log_intervals_stay_above_their_floor_where_symmetric_ones_do_not():
    values = [1.2, 40.0]  # two seeds far apart: the Student-t interval reaches far below 0
    mean, half = interval(values)
    assert mean - half < -200
    g, lo, hi = log_interval(values, floor=1.0)
    assert g == pytest.approx(math.sqrt(1.2 * 40.0)) and lo == 1.0 and hi > 40.0
    g, lo, hi = log_interval([0.001, 0.002, 0.5])
    assert 0 < lo < g < hi
    assert math.isnan(log_interval([3.0])[1]) and math.isnan(log_interval([])[0])


def test_quantities_and_axis_labels():
    runs = pd.DataFrame(
        {
            "network.link_rate": ["1Gbps", "10Gbps"],
            "workloads.0.load": [0.3, 0.5],
            "transport.protocol": ["tcp", "dctcp"],
            "network.buffer": ["50pkt", "100pkt"],
            "workloads.0.sizes": ["10KB", "1MB"],
        }
    )
    keys = list(runs.columns)
    assert list(quantity(runs["network.link_rate"])[0]) == [1e9, 1e10]
    assert [axis_label(k, keys, runs) for k in keys] == [
        "link_rate (bps)",
        "load",
        "protocol",
        "buffer (pkt)",
        "sizes (B)",
    ]
    assert quantity(runs["transport.protocol"]) is None


def test_two_base_files_and_a_swept_load_plot_the_load_one_line_per_file(tmp_path, capsys, threads):
    """Two base scenarios (TCP, DCTCP) and three loads, two seeds, reported with no flags: load
    on the x axis, one line per base file, each seed's value drawn (no interval with two seeds);
    --metric writes the data it draws beside its figure."""
    (tmp_path / "tcp.toml").write_text(BASE)
    (tmp_path / "dctcp.toml").write_text(DCTCP)
    f = tmp_path / "sweep.toml"
    f.write_text('base = ["dctcp.toml", "tcp.toml"]\nseeds = 2\n[axes]\n"workloads.0.load" = [0.3, 0.5, 0.7]\n')
    out = tmp_path / "out"
    log: list = []
    S.sweep(f, out, workers=2, log=log.append)
    assert "to run on 2 local workers" in log[0]
    S.sweep(f, out, workers=1, log=log.append)  # (all stored already: nothing runs)
    assert any(line.endswith("0 to run on 1 local worker") for line in log), log
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--format", "md"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Slowdown by flow size against load" in md and "geometric mean" in md
    t, per_run, x, lines, _ = slowdown_by_size(out)
    assert (x, lines) == ("workloads.0.load", ["base"])
    png, points, seeds = slowdown_figure(t, per_run, x, lines)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(set(points["x"])) == [0.3, 0.5, 0.7] and set(points["line"]) == {"dctcp", "tcp"}
    assert points["lo"].isna().all() and (points["seeds"] == 2).all()  # two seeds: no bars...
    assert len(seeds) == 2 * len(points)  # ...each seed's value instead
    # --metric: the same axes, the data drawn in sweep.csv, the axis by its short name.
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "m"), "--format", "md", "--metric", "fct_p99"]) == 0
    drawn = pd.read_csv(tmp_path / "m" / "sweep.csv")
    assert set(drawn["line"]) == {"dctcp", "tcp"} and sorted(set(drawn["x"])) == [0.3, 0.5, 0.7]
    assert "p99 FCT (s) against load, by base" in (tmp_path / "m" / "report.md").read_text()


def test_two_numeric_keys_need_x_and_coinciding_lines_are_named(tmp_path, capsys, threads):
    (tmp_path / "base.toml").write_text(BASE)
    f = tmp_path / "sweep.toml"
    f.write_text(
        'base = "base.toml"\n[axes]\n"workloads.0.load" = [0.3, 0.5]\n"network.link_rate" = ["1Gbps", "10Gbps"]\n'
        '"transport.scheduler" = ["tcp", "srpt"]\n'
    )
    out = tmp_path / "out"
    S.sweep(f, out, log=lambda m: None)
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "2 swept keys are numeric (load, link_rate); choose the x axis with --x, one of load, link_rate" in err
    assert len(err.splitlines()) == 1
    assert main(["report", str(out), "--out", str(tmp_path / "r"), "--x", "link_rate", "--format", "md"]) == 0
    assert "against link_rate (bps)" in (tmp_path / "r" / "report.md").read_text()
    t, per_run, x, lines, _ = slowdown_by_size(out, x="link_rate")
    assert lines == ["workloads.0.load", "transport.scheduler"]
    _, points, _ = slowdown_figure(t, per_run, x, lines)
    assert sorted(set(points["x"])) == [1e9, 1e10]
    # A few flows at these loads: SRPT at the hosts changes nothing, and the legend says so.
    labels = legend_labels(points)
    assert labels["0.3, tcp"] == "0.3, tcp (same as 0.3, srpt)", labels


def test_no_interval_of_the_shipped_sweeps_reaches_below_its_floor(tmp_path, threads):
    """The tutorial's and the size-aware sweeps, made small (three seeds, two loads, few
    flows; two of the tutorial's transports, three of the size-aware bases): every interval
    drawn is above 1 for slowdowns and above 0 for FCTs."""
    tut = _shrunk(
        ROOT / "scenarios" / "tutorial",
        tmp_path / "tutorial",
        "study.toml",
        {
            "seeds = 2": "seeds = 3",
            "[0.3, 0.5, 0.7]": '[0.3, 0.7]\n"stop_time" = ["30ms"]\n"workloads.0.until" = ["13ms"]',
            '["tcp", "dctcp", "atcp", "tcp"]': '["dctcp", "tcp"]',
            '["tcp", "tcp", "tcp", "srpt"]': '["tcp", "srpt"]',
        },
    )
    sa = _shrunk(
        ROOT / "scenarios" / "size_aware",
        tmp_path / "size_aware",
        "sweep.toml",
        {
            "seeds = 1": "seeds = 3",
            '"atcp.toml", "srpt.toml", "las.toml", "rcp.toml",\n    "racs.toml", "sdc.toml", "pfabric.toml", '
            '"pias.toml", ': "",
            '["websearch", "datamining"]': '["websearch"]\n"workloads.0.count" = [40]',
            "[0.4, 0.6, 0.8]": "[0.4, 0.8]",
        },
    )
    drawn = 0
    for f in (tut, sa):
        out = f.parent / "out"
        S.sweep(f, out, log=lambda m: None)
        t, per_run, x, lines, _ = slowdown_by_size(out)
        assert x == "workloads.0.load"
        _, points, _ = slowdown_figure(t, per_run, x, lines)
        drawn += _check_intervals(points, floor=1.0)
        for metric, floor in (("fct_p99", np.nextafter(0, 1)), ("slowdown:mean:size<100KB", 1.0)):
            t, *_ = sweep_table(out, metric, None, None)
            drawn += _check_intervals(t, floor=floor)
    assert drawn > 20
