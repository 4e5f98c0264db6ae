"""A sweep's store from Python: `fctlab.sweep` and `fctlab.open_sweep` give a SweepResult whose
runs, lazy flows, queries, slowdown-by-size table and report agree with the CLI's."""

from __future__ import annotations

import pytest
from test_sweep import _write

import fctlab
from fctlab.sweeps import SweepError


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    f = _write(tmp, 'seeds = 2\n[axes]\n"workloads.0.load" = [0.3, 0.6]\n')
    return fctlab.sweep(f, tmp / "out", workers=2, log=lambda m: None)


def test_the_result_gives_runs_lazy_flows_and_queries(study):
    assert isinstance(study, fctlab.SweepResult) and study.swept == ["workloads.0.load"]
    assert len(study.runs) == 4 and set(study.runs["status"]) == {"done"}
    assert "4 of 4 runs done; swept: workloads.0.load" in repr(study)
    # the flows stay in the store until asked: a DuckDB relation, aggregated there
    n = study.flows.aggregate("count(*)").fetchall()[0][0]
    assert n == int(study.query("SELECT count(*) AS n FROM flows")["n"][0]) > 0
    by_load = study.flows.aggregate('"workloads.0.load", count(*) AS n').df().sort_values("workloads.0.load")
    assert list(by_load["workloads.0.load"]) == [0.3, 0.6] and by_load["n"].sum() == n
    again = fctlab.open_sweep(study.directory)
    assert again.runs.equals(study.runs)
    with pytest.raises(SweepError, match="not a table"):
        study.table("nope")


def test_the_slowdown_table_is_the_reports_and_tidy(study, tmp_path):
    t = study.slowdown_by_size()
    assert {"workloads.0.load", "bucket", "stat", "gmean", "lo", "hi", "seeds"} <= set(t.columns)
    assert set(t["workloads.0.load"]) == {0.3, 0.6} and set(t["seeds"]) == {2}
    path = study.report(tmp_path / "report", fmt="md")
    assert path.is_file() and "slowdown" in path.read_text().lower()


def test_a_store_that_fails_its_check_is_refused(study, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(study.directory, copy)
    victim = next(copy.glob("flows/run_id=*/flows.parquet"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(SweepError, match="flows.parquet"):
        fctlab.open_sweep(copy)
    with pytest.raises(SweepError, match="not a sweep directory"):
        fctlab.open_sweep(tmp_path / "nothing")


def test_plot_is_the_reports_figure(study, tmp_path):
    png = study.plot(tmp_path / "fig.png")
    study.report(tmp_path / "report")
    assert (
        png._repr_png_()
        == (tmp_path / "fig.png").read_bytes()
        == (tmp_path / "report" / "slowdown_by_size.png").read_bytes()
    )
