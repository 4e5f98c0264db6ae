"""The rows of finished flows leave the core while the run goes on (`_core.run`'s
`on_flows`), and `fctlab.run` assembles the same flows table as a run that keeps every row to
the end."""

from __future__ import annotations

import os

import pytest

import fctlab
from fctlab import _core, api


def scenario(count: int) -> dict:
    return {
        "name": "streamed",
        "seed": 3,
        "stop_time": "40ms",
        "network": {
            "topology": "leafspine",
            "leaves": 4,
            "spines": 2,
            "hosts_per_leaf": 8,
            "link_rate": "10Gbps",
            "fabric_link_rate": "40Gbps",
            "link_delay": "1us",
            "buffer": "30pkt",
        },
        "transport": {"min_rto": "1ms"},
        "workloads": [
            {
                "kind": "poisson",
                "senders": "h*",
                "receivers": "h*",
                "sizes": {"dist": "pareto", "shape": 1.2, "mean": "5KB"},
                "load": 0.6,
                "count": count,
            }
        ],
    }


def test_a_streamed_run_has_the_flows_table_of_one_that_keeps_every_row():
    """100,000 flows: the streamed table is the in-memory one, row for row, and most rows
    came out during the run."""
    sc = scenario(100_000)
    text, name, fmt = api._source(sc)
    batches: list = []
    streamed = _core.run(text, name, fmt, [], None, 0.5, [], batches.append)
    kept = _core.run(text, name, fmt, [], None, 0.5, [])
    schema = api._schema("flows")
    whole = api._table(kept["flows"], schema)
    out_during_run = sum(b[0][0] for b in batches)
    # (the core hands rows out at most every 0.1 s of wall time: a few batches for this run)
    assert len(batches) > 1 and out_during_run > 0.9 * whole.num_rows, (len(batches), out_during_run)
    assert out_during_run + streamed["flows"][0][0] == whole.num_rows
    assembled = api._flows_table(batches, streamed["flows"])
    assert assembled.equals(whole)
    # and what `fctlab.run` returns
    res = fctlab.run(sc)
    assert res.flows_table.equals(whole)
    assert not res.flows["completed"].all()  # the stop time cut some off; they come at the end


def test_fctlab_run_writes_its_flows_as_they_finish_the_same_bytes_every_time(tmp_path):
    """`fctlab run` streams the flows to flows.parquet in row groups of 65,536 rows: two runs
    give the same bytes, and the file sorted by flow_id is the table `fctlab.run` returns."""
    import subprocess
    import sys

    import pyarrow.parquet as pq

    from fctlab.bench import to_toml

    sc = scenario(100_000)
    path = tmp_path / "s.toml"
    path.write_text(to_toml(sc))
    files = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        p = subprocess.run(
            [sys.executable, "-m", "fctlab.cli", "run", str(path), "--out", str(out), "-q"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        files.append(out / "flows.parquet")
        assert sorted(x.name for x in tmp_path.iterdir() if x.name.startswith(".")) == []  # no temporary left
    assert files[0].read_bytes() == files[1].read_bytes()
    meta = pq.ParquetFile(files[0]).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert groups[:-1] == [65_536] * (len(groups) - 1) and sum(groups) == 100_000, groups
    table = pq.ParquetFile(files[0]).read()
    assert table.column("flow_id").to_pylist() != sorted(table.column("flow_id").to_pylist())  # as they finished
    assert table.sort_by("flow_id").equals(fctlab.run(sc).flows_table)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery needs POSIX")
def test_ctrl_c_leaves_the_flows_finished_so_far_and_the_rest_in_a_readable_file(tmp_path):
    """Ctrl-C in the middle of a run with many short flows: flows.parquet holds every flow,
    the finished ones with their completion, and summary.json says the run was interrupted."""
    import json
    import signal
    import subprocess
    import sys
    import time

    import pyarrow.parquet as pq

    from fctlab.bench import to_toml

    sc = scenario(2_000_000)
    sc["stop_time"] = "10s"
    path = tmp_path / "s.toml"
    path.write_text(to_toml(sc))
    out = tmp_path / "o"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fctlab.cli", "run", str(path), "--out", str(out), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # into the run: once the first row group of finished flows is in the file being written
        deadline = time.monotonic() + 120
        while not any(f.stat().st_size > 1_000_000 for f in tmp_path.glob(".o.flows-*.parquet")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no rows written within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    t = pq.ParquetFile(out / "flows.parquet").read(columns=["flow_id", "completed", "finish_s"])
    assert t.num_rows == summary["flows_total"] == 2_000_000
    done = t.filter(t.column("completed"))
    assert 0 < done.num_rows == summary["flows_completed"] < 2_000_000
    assert done.column("finish_s").null_count == 0
    assert sorted(t.column("flow_id").to_pylist()) == list(range(2_000_000))
