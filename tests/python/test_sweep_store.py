"""The sweep store verifies what it serves: an interrupted run is not stored and a resume runs
it again; a changed byte anywhere in the store is found by `fctlab sweep verify`, `fctlab query`
and `fctlab report`, never served; a directory the sweep cannot write stops it in one line with
nothing run; run directories follow the umask."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fctlab.cli import main
from fctlab.sweeps import sweep, verify
from fctlab.sweepstore import MANIFEST, seal_run, seal_store

from test_sweep import BASE, _workers_of, _write

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
QUIET = {"log": lambda m: None}

#: One run of about 2 s of wall time (10 Gbps, 8 s simulated).
LONG_RUN = '[axes]\n"stop_time" = ["8s"]\n"workloads.0.until" = ["8s"]\n"network.link_rate" = ["10Gbps"]\n'


def _cli(*argv) -> list:
    return [sys.executable, "-m", "fctlab.cli", *[str(a) for a in argv]]


def _run_dirs(out: Path) -> list:
    return sorted(d.name for d in (out / "flows").glob("run_id=*")) if (out / "flows").is_dir() else []


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_a_run_whose_worker_is_interrupted_is_not_stored_and_a_resume_runs_it(tmp_path, sig):
    f = _write(tmp_path, LONG_RUN)
    out = tmp_path / "out"
    cmd = _cli("sweep", f, "--out", out, "--workers", "1", "--retries", "0")
    # SIGINT at its default in the sweep and its workers, as on a terminal, even when this test
    # runs from a background job (which starts with SIGINT ignored, and Python then installs
    # no handler: the signal would go unnoticed)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, preexec_fn=_default_sigint
    )
    try:
        # the run's process, once it has loaded the simulator (its run starts right after)
        deadline = time.monotonic() + 30
        worker = None
        while worker is None and time.monotonic() < deadline and proc.poll() is None:
            for w in _workers_of(proc.pid):
                try:
                    if "_core" in Path(f"/proc/{w}/maps").read_text():
                        worker = w
                except OSError:
                    pass
            time.sleep(0.02)
        assert worker is not None, "the run's process did not start"
        time.sleep(0.8)  # mid-run (its run lasts about 2 s)
        os.kill(worker, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 1, err
    assert ("interrupted at" if sig == signal.SIGINT else "killed by SIGKILL") in err, err
    assert _run_dirs(out) == [], "an interrupted run was stored"
    assert verify(out) == []  # a whole store, of no run
    lines = []
    runs = sweep(f, out, workers=1, log=lines.append)
    assert "1 runs (0 already done), 1 to run" in lines[0], lines
    assert list(runs["status"]) == ["done"] and len(_run_dirs(out)) == 1
    assert runs["interrupted"].tolist() == [False] and verify(out) == []


def _flip(path: Path, rng: random.Random) -> int:
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    data[at] ^= rng.randrange(1, 256)
    path.write_bytes(bytes(data))
    return at


ANSWERS = (
    "SELECT * FROM runs ORDER BY run_id",
    "SELECT * FROM flows ORDER BY run_id, flow_id",
    "SELECT * FROM links ORDER BY ALL",
)


def _answers(store: Path) -> list:
    from fctlab.sweeps_query import execute

    return [execute(store, sql)[1].fetchall() for sql in ANSWERS]


def test_no_changed_byte_in_the_store_is_served(tmp_path, capsys):
    """30 random byte changes across every file of a small store (seeded): each is found by
    `fctlab sweep verify`, refused by `fctlab query` and `fctlab report` in one line, or leaves
    every answer the same. Then `fctlab sweep` writes again what was damaged."""
    f = _write(tmp_path, 'seeds = 2\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    clean = tmp_path / "clean"
    sweep(f, clean, workers=2, **QUIET)
    want = _answers(clean)
    files = sorted(p for p in clean.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"runs.parquet", "failed.json", MANIFEST, "flows.parquet", "summary.json"}
    rng = random.Random(20240611)
    found = same = 0
    for i in range(30):
        store = tmp_path / f"s{i}"
        shutil.copytree(clean, store)
        victim = store / rng.choice(files).relative_to(clean)
        at = _flip(victim, rng)
        problems = verify(store)
        capsys.readouterr()
        rc_query = main(["query", str(store), "SELECT count(*) FROM runs"])
        rc_report = main(["report", str(store), "--out", str(tmp_path / f"r{i}"), "--format", "md"]) if problems else 0
        err = capsys.readouterr().err
        if problems:
            found += 1
            assert any(str(victim) in p or str(store / MANIFEST) in p for p in problems), (victim, problems)
            assert rc_query == 2 and rc_report == 2, (victim, at, err)
            assert len(err.strip().splitlines()) == 2 and "Traceback" not in err, err
            assert main(["sweep", "verify", str(store)]) == 1
        else:  # nothing the store serves changed
            same += 1
            assert rc_query == 0 and _answers(store) == want, (victim, at)
        shutil.rmtree(store)
    assert found + same == 30 and found > 0
    # `fctlab sweep` runs again the run a problem names, and the store is whole
    store = tmp_path / "again"
    shutil.copytree(clean, store)
    victim = sorted(store.glob("flows/run_id=*/flows.parquet"))[1]
    _flip(victim, rng)
    capsys.readouterr()
    assert main(["sweep", "verify", str(store)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"{victim}: changed"), out
    assert out[0].endswith(f"run it again: fctlab sweep {f.resolve()} --out {store}"), out
    lines = []
    sweep(f, store, workers=1, log=lines.append)
    assert "4 runs (3 already done), 1 to run" in lines[1], lines
    assert verify(store) == [] and _answers(store)[1:] == want[1:]  # (runs: the wall times differ)


def test_an_empty_or_unreadable_table_is_one_line_naming_it(tmp_path, capsys):
    f = _write(tmp_path, "")
    out = tmp_path / "out"
    sweep(f, out, workers=1, **QUIET)
    flows = next(out.glob("flows/run_id=*/flows.parquet"))
    flows.write_bytes(b"")
    capsys.readouterr()
    for sql in ("SELECT count(*) FROM runs", "SELECT max(size_bytes) FROM flows"):
        assert main(["query", str(out), sql]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"fctlab query: error: {flows}: 0 bytes"), err
    # a file whose checksum matches but that DuckDB cannot read (a store sealed over it)
    flows.write_bytes(b"not parquet")
    seal_run(flows.parent)
    seal_store(out, f.resolve(), [flows.parent.name[len("run_id=") :]])
    assert verify(out) == []
    for sql in ("SELECT count(*) FROM runs", "SELECT count(*) FROM flows"):
        assert main(["query", str(out), sql]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"fctlab query: error: {flows}: cannot read it: "), err


def _read_only(out: Path, cmd: list):
    """Runs `cmd` with `out` read-only: chmod for a user, a read-only bind mount in a mount
    namespace of its own for root (whom file modes do not stop)."""
    if os.geteuid() != 0:
        for d in (out, out / "flows"):
            d.chmod(0o555)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=ENV)
        finally:
            for d in (out, out / "flows"):
                d.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("running as root (file modes do not stop root's writes), and unshare is not installed")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@"'
    p = _in_mount_namespace(script, out, cmd)
    if p.returncode == 99 or "unshare failed" in p.stderr:
        pytest.skip(f"running as root, and a read-only bind mount is not permitted here: {p.stderr.strip()}")
    return p


def _in_mount_namespace(script: str, out: Path, cmd: list) -> subprocess.CompletedProcess:
    """`sh -c script sh OUT CMD...` in a mount namespace of its own (its mounts end with it)."""
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(out), *cmd],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )


def test_a_read_only_store_stops_the_sweep_in_one_line_with_nothing_run(tmp_path):
    f = _write(tmp_path, "seeds = 1\n")
    out = tmp_path / "out"
    sweep(f, out, workers=1, **QUIET)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    f.write_text('base = "base.toml"\nseeds = 3\n')  # two runs to go
    p = _read_only(out, _cli("sweep", f, "--out", out, "--workers", "2"))
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) == 1, p.stderr
    assert err[0].startswith(f"fctlab sweep: error: {out}: cannot write the sweep's results there: "), err
    assert ("Read-only file system" in err[0]) or ("Permission denied" in err[0]), err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written, nothing run


def test_a_full_store_stops_the_sweep_at_the_first_write(tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a small tmpfs (a full disk) needs root and unshare")
    f = _write(tmp_path, "seeds = 3\n")
    out = tmp_path / "out"
    out.mkdir()
    script = 'd="$1"; shift; mount -t tmpfs -o size=12k tmpfs "$d" || exit 99; "$@"; rc=$?; ls -A "$d/flows"; exit $rc'
    p = _in_mount_namespace(script, out, _cli("sweep", f, "--out", out, "--workers", "2"))
    if p.returncode == 99:
        pytest.skip(f"mounting a tmpfs is not permitted here: {p.stderr.strip()}")
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2, p.stderr
    assert err[-1].startswith(f"fctlab sweep: error: {out}: cannot write the sweep's results there: "), err
    assert "No space left on device" in err[-1] and "retrying" not in p.stderr and "Traceback" not in p.stderr
    assert p.stdout.strip() == "", "a run was stored (none fits), or a temporary directory left"


def test_output_directories_follow_the_umask(tmp_path):
    (tmp_path / "base.toml").write_text(BASE)
    f = _write(tmp_path, "")
    old = os.umask(0o002)
    try:
        assert main(["run", str(tmp_path / "base.toml"), "--out", str(tmp_path / "run"), "-q"]) == 0
        sweep(f, tmp_path / "sweep", workers=1, **QUIET)
        os.umask(0o027)
        assert main(["run", str(tmp_path / "base.toml"), "--out", str(tmp_path / "run027"), "-q"]) == 0
    finally:
        os.umask(old)
    mode = lambda p: p.stat().st_mode & 0o777  # noqa: E731
    assert mode(tmp_path / "run") == 0o775 and mode(tmp_path / "run" / "flows.parquet") == 0o664
    assert mode(tmp_path / "run027") == 0o750 and mode(tmp_path / "run027" / "summary.json") == 0o640
    run_dir = next((tmp_path / "sweep" / "flows").glob("run_id=*"))
    assert {mode(d) for d in (tmp_path / "sweep", tmp_path / "sweep" / "flows", run_dir)} == {0o775}
    assert {mode(p) for p in run_dir.iterdir()} == {0o664}
    assert pq.read_table(run_dir / "flows.parquet").num_rows > 0
