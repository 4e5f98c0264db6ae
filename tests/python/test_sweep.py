"""`fctlab sweep` and `fctlab query`: expansion, validation before any run, local workers giving
the sequential results, resuming, and SQL over the store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fctlab.cli import main
from fctlab.sweeps import SweepError, load_sweep, query, sweep

BASE = """name = "sweep_base"
seed = 1
stop_time = "20ms"
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
link_delay = "10us"
buffer = "100pkt"
[transport]
min_rto = "1ms"
[[workloads]]
kind = "poisson"
senders = "s*"
receivers = "r*"
pattern = "pairs"
sizes = "websearch"
load = 0.4
until = "10ms"
"""


def _write(tmp: Path, sweep_text: str) -> Path:
    (tmp / "base.toml").write_text(BASE)
    f = tmp / "sweep.toml"
    f.write_text('base = "base.toml"\n' + sweep_text)
    return f


GRID = """seeds = 2
[axes]
"transport.protocol" = ["tcp", "dctcp"]
[zip]
"network.buffer" = ["50pkt", "100pkt"]
"workloads.0.load" = [0.3, 0.5]
"""


def test_grid_zip_and_seeds_expand_to_stable_ids(tmp_path):
    sw = load_sweep(_write(tmp_path, GRID))
    assert len(sw.runs) == 2 * 2 * 2  # protocols x zipped rows x seeds
    assert {r.values for r in sw.runs} == {
        (("transport.protocol", p), ("network.buffer", b), ("workloads.0.load", l))
        for p in ("tcp", "dctcp")
        for b, l in (("50pkt", 0.3), ("100pkt", 0.5))
    }
    ids = [r.run_id for r in sw.runs]
    assert len(set(ids)) == len(ids)
    assert ids == [r.run_id for r in load_sweep(tmp_path / "sweep.toml").runs]  # stable


@pytest.mark.parametrize(
    "text, where, what",
    [
        ('[axes]\n"transport.protocl" = ["tcp"]\n', 'axes."transport.protocl" = "tcp"', "unknown key"),
        ('[axes]\n"transport.protocol" = []\n', 'axes."transport.protocol"', "empty list"),
        ('[axes]\n"network.link_rate" = ["10Gbs"]\n', 'axes."network.link_rate" = "10Gbs"', "network.link_rate"),
        ('[axes]\n"network.buffer" = [12]\n', 'axes."network.buffer" = 12', "network.buffer"),
        ('[zip]\n"network.buffer" = ["50pkt"]\n"workloads.0.load" = [0.3, 0.5]\n', "zip", "same length"),
        ("seeds = 0\n", "seeds", "1 to 100000"),
        ('[axis]\n"a" = [1]\n', "axis", "unknown key"),
    ],
)
def test_bad_axes_are_rejected_before_any_run(tmp_path, text, where, what):
    f = _write(tmp_path, text)
    with pytest.raises(SweepError) as e:
        sweep(f, tmp_path / "out", workers=1, log=lambda m: None)
    msg = str(e.value)
    assert where in msg and what in msg, msg
    assert not (tmp_path / "out").exists()
    # the CLI says it on one line and exits 2
    assert main(["sweep", str(f), "--out", str(tmp_path / "out")]) == 2


def _flows(out: Path):
    return {d.name: pq.read_table(d / "flows.parquet") for d in sorted((out / "flows").glob("run_id=*"))}


def test_two_workers_give_the_sequential_results_and_a_rerun_resumes(tmp_path):
    f = _write(tmp_path, GRID)
    seq = sweep(f, tmp_path / "seq", workers=1, log=lambda m: None)
    par = sweep(f, tmp_path / "par", workers=2, log=lambda m: None)
    assert (seq["status"] == "done").all() and (par["status"] == "done").all()
    a, b = _flows(tmp_path / "seq"), _flows(tmp_path / "par")
    assert a.keys() == b.keys() and len(a) == 8
    for k in a:
        assert a[k].equals(b[k]), k  # byte for byte the same tables
    # a half-written run (temporary name) and a missing run: only the missing one runs again
    victim = sorted((tmp_path / "par" / "flows").glob("run_id=*"))[0]
    shutil.move(str(victim), str(victim.parent / ".tmp-interrupted-1"))
    lines = []
    again = sweep(f, tmp_path / "par", workers=2, log=lines.append)
    assert "8 runs (7 already done), 1 to run" in lines[0], lines
    assert (again["status"] == "done").all() and len(_flows(tmp_path / "par")) == 8
    assert _flows(tmp_path / "par")[victim.name].equals(a[victim.name])


def test_query_runs_sql_over_runs_and_flows(tmp_path, capsys):
    f = _write(tmp_path, '[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    runs = sweep(f, tmp_path / "out", workers=2, log=lambda m: None)
    df = query(
        tmp_path / "out",
        'SELECT "transport.protocol" AS p, count(*) AS n, median(fct_s) AS median_fct FROM flows GROUP BY 1 ORDER BY 1',
    )
    assert list(df["p"]) == ["dctcp", "tcp"]
    total = int(df["n"].sum())
    assert total == sum(int(x) for x in runs["flows_total"])
    r = query(tmp_path / "out", "SELECT count(*) AS n FROM runs WHERE status = 'done'")
    assert int(r["n"][0]) == 2
    assert main(["query", str(tmp_path / "out"), "SELECT count(*) AS n FROM flows"]) == 0
    assert str(total) in capsys.readouterr().out
    assert main(["query", str(tmp_path / "out"), "SELECT nope FROM flows"]) == 2
    assert "fctlab query: error: query:" in capsys.readouterr().err
    assert main(["query", str(tmp_path), "SELECT 1"]) == 2


SLOW = """seeds = 6
[axes]
"transport.protocol" = ["tcp", "dctcp"]
"stop_time" = ["400ms"]
"workloads.0.until" = ["300ms"]
"""


def _count_done(out: Path) -> int:
    d = out / "flows"
    return len(list(d.glob("run_id=*"))) if d.is_dir() else 0


def test_a_dask_cluster_losing_a_worker_still_stores_every_run_once(tmp_path):
    distributed = pytest.importorskip("distributed", reason="Dask's distributed package is not installed")
    import os
    import signal
    import threading
    import time

    f = _write(tmp_path, SLOW)
    out = tmp_path / "out"
    killed = {}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        pids = client.run(os.getpid)

        def kill_one():
            t0 = time.monotonic()
            while _count_done(out) < 2 and time.monotonic() - t0 < 60:
                time.sleep(0.05)
            addr, pid = sorted(pids.items())[0]
            os.kill(pid, signal.SIGKILL)
            killed["at"] = _count_done(out)

        th = threading.Thread(target=kill_one, daemon=True)
        th.start()
        runs = sweep(f, out, cluster=cluster.scheduler_address, retries=2, log=lambda m: None)
        th.join(timeout=70)
    assert "at" in killed and killed["at"] < 12, "the worker was not killed while the sweep ran"
    assert (runs["status"] == "done").all(), runs[["run_id", "status", "error"]]
    dirs = sorted(d.name for d in (out / "flows").iterdir())
    assert dirs == sorted(f"run_id={r}" for r in runs["run_id"]), dirs  # each run once, nothing else
    # the same results as a local run
    local = sweep(f, tmp_path / "local", workers=2, log=lambda m: None)
    for r in local["run_id"]:
        a = pq.read_table(out / "flows" / f"run_id={r}" / "flows.parquet")
        assert a.equals(pq.read_table(tmp_path / "local" / "flows" / f"run_id={r}" / "flows.parquet")), r


def test_a_killed_local_sweep_resumes_with_only_the_missing_runs(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    f = _write(tmp_path, SLOW)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "fctlab.cli", "sweep", str(f), "--out", str(out), "--workers", "1"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "python"))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        t0 = time.monotonic()
        while _count_done(out) < 3 and time.monotonic() - t0 < 120 and proc.poll() is None:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9` would
        proc.wait(timeout=10)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # and whatever it left running
        except ProcessLookupError:
            pass
    before = _count_done(out)
    assert 3 <= before < 12, before
    assert not (out / "runs.parquet").exists()
    lines = []
    runs = sweep(f, out, workers=2, log=lines.append)
    assert f"12 runs ({before} already done), {12 - before} to run" in lines[0], lines[0]
    assert (runs["status"] == "done").all()
    assert sorted(d.name for d in (out / "flows").iterdir()) == sorted(f"run_id={r}" for r in runs["run_id"])


def _workers_of(pid: int) -> list[int]:
    """The sweep's run processes: its children started by multiprocessing's spawn (not its
    resource tracker)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and "multiprocessing" in cmd and "resource_tracker" not in cmd:
            out.append(int(d.name))
    return out


