"""The rows of finished flows leave the core while the run goes on (`_core.run`'s
`on_flows`), and `fctlab.run` assembles the same flows table as a run that keeps every row to
the end."""

from __future__ import annotations

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
    assert len(batches) > 3 and out_during_run > 0.9 * whole.num_rows, (len(batches), out_during_run)
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
