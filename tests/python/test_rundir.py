"""One run-directory contract: every producer writes through fctlab.rundir, and each output
directory passes check_run_dir and loads in the report with its figures filled."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import fctlab
from fctlab.report.runs import load_run
from fctlab.rundir import SCHEMA_VERSION, SUMMARY_KEYS, RunDirError, check_run_dir, make_summary, read_summary

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scenarios" / "examples" / "demo.toml"
THEOREM1 = ROOT / "scenarios" / "papers" / "atcp" / "kernel_theorem1.toml"


def _valid(d: Path, producer: str) -> dict:
    assert check_run_dir(d) == [], d
    s = json.loads((d / "summary.json").read_text())
    assert set(s) == set(SUMMARY_KEYS) and s["schema_version"] == SCHEMA_VERSION and s["producer"] == producer
    run = load_run(d)
    assert run.summary["flows_total"] == len(run.flows)
    return s


def test_the_simulator_writes_the_contract(tmp_path):
    s = _valid(fctlab.run(DEMO).write(tmp_path / "sim"), "simulator")
    assert s["scenario_name"] and s["events"] > 0 and s["kernel"] is None


def test_the_testbed_writer_on_recorded_measurements(tmp_path):
    """The testbed's tables and summary from measurements recorded on a run (two flows of
    the Theorem 1 scenario), written without root or namespaces."""
    from fctlab.rundir import write_run
    from fctlab.testbed.results import Measured, collect
    from fctlab.testbed.traffic import Transfer
    from fctlab.testbed.scenario import load_plan

    plan = load_plan(THEOREM1)
    t0 = 1000.0
    results = {
        f.flow_id: Transfer(start=t0 + 0.01, finish=None, received=n, retransmits=r, segs_out=n // 1448)
        for f, n, r in zip(plan.flows, (33_415_000, 66_580_000), (41, 77))
    }
    stats = {}
    for link in plan.links:
        for a, b in ((link.a, link.b), (link.b, link.a)):
            port = SimpleNamespace(rate_bps=100e6, limit_bytes=100 * 1514)
            stats[f"{a}->{b}"] = {"bytes": 10_000_000, "packets": 6_800, "drops": 3, "ecn_marks": 12, "port": port}
    m = Measured(
        results=results,
        stats=stats,
        base_rtts={(f.src, f.dst): 0.0042 for f in plan.flows},
        scheduled=set(),
        t0=t0,
        duration=8.0,
        wall_s=9.6,
        interrupted=False,
        atcp=None,
        delay_line={"packets": 123_456, "late": 0},
        cwnd_rows=None,
    )
    flows, links, summary, cwnd = collect(plan, m, scenario_file=str(THEOREM1), sha256="ab" * 32)
    d = write_run(tmp_path / "tb", "testbed", summary, flows, links, cwnd=cwnd)
    s = _valid(d, "testbed")
    assert s["base_rtt_s"] and s["events"] is None and s["drops"] == 3 * len(stats)
    assert s["flows_completed"] == 0 and s["payload_bytes_delivered"] == 33_415_000 + 66_580_000


def test_the_socket_scheduler_writer(tmp_path):
    from fctlab.sched import _flows_table, write_sent

    reports = [
        {"index": 0, "start_unix_s": 5.0, "transfer_s": 0.012, "error": None},
        {"index": 1, "start_unix_s": 5.001, "transfer_s": 0.0, "error": "no completion notice from the receiver"},
    ]
    df = _flows_table(reports, [20_000, 3_000], ["", ""], "h0", "h1", "srpt")
    summary = write_sent(tmp_path / "sched", df, scenario="w.toml", peer="127.0.0.1:9000")
    s = _valid(tmp_path / "sched", "sched")
    assert s == read_summary(tmp_path / "sched") and summary["flow_errors"] == {"1": reports[1]["error"]}
    assert s["policy"] == "srpt" and s["flows_completed"] == 1 and s["sim_time_s"] is None


def test_a_sweep_and_ns2_write_the_contract(tmp_path):
    from fctlab.crosscheck import other_result
    from fctlab.sweeps import sweep

    (tmp_path / "base.toml").write_text(DEMO.read_text())
    (tmp_path / "sweep.toml").write_text(
        'base = "base.toml"\nseeds = 1\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n'
    )
    runs = sweep(tmp_path / "sweep.toml", tmp_path / "sw", workers=1, log=lambda m: None)
    assert (runs["status"] == "done").all() and runs["flows_completed"].notna().all()
    for d in sorted((tmp_path / "sw" / "flows").glob("run_id=*")):
        s = _valid(d, "simulator")
        assert s["run_id"] == d.name[len("run_id=") :] and set(s["swept"]) == {"transport.protocol"}
    # ns-2.35's side of a crosscheck, from the rows its trace gives
    res = fctlab.run(DEMO)
    rows = [
        {"flow_id": i, "src": r["src"], "dst": r["dst"], "size_bytes": r["size_bytes"], "bytes_delivered": 0,
         "start_s": r["start_s"], "finish_s": None, "fct_s": None, "completed": False, "protocol": r["protocol"],
         "retransmits": 0, "timeouts": 0, "packets_sent": 1, "tag": r["tag"], "group": r["group"]}
        for i, r in enumerate(res.flows_table.to_pylist())
    ]  # fmt: skip
    summary = {"scenario_name": "demo", "seed": 1, "sim_time_s": 1.0, "wall_time_s": 0.2, "flows_total": len(rows),
               "flows_started": len(rows), "flows_completed": 0, "drops": 0, "ecn_marks": 0, "notes": ["x"]}  # fmt: skip
    other = other_result(rows, [], summary, res.flows_table)
    _valid(other.write(tmp_path / "ns2"), "ns-2.35")


def test_bad_summaries_are_refused_with_the_key_named_and_old_shapes_read(tmp_path):
    with pytest.raises(RunDirError, match="drps"):
        make_summary("simulator", {"drps": 1})
    with pytest.raises(RunDirError, match="drops"):
        make_summary("simulator", {"drops": "3"})
    with pytest.raises(RunDirError, match="producer"):
        make_summary("ns-3", {})
    assert make_summary("simulator", {"sim_time_s": float("nan")})["sim_time_s"] is None
    # a sweep's run and a testbed run as written before the contract
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "summary.json").write_text(json.dumps({"summary": {"drops": 4, "seed": 2}, "wall_s": 1.5}))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "summary.json").write_text(json.dumps({"mode": "testbed", "kernel": "6.1", "drops": 0}))
    a, b = read_summary(tmp_path / "a"), read_summary(tmp_path / "b")
    assert (a["producer"], a["drops"], a["seed"]) == ("simulator", 4, 2)
    assert (b["producer"], b["kernel"]) == ("testbed", "6.1")
    assert check_run_dir(tmp_path / "a")  # an old shape is readable, but not the contract


LONG = """name = "long"
stop_time = "60s"
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "10Gbps"
link_delay = "10us"
buffer = "100pkt"
[[flows]]
src = "s0"
dst = "r0"
[[flows]]
src = "s1"
dst = "r1"
"""


def _interrupt_twice(scenario: Path, out: Path, gap_s: float) -> int:
    """`fctlab run` stopped by Ctrl-C while it simulates, and again `gap_s` after its write
    began (each file's write is followed by a 0.4 s pause, so the write lasts at least 1.2 s).
    Returns the exit status."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, FCTLAB_TEST_WRITE_PAUSE_S="0.4")
    argv = [sys.executable, "-m", "fctlab.cli", "run", str(scenario), "--out", str(out), "--quiet"]
    # SIGINT at its default in the child, as on a terminal
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        time.sleep(2.0)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        # the write begins with its temporary directory (beside a new directory, inside an old one)
        where = out if out.exists() else out.parent
        deadline = time.monotonic() + 20
        while not any(".writing-" in p.name for p in where.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(".writing-" in p.name for p in where.iterdir()), "the write did not start"
        time.sleep(gap_s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        return proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


@pytest.mark.parametrize("gap_s", [0.1, 0.3, 0.5])
def test_a_second_ctrl_c_while_writing_leaves_the_directory_complete_or_as_it_was(tmp_path, gap_s):
    scen = tmp_path / "long.toml"
    scen.write_text(LONG)
    # a new directory: absent after the interrupted write (its three files take at least 1.2 s)
    out = tmp_path / "new"
    assert _interrupt_twice(scen, out, gap_s) == 130
    assert not out.exists(), list(out.iterdir())
    # an existing directory with an earlier run: that run's files stay whole
    old = tmp_path / "old"
    fctlab.run(DEMO).write(old)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    assert _interrupt_twice(scen, old, gap_s) == 130
    after = {p.name: p.read_bytes() for p in old.iterdir()}
    assert check_run_dir(old) == [] and after == before
    leftovers = [p.name for p in tmp_path.iterdir() if ".writing-" in p.name]
    leftovers += [p.name for p in old.iterdir() if ".writing-" in p.name]
    assert leftovers == []


def test_the_flows_file_is_the_same_bytes_however_its_batches_were_cut(tmp_path):
    """The rows of a run reach flows.parquet in batches cut by wall time, each with its own
    dictionary of tags and groups; the file holds each row group's values in the order they
    first appear, so it is the same bytes for any cut (here: whole, in 7-row and in uneven
    batches, through 65,536-row groups and the last, short one)."""
    import hashlib

    import pyarrow as pa

    from fctlab.rowstream import RowStream

    r = fctlab.run(ROOT / "scenarios" / "examples" / "incast_rounds.toml")
    whole = r.flows_columns()
    assert pa.types.is_dictionary(whole.schema.field("group").type) and len(set(whole.column("group").to_pylist())) > 10
    rows = pa.concat_tables([whole] * 40)  # past one row group
    digests = set()
    for cuts in ([rows.num_rows], [7] * (rows.num_rows // 7 + 1), [1, 1000, 65_535, 3, 70_000]):
        stream = RowStream(tmp_path / "o", lambda t: t)
        start = 0
        for n in cuts:
            part = rows.slice(start, n)
            start += n
            if part.num_rows:
                # re-encoded on its own: a dictionary of its own values, in another order
                part = part.set_column(
                    part.schema.get_field_index("group"),
                    part.schema.field("group"),
                    pa.array(part.column("group").to_pylist()[::-1])
                    .dictionary_encode()
                    .take(pa.array(range(part.num_rows - 1, -1, -1)))
                    .cast(part.schema.field("group").type),
                )
                stream.put(part)
        if start < rows.num_rows:
            stream.put(rows.slice(start))
        path = stream.finish(rows.slice(0, 0))
        digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
        path.unlink()
    assert len(digests) == 1