@pytest.mark.parametrize("kills", [1, 2])
def test_a_killed_worker_costs_only_its_own_run(tmp_path, kills):
    """`kill -9` on a run's process mid-sweep: that run goes round again (one retry each), no
    queued or other running run spends one, the sweep exits 0, and its results are those of a
    clean sweep, byte for byte."""
    import os
    import signal
    import subprocess
    import sys
    import time

    f = _write(tmp_path, SLOW)
    clean = tmp_path / "clean"
    sweep(f, clean, workers=2, log=lambda m: None)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "fctlab.cli", "sweep", str(f), "--out", str(out), "--workers", "2", "--retries", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    killed, seen = [], set()
    try:
        deadline = time.monotonic() + 120
        while len(killed) < kills and time.monotonic() < deadline and proc.poll() is None:
            new = [w for w in _workers_of(proc.pid) if w not in seen]
            seen.update(new)
            # a run's process that has just started (still starting Python), once some runs are done
            if new and _count_done(out) >= 2 + 3 * len(killed):
                try:
                    os.kill(new[0], signal.SIGKILL)
                    killed.append(new[0])
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=10)
    assert len(killed) == kills, "the sweep ended before the kills"
    assert proc.returncode == 0, stderr
    log = stdout + stderr
    assert log.count("retrying") == kills and "killed by SIGKILL" in log, log
    assert _flows(out).keys() == _flows(clean).keys()
    for k, t in _flows(out).items():
        assert t.equals(_flows(clean)[k]), k


def test_report_of_a_sweep_plots_a_metric_with_intervals_over_seeds(tmp_path, capsys):
    import pandas as pd

    f = _write(
        tmp_path,
        'seeds = 3\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n"workloads.0.load" = [0.3, 0.6]\n'
        '"workloads.0.sizes" = ["10KB"]\n',
    )  # small flows: every run completes some
    sweep(f, tmp_path / "out", workers=2, log=lambda m: None)
    assert (
        main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep"), "--format", "md", "--metric", "fct_p99"])
        == 0
    )
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "p99 FCT (s) against load, by protocol" in md  # (the numeric key is the x axis)
    assert (tmp_path / "rep" / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(pd.read_csv(tmp_path / "rep" / "sweep.csv")) == 4
    from fctlab.report.sweep import sweep_table

    t, _, x, by, _, kind = sweep_table(tmp_path / "out", "fct_median", "workloads.0.load", "transport.protocol")
    assert (x, by, kind) == ("workloads.0.load", "transport.protocol", "fct")
    assert len(t) == 4 and (t["seeds"] == 3).all() and (0 < t["lo"]).all() and (t["lo"] <= t["mean"]).all()
    # the point is the geometric mean over seeds of the per-run medians
    from fctlab.sweeps import query

    q = query(
        tmp_path / "out",
        "SELECT exp(avg(ln(m))) AS m FROM (SELECT run_id, median(fct_s) AS m FROM flows "
        'WHERE completed AND "transport.protocol" = \'tcp\' AND "workloads.0.load" = 0.3 GROUP BY run_id)',
    )
    row = t[(t["transport.protocol"] == "tcp") & (t["workloads.0.load"] == 0.3)]
    assert float(row["mean"].iloc[0]) == pytest.approx(float(q["m"][0]))
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep2"), "--metric", "nope"]) == 2
    assert "--metric 'nope': not known" in capsys.readouterr().err


def test_a_failing_run_is_retried_then_recorded_and_the_sweep_finishes(tmp_path):
    import concurrent.futures as cf

    from fctlab import sweeps as S

    f = _write(tmp_path, '[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    sw = S.load_sweep(f)
    bad = sw.runs[1].run_id
    calls = []

    def task(base, overrides, run_id, values, seed, out):
        calls.append(run_id)
        if run_id == bad:
            raise RuntimeError("worker ran out of memory")
        return S._run_one(base, overrides, run_id, values, seed, out)

    out = tmp_path / "out"
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        failures = S._execute(sw, sw.runs, out, None, None, 2, S._Progress(2, lambda m: None), task=task, executor=ex)
    assert failures == {bad: "RuntimeError: worker ran out of memory"}
    assert calls.count(bad) == 3 and calls.count(sw.runs[0].run_id) == 1  # one try and two retries
    runs = S._write_runs_table(sw, out, failures)
    st = dict(zip(runs["run_id"], runs["status"]))
    assert st == {sw.runs[0].run_id: "done", bad: "failed"}
    assert runs.set_index("run_id").loc[bad, "error"] == "RuntimeError: worker ran out of memory"


def test_the_package_level_functions(tmp_path):
    import fctlab

    f = _write(tmp_path, "")
    runs = fctlab.sweep(f, tmp_path / "out", workers=1, log=lambda m: None).runs
    assert list(runs["status"]) == ["done"]
    assert int(fctlab.query(tmp_path / "out", "SELECT count(*) AS n FROM runs")["n"][0]) == 1


def test_query_errors_are_one_line_and_paths_are_data(tmp_path, capsys):
    """Empty SQL, an --out in a missing folder and a store whose path holds a quote: one line
    each, exit 2; the quote is part of the path, not of the SQL."""
    from fctlab.sweeps_query import configure, run as run_query
    import argparse

    f = _write(tmp_path, 'seeds = 1\n[axes]\n"transport.protocol" = ["tcp"]\n')
    store = tmp_path / "it's here"
    sweep(f, store, workers=1, log=lambda m: None)
    assert len(query(store, "SELECT * FROM runs")) == 1

    def cli(*argv) -> int:
        p = argparse.ArgumentParser()
        configure(p)
        return run_query(p.parse_args([str(a) for a in argv]))

    capsys.readouterr()
    assert cli(store, "") == 2
    assert cli(store, "SELECT 1 AS a", "--out", tmp_path / "missing" / "x.csv") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no SQL given" in err[0] and "cannot write" in err[1], err
    assert cli(store, "SELECT count(*) AS n FROM flows", "--out", tmp_path / "n.csv") == 0
    assert "wrote 1 rows" in capsys.readouterr().out


def test_a_sweep_from_a_plain_script_needs_no_guard(tmp_path):
    """`fctlab.sweep()` at a script's top level, with no `if __name__ == "__main__":`: every
    run completes (the workers do not run the script again)."""
    import os
    import subprocess
    import sys

    f = _write(tmp_path, "seeds = 2\n")
    script = tmp_path / "study.py"
    script.write_text(
        "import fctlab\n"
        f"runs = fctlab.sweep({str(f)!r}, {str(tmp_path / 'out')!r}, workers=2).runs\n"
        "print('statuses', sorted(set(runs['status'])))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "python"))
    p = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert p.returncode == 0 and "statuses ['done']" in p.stdout, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "bootstrapping" not in p.stderr, p.stderr


def test_a_sweep_whose_runs_all_fail_says_so_and_query_says_there_is_nothing(tmp_path, capsys):
    """Every run failing (here: `flows` in the store is a file, so no run can write) gives one
    line with the first error and exit 1; `query` on that store says it has no finished runs."""
    f = _write(tmp_path, "seeds = 2\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "flows").write_text("not a directory")
    assert main(["sweep", str(f), "--out", str(out), "--workers", "2", "--retries", "0"]) == 1
    err = capsys.readouterr().err
    assert "fctlab sweep: every run failed (2); the first error: " in err and "Not a directory" in err, err
    assert "no results: see failed.json" in err and "Traceback" not in err
    assert main(["query", str(out), "SELECT count(*) FROM flows"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"fctlab query: error: {out}: the store has no finished runs yet (runs.parquet lists 2; failed.json says why they failed)"
    ), err
    # The runs table still answers.
    assert main(["query", str(out), "SELECT count(*) AS n FROM runs"]) == 0


def test_query_prints_integer_sums_as_integers(tmp_path, capsys):
    f = _write(tmp_path, "")
    sweep(f, tmp_path / "out", workers=1, log=lambda m: None)
    df = query(tmp_path / "out", "SELECT sum(completed::int) AS done, count(*) AS n FROM flows")
    assert str(df["done"].dtype) == "Int64" and 0 <= df["done"][0] <= df["n"][0], df
    capsys.readouterr()
    assert main(["query", str(tmp_path / "out"), "SELECT sum(completed::int) AS done FROM flows"]) == 0
    assert ".0" not in capsys.readouterr().out


def test_runs_are_named_by_their_swept_values():
    from fctlab.sweeps import Run

    r = Run(values=(("transport.protocol", "dctcp"), ("workloads.0.load", 0.5)), seed=3, run_id="0123456789abcdef")
    assert r.label() == "protocol=dctcp load=0.5 seed 3 [01234567]"
    # Two keys ending alike keep their whole names.
    r = Run(
        values=(("network.buffer", "50pkt"), ("network.nic_buffer", "9pkt"), ("a.load", 1), ("b.load", 2)),
        seed=1,
        run_id="ff",
    )
    assert r.label() == "buffer=50pkt nic_buffer=9pkt a.load=1 b.load=2 seed 1 [ff]"


def test_the_default_sweep_report_is_slowdown_by_size_against_load_one_line_per_protocol(tmp_path, capsys):
    """Mean and p99 slowdown per size bucket against the load, one line per protocol (every
    other swept key is a line, never averaged in); the report's table is what a query of the
    store gives, run by run and over the seeds."""
    import numpy as np
    import pandas as pd

    f = _write(
        tmp_path,
        'seeds = 2\n[axes]\n"workloads.0.load" = [0.3, 0.6]\n"transport.protocol" = ["tcp", "dctcp"]\n'
        '"network.buffer" = ["50pkt", "100pkt"]\n',
    )
    out = tmp_path / "out"
    sweep(f, out, workers=2, log=lambda m: None)
    # (the load and the buffer are both numeric: the x axis is chosen)
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--format", "md", "--x", "load"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Slowdown by flow size against load" in md and "fewer than 3 seeds" in md, md[:500]
    assert (tmp_path / "rep" / "slowdown_by_size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "rep" / "fct_cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "fct_cdf.png" in md
    t = pd.read_csv(tmp_path / "rep" / "slowdown_by_size.csv")
    # One line per (protocol, buffer): 4 lines x 2 loads per bucket and statistic.
    assert t.groupby(["bucket", "stat"]).size().eq(8).all(), t
    assert (t["seeds"] == 2).all()
    # Against the store: the small flows' mean slowdown of each run, then over the seeds.
    q = query(
        out,
        'SELECT run_id, "workloads.0.load" AS load, "transport.protocol" AS protocol, '
        '"network.buffer" AS buffer, avg(fct_s / ideal_fct_s) AS s FROM flows '
        "WHERE completed AND size_bytes < 100000 GROUP BY ALL",
    )
    for (load, proto, buf), part in q.groupby(["load", "protocol", "buffer"]):
        row = t[
            (t["workloads.0.load"] == load)
            & (t["transport.protocol"] == proto)
            & (t["network.buffer"] == buf)
            & (t["bucket"] == "small")
        ]
        row = row[row["stat"] == "mean"]
        assert float(row["gmean"].iloc[0]) == pytest.approx(np.exp(np.log(part["s"]).mean()))
        assert row["lo"].isna().all() and row["hi"].isna().all()  # (two seeds: no interval)
    # --where selects; a key it does not know is one line.
    assert main(["report", str(out), "--out", str(tmp_path / "r2"), "--where", "protocol=tcp", "--x", "load"]) == 0
    t2 = pd.read_csv(tmp_path / "r2" / "slowdown_by_size.csv")
    # (protocol no longer varies: the lines are the buffers.)
    assert set(t2["network.buffer"]) == {"50pkt", "100pkt"} and "transport.protocol" not in t2.columns
    assert len(t2) == len(t) // 2
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "r3"), "--where", "colour=red"]) == 2
    assert "--where 'colour=red': expected KEY=VALUE with a swept key" in capsys.readouterr().err
    assert np.isfinite(t["gmean"]).all()


def test_the_store_keeps_links_and_the_monitors_the_base_asks_for(tmp_path):
    """Each run's links table, and its queue samples when the base scenario has [monitor],
    are in the store beside its flows, tagged with its swept values, and queryable."""
    (tmp_path / "base.toml").write_text(BASE + '[monitor]\nqueue_interval = "1ms"\nqueues = ["all"]\ndrops = true\n')
    f = tmp_path / "sweep.toml"
    f.write_text('base = "base.toml"\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    out = tmp_path / "out"
    runs = sweep(f, out, workers=2, log=lambda m: None)
    links = query(
        out, 'SELECT "transport.protocol" AS p, run_id, count(*) AS ports, sum(drops) AS d FROM links GROUP BY ALL'
    )
    assert sorted(links["p"]) == ["dctcp", "tcp"] and set(links["run_id"]) == set(runs["run_id"])
    one = fctlab_run_links(out, runs["run_id"][0])
    assert int(links.set_index("run_id").loc[runs["run_id"][0], "ports"]) == one
    q = query(out, 'SELECT "transport.protocol" AS p, count(*) AS n FROM queues GROUP BY ALL')
    assert len(q) == 2 and (q["n"] > 0).all()
    # each run's drop trace has a row per drop its links counted
    d = query(out, "SELECT run_id, count(*) AS n FROM drops GROUP BY ALL").set_index("run_id")["n"]
    per_run = links.set_index("run_id")["d"]
    assert {r: int(d.get(r, 0)) for r in per_run.index} == {r: int(v) for r, v in per_run.items()}
    # the runs table has each run's timeouts and retransmits (over its flows) after its drops
    cols = list(runs.columns)
    assert cols[cols.index("drops") + 1 : cols.index("drops") + 3] == ["timeouts", "retransmits"], cols
    sums = query(out, "SELECT run_id, sum(timeouts) AS t, sum(retransmits) AS r FROM flows GROUP BY ALL")
    sums = sums.set_index("run_id")
    for _, row in runs.iterrows():
        assert (row["timeouts"], row["retransmits"]) == tuple(int(v) for v in sums.loc[row["run_id"], ["t", "r"]])


def fctlab_run_links(out: Path, run_id: str) -> int:
    return pq.read_table(out / "flows" / f"run_id={run_id}" / "links.parquet").num_rows


def test_fctlab_query_loads_neither_pandas_nor_pyarrow(tmp_path):
    """`fctlab query` needs DuckDB only: it starts in well under a second (pandas and pyarrow
    cost most of a second to import)."""
    import subprocess
    import sys

    f = _write(tmp_path, "")
    sweep(f, tmp_path / "out", workers=1, log=lambda m: None)
    code = (
        "import sys; from fctlab.cli import main; "
        f"rc = main(['query', {str(tmp_path / 'out')!r}, 'SELECT count(*) AS n FROM flows']); "
        "print('heavy', [m for m in ('pandas', 'pyarrow') if m in sys.modules], rc)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "heavy [] 0" in p.stdout, (p.stdout, p.stderr)


def test_a_metric_spec_takes_a_statistic_and_a_size_filter(tmp_path, capsys):
    import numpy as np

    from fctlab.metrics import parse_size
    from fctlab.report.sweep import parse_metric, sweep_table

    assert (parse_size("100KB"), parse_size("1.5MB"), parse_size("64KiB"), parse_size("1500")) == (
        100_000,
        1_500_000,
        65_536,
        1500,
    )
    f = _write(tmp_path, 'seeds = 2\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    out = tmp_path / "out"
    sweep(f, out, workers=2, log=lambda m: None)
    t, _, x, _, label, _ = sweep_table(out, "slowdown:p99:size<100KB", "protocol", None)
    assert x == "transport.protocol" and label == "p99 slowdown (FCT / ideal), flows of size < 100KB"
    q = query(
        out,
        'SELECT "transport.protocol" AS p, run_id, quantile_cont(fct_s / ideal_fct_s, 0.99) AS s FROM flows '
        "WHERE completed AND size_bytes < 100000 GROUP BY ALL",
    )
    for p, part in q.groupby("p"):
        assert float(t.set_index("transport.protocol").loc[p, "mean"]) == pytest.approx(
            np.exp(np.log(part["s"]).mean())
        )
    for bad, want in (
        ("slowdown:p42x", "statistic 'p42x'"),
        ("fct:p99:size<1XB", "'1XB' is not a size"),
        ("rtt:mean", "column 'rtt'"),
    ):
        with pytest.raises(ValueError, match=want):
            parse_metric(bad)


def test_several_base_scenarios_are_one_more_axis_each_run_from_its_own_file(tmp_path):
    # Two networks that cannot be one base with overrides: ECN marking keys exist only for
    # queue = "ecn", priority keys only for queue = "priority".
    (tmp_path / "dctcp.toml").write_text(
        BASE.replace('buffer = "100pkt"', 'buffer = "100pkt"\nqueue = "ecn"\necn_threshold = "20pkt"').replace(
            'min_rto = "1ms"', 'min_rto = "1ms"\nprotocol = "dctcp"'
        )
    )
    (tmp_path / "homa.toml").write_text(
        BASE.replace('buffer = "100pkt"', 'buffer = "100pkt"\nqueue = "priority"\nnic_queue = "pfabric"').replace(
            'min_rto = "1ms"', 'protocol = "homa"'
        )
    )
    f = tmp_path / "sweep.toml"
    f.write_text('base = ["dctcp.toml", "homa.toml"]\n[axes]\n"workloads.0.load" = [0.3, 0.5]\n')
    sw = load_sweep(f)
    assert sw.keys == ["base", "workloads.0.load"]
    assert [dict(r.values)["base"] for r in sw.runs] == ["dctcp", "dctcp", "homa", "homa"]
    assert all("base" not in o for r in sw.runs for o in r.overrides())
    assert len({r.run_id for r in sw.runs}) == 4
    f.write_text('base = ["dctcp.toml", "homa.toml"]\n[axes]\n"workloads.0.load" = [0.3]\n')
    runs = sweep(f, tmp_path / "out", workers=2, log=lambda m: None)
    assert list(runs["status"]) == ["done"] * 2
    protocols = query(tmp_path / "out", "SELECT DISTINCT base, protocol FROM flows ORDER BY base")
    assert [tuple(r) for r in protocols.itertuples(index=False)] == [("dctcp", "dctcp"), ("homa", "homa")]
    # An axis value that one base rejects names that base; two bases of one name are an error.
    f.write_text('base = ["dctcp.toml", "homa.toml"]\n[axes]\n"network.ecn_threshold" = ["10pkt"]\n')
    with pytest.raises(SweepError, match=r'axes."network.ecn_threshold" = "10pkt" \(base homa\)'):
        load_sweep(f)
    (tmp_path / "sub").mkdir()
    shutil.copy(tmp_path / "homa.toml", tmp_path / "sub" / "homa.toml")
    f.write_text('base = ["homa.toml", "sub/homa.toml"]\n')
    with pytest.raises(SweepError, match="two base scenarios are named 'homa'"):
        load_sweep(f)
    f.write_text("base = []\n")
    with pytest.raises(SweepError, match="required: the base scenario file"):
        load_sweep(f)


def test_a_seed_axis_is_refused_and_long_values_are_cut(tmp_path):
    """A run's seed comes from `seeds`, so an axis named "seed" (which `seeds` would override
    silently) is an error; a value of 100,000 characters is shown by its first 40 and length."""
    demo = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "demo.toml"
    (tmp_path / "b.toml").write_text(demo.read_text())
    f = tmp_path / "s.toml"
    f.write_text('base = "b.toml"\n[axes]\n"seed" = [1, 2]\n')
    with pytest.raises(SweepError, match=r'axes\."seed": a run\'s seed comes from `seeds`'):
        load_sweep(f)
    f.write_text(f'base = "b.toml"\n[axes]\n"network.link_delay" = ["{"9" * 100_000}"]\n')
    with pytest.raises(SweepError) as e:
        load_sweep(f)
    assert "(100002 characters)" in str(e.value) and len(str(e.value)) < 400, str(e.value)[:500]
