"""Parameter sweeps: ``fctlab sweep SWEEP.toml --out DIR`` and :func:`sweep` (``fctlab.sweep``).

A sweep file names a base scenario and the values to vary::

    base = "scenario.toml"          # relative to the sweep file
    seeds = 3                       # seeds 1, 2, 3 (or a list: [1, 7, 9])

    [axes]                          # every combination (grid product)
    "transport.protocol" = ["tcp", "dctcp"]
    "workloads.0.load" = [0.3, 0.5, 0.7]

    [zip]                           # lists that vary together (same length)
    "network.buffer" = ["50pkt", "100pkt"]
    "network.ecn_threshold" = ["10pkt", "20pkt"]

Every run is the base scenario with one value of each axis, one element of the zipped lists
and one seed, as ``--set`` overrides. ``base`` may list several scenario files (the same flows
under protocols that need different networks, say): each is then one more axis, ``base``,
whose values are the files' names without ``.toml``. All runs are validated before any starts: a bad axis is
reported with the scenario error it causes, naming the axis and the value.

Each run has a stable id: a hash of the resolved scenario (its text and overrides) and the
seed. A run writes its files into a temporary directory, flushes them to the disk, writes last
a manifest of their sizes and SHA-256 checksums, and renames the directory into place; a run
whose simulation was interrupted is not stored. A sweep that is stopped and started again runs
only the runs that are not stored whole (missing, or failing their manifest), and a partial
result is never taken for a complete one. Runs execute in a pool of worker processes (all
cores by default), one simulation per task, or on a Dask cluster (``--cluster tcp://HOST:PORT``)
through the same ``concurrent.futures`` interface. A failed run is retried up to
``retries`` times, then recorded as failed with its error; the sweep finishes and lists them.
A directory the sweep cannot write (read-only, not permitted, full) stops it, with no retry.

The store: ``DIR/runs.parquet`` (one row per run: ``run_id``, ``status``, ``error``, the swept
values, ``seed``, the run's summary fields and ``wall_s``) and ``DIR/flows/run_id=<id>/flows.parquet``
(each run's flows with its swept values and seed as columns): one Parquet dataset that
``fctlab query DIR "SQL"`` reads with DuckDB as the tables ``runs`` and ``flows``. The store's
``manifest.json`` holds the checksums of ``runs.parquet`` and of each run's manifest
(:mod:`fctlab.sweepstore`); ``fctlab sweep verify DIR``, ``fctlab query`` and ``fctlab report``
check every file against them.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import product
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Optional

import pyarrow as pa

from . import api
from ._extras import extra
from .api import _format_value
from .rundir import read_summary, write_run
from .sweeps_query import QueryError, execute
from .textfile import TextFileError, read_text
from .sweepstore import MANIFEST, WRITE_ERRNOS, check_run, check_store, fsync, seal_run, seal_store, write_atomic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["SweepError", "Sweep", "Run", "load_sweep", "sweep", "query", "verify", "configure", "run"]

_TOP_KEYS = ("base", "seeds", "axes", "zip")
# The swept key of a sweep over several base scenarios.
BASE_AXIS = "base"


class SweepError(ValueError):
    """A sweep file that cannot be run: names the file, the key and what was expected."""


def short_key(key: str, keys: list) -> str:
    """A swept key by the last part of its dotted name, or the whole name where two of `keys`
    would read alike (run labels, report axes and legends)."""
    last = key.rsplit(".", 1)[-1]
    return last if [k.rsplit(".", 1)[-1] for k in keys].count(last) == 1 else key


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its overrides (dotted key -> value) and seed."""

    values: tuple  # ((key, value), ...) in axis order
    seed: int
    run_id: str = ""

    def overrides(self) -> list:
        return [f"{k}={_format_value(v)}" for k, v in self.values if k != BASE_AXIS] + [f"seed={self.seed}"]

    def label(self) -> str:
        """The run as a reader knows it: its swept values by their keys' last part (the whole
        key where two would read alike) and its seed, then the start of its id."""
        keys = [k for k, _ in self.values]
        parts = [f"{short_key(k, keys)}={_cut(v)}" for k, v in self.values] + [f"seed {self.seed}"]
        return f"{' '.join(parts)} [{self.run_id[:8]}]"


@dataclass
class Sweep:
    path: Path
    base: Path
    axes: dict
    zipped: dict
    seeds: list
    runs: list = field(default_factory=list)
    # Several base scenarios: their names (the swept values of `base`) and files.
    bases: dict = field(default_factory=dict)

    @property
    def keys(self) -> list:
        return ([BASE_AXIS] if self.bases else []) + list(self.axes) + list(self.zipped)

    def base_of(self, run: "Run") -> Path:
        """The scenario file a run starts from."""
        return self.bases.get(dict(run.values).get(BASE_AXIS), self.base)


def _err(path: Path, key: str, msg: str) -> SweepError:
    return SweepError(f"{path}: {key}: {msg}" if key else f"{path}: {msg}")


def _values(path: Path, table: str, key: str, v: Any) -> list:
    where = f'{table}."{key}"'
    if key == "seed":
        raise _err(path, where, "a run's seed comes from `seeds` (a count or a list: seeds = [1, 7, 9])")
    if not isinstance(v, list):
        raise _err(path, where, f"expected a list of values, got {type(v).__name__} {v!r}")
    if not v:
        raise _err(path, where, "empty list: give at least one value")
    for x in v:
        if isinstance(x, (dict, list)) and not (
            isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x)
        ):
            raise _err(path, where, f"{x!r}: a value must be a string, number, boolean or a list of those")
    return v


def load_sweep(path: "str | os.PathLike") -> Sweep:
    """Reads and checks a sweep file, and validates every run it describes (no run starts)."""
    p = Path(path)
    try:
        data = tomllib.loads(read_text(p, "sweep file"))
    except TextFileError as e:
        raise SweepError(str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{p}: not valid TOML: {e}") from None
    for k in data:
        if k not in _TOP_KEYS:
            raise _err(p, k, f"unknown key (known: {', '.join(_TOP_KEYS)})")
    bases = _bases(p, data.get("base"))
    base = next(iter(bases.values()))
    axes = data.get("axes", {})
    zipped = data.get("zip", {})
    for name, t in (("axes", axes), ("zip", zipped)):
        if not isinstance(t, dict):
            raise _err(p, name, "expected a table of dotted scenario keys to lists")
    axes = {k: _values(p, "axes", k, v) for k, v in axes.items()}
    zipped = {k: _values(p, "zip", k, v) for k, v in zipped.items()}
    both = set(axes) & set(zipped)
    if both:
        raise _err(p, f'zip."{sorted(both)[0]}"', "is also an axis: vary a key in one table only")
    if len({len(v) for v in zipped.values()}) > 1:
        lens = ", ".join(f'"{k}" has {len(v)}' for k, v in zipped.items())
        raise _err(p, "zip", f"the lists vary together and must have the same length ({lens})")
    seeds = data.get("seeds", 1)
    if isinstance(seeds, bool) or not isinstance(seeds, (int, list)):
        raise _err(p, "seeds", f"expected a number of seeds or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if not 1 <= seeds <= 100_000:
            raise _err(p, "seeds", f"expected 1 to 100000 seeds, got {seeds}")
        seeds = list(range(1, seeds + 1))
    elif not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise _err(p, "seeds", f"expected a non-empty list of seeds (non-negative integers), got {seeds!r}")
    sw = Sweep(p, base, axes, zipped, list(seeds), bases=bases if len(bases) > 1 else {})
    # Each axis value is checked on its own first, so that an error names the axis and the value.
    for table, t in (("axes", axes), ("zip", zipped)):
        for k, vs in t.items():
            for v in vs:
                for name, b in bases.items():
                    r = Run(((k, v),), sw.seeds[0])
                    try:
                        api.validate(str(b), set=r.overrides())
                    except api.ScenarioError as e:
                        on = f" (base {name})" if sw.bases else ""
                        raise _err(p, f'{table}."{k}" = {_show(v)}{on}', str(e)) from None
    zip_rows = list(zip(*zipped.values())) if zipped else [()]
    base_values = [((BASE_AXIS, name),) for name in sw.bases] or [()]
    for bv, combo in product(base_values, product(*axes.values())):
        for zrow in zip_rows:
            values = bv + tuple(zip(axes, combo)) + tuple(zip(zipped, zrow))
            for seed in sw.seeds:
                r = Run(values, seed)
                try:
                    info = api.validate(str(sw.base_of(r)), set=r.overrides())
                except api.ScenarioError as e:
                    shown = ", ".join(f"{k} = {_show(v)}" for k, v in values)
                    raise _err(p, f"run ({shown}, seed {seed})", str(e)) from None
                rid = hashlib.sha256(f"{info['scenario_sha256']}\n{seed}".encode()).hexdigest()[:16]
                sw.runs.append(Run(values, seed, rid))
    return sw


def _bases(p: Path, given: Any) -> dict:
    """The base scenario files of a sweep file, by name (the file name without ``.toml``)."""
    example = 'base = "scenario.toml", or a list of them'
    names = [given] if isinstance(given, str) else given
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise _err(p, "base", f"required: the base scenario file, e.g. {example}")
    bases: dict = {}
    for n in names:
        f = (p.parent / n).resolve()
        if not f.is_file():
            raise _err(p, "base", f"{n!r}: no such scenario file (looked for {f})")
        name = Path(n).name.removesuffix(".toml")
        if name in bases:
            raise _err(p, "base", f"two base scenarios are named {name!r}: give them different file names")
        bases[name] = f
    return bases


def _show(v: Any) -> str:
    return _cut(_format_value(v))


def _cut(v: Any) -> str:
    """A value as messages and progress lines show it: at most 40 characters, with its length."""
    text = str(v)
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


# ----------------------------------------------------------------------------- running


class RunInterrupted(RuntimeError):
    """A run whose simulation was stopped before its end (Ctrl-C or SIGINT in its process)."""


def _run_one(base: str, overrides: list, run_id: str, values: list, seed: int, out: str) -> dict:
    """Runs one simulation and stores it: its files are written into a temporary directory,
    flushed to the disk with a manifest of their checksums written last, and the directory is
    renamed into place. A run whose simulation did not reach its end is not stored. Executed in
    a worker process (or on a Dask worker)."""
    t0 = time.perf_counter()
    res = api.run(base, set=overrides)
    wall = time.perf_counter() - t0
    s = res.summary
    if s.get("interrupted"):
        raise RunInterrupted(
            f"interrupted at {s['sim_time_s']:.6g} s simulated ({s['flows_completed']} of {s['flows_total']} "
            "flows completed): not stored"
        )

    def tagged(t):
        """A result table with the run's swept values, seed and id after its own columns."""
        if t is None:
            return None
        n = t.num_rows
        for k, v in values:
            t = t.append_column(k, pa.array([v] * n))
        t = t.append_column("seed", pa.array([seed] * n, type=pa.int64()))
        return t.append_column("run_id", pa.array([run_id] * n))

    flows = tagged(res.flows_table)
    root = Path(out) / "flows"
    tmp = root / f".tmp-{run_id}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    # Everything the run measured: its links, and the monitors the base scenario asked for.
    write_run(
        tmp,
        "simulator",
        {**s, "run_id": run_id, "swept": dict(values)},
        flows,
        tagged(res.links_table),
        tagged(res.queues_table),
        tagged(res.cwnd_table),
        drops=tagged(res.drops_table),
        pfc=tagged(res.pfc_table),
        pcaps=[(c.name, c.data) for c in res.pcaps],
        pcap_hosts=res.pcap_hosts,
    )
    seal_run(tmp)
    final = root / f"run_id={run_id}"
    if final.exists():  # another attempt finished first: keep it
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, final)
        fsync(root)
    return {"run_id": run_id, "wall_s": wall}


def _write_error(e: BaseException) -> bool:
    """Whether `e` is a write that failed for the store's reason (read-only, no permission, no
    space), which stops the sweep rather than costing the run an attempt."""
    return isinstance(e, OSError) and e.errno in WRITE_ERRNOS


def _unwritable(out: Path, why: str) -> SweepError:
    return SweepError(f"{out}: cannot write the sweep's results there: {why}")


def _stored(out: Path, log: Callable[[str], None]) -> set:
    """The runs stored whole in `out` (each file as its manifest says). A run directory that is
    not whole is removed, so that its run runs again."""
    root = out / "flows"
    done = set()
    for d in sorted(root.glob("run_id=*")) if root.is_dir() else ():
        bad = check_run(d)
        if bad:
            log(f"fctlab sweep: {d / bad[0][0]}: {bad[0][1]}; running the run again")
            shutil.rmtree(d)
        else:
            done.add(d.name[len("run_id=") :])
    return done


def _probe(out: Path) -> None:
    """Fails (OSError) unless files can be written into `out` and reach the disk."""
    with tempfile.TemporaryFile(dir=out) as f:
        f.write(bytes(4096))
        f.flush()
        os.fsync(f.fileno())


class _Progress:
    def __init__(self, total: int, log: Callable[[str], None]):
        self.total, self.log = total, log
        self.done = self.failed = 0
        self.t0 = time.perf_counter()
        self.tty = sys.stderr.isatty()

    def update(self, what: str) -> None:
        el = time.perf_counter() - self.t0
        finished = self.done + self.failed
        left = self.total - finished
        eta = el / finished * left if finished else float("nan")
        line = (
            f"[{finished}/{self.total}] done {self.done}, failed {self.failed}, remaining {left}, "
            f"{el:.0f} s elapsed" + (f", about {eta:.0f} s left" if left and finished else "") + f": {what}"
        )
        if self.tty:
            print("\r" + line[:150].ljust(150), end="" if left else "\n", file=sys.stderr, flush=True)
        else:
            self.log(line)


def sweep(
    sweep_file: "str | os.PathLike",
    out: "str | os.PathLike",
    workers: Optional[int] = None,
    cluster: Optional[str] = None,
    retries: int = 1,
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
):
    """Runs the sweep of `sweep_file` into `out` (resuming: runs already there are skipped) and
    returns ``runs.parquet`` as a DataFrame."""
    sw = load_sweep(sweep_file)
    outp = Path(out)
    try:  # a directory the sweep cannot write stops it before any run
        outp.mkdir(parents=True, exist_ok=True)
        _probe(outp)
        done = _stored(outp, log)
    except OSError as e:
        raise _unwritable(outp, e.strerror or str(e)) from None
    todo = [r for r in sw.runs if r.run_id not in done]
    log(
        f"fctlab sweep: {len(sw.runs)} runs ({len(sw.runs) - len(todo)} already done), {len(todo)} to run"
        + (f" on {cluster}" if cluster else _local_workers(workers or os.cpu_count() or 1))
    )
    failures: dict = {}
    try:
        if todo:
            failures = _execute(sw, todo, outp, workers, cluster, retries, _Progress(len(todo), log))
        write_atomic(outp / "failed.json", lambda p: p.write_text(json.dumps(failures, indent=1, sort_keys=True)))
        runs = _write_runs_table(sw, outp, failures)
        seal_store(outp, sw.path.resolve(), list(runs["run_id"][runs["status"] == "done"]))
    except OSError as e:
        if not _write_error(e):
            raise
        raise _unwritable(outp, e.strerror or str(e)) from None
    finally:
        # what attempts that died (a killed worker, an interrupted sweep) left under temporary names
        for tmp in (outp / "flows").glob(".tmp-*") if (outp / "flows").is_dir() else ():
            shutil.rmtree(tmp, ignore_errors=True)
    if failures and len(failures) == len(sw.runs):
        first = sorted(failures.items())[0]
        log(f"fctlab sweep: every run failed ({len(failures)}); the first error: {first[0]}: {first[1]}")
    elif failures:
        log(
            f"fctlab sweep: {len(failures)} runs failed: "
            + "; ".join(f"{k}: {v}" for k, v in sorted(failures.items())[:5])
        )
    if len(failures) < len(sw.runs):
        log(f"fctlab sweep: wrote {outp / 'runs.parquet'} and {outp / 'flows'}")
    else:
        log(f"fctlab sweep: wrote {outp / 'runs.parquet'} (no results: see failed.json)")
    return runs


def _local_workers(n: int) -> str:
    return f" on {n} local worker" + ("" if n == 1 else "s")


def _executor(workers: Optional[int], cluster: Optional[str]):
    if cluster:
        with extra("cluster"):
            from distributed import Client  # lazy: optional (dask[distributed]), only for --cluster
        try:
            client = Client(cluster, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise SweepError(f"--cluster {cluster}: cannot reach the Dask scheduler: {e}") from None
        return client.get_executor(pure=False), client
    return None, None  # local: one process per run (_execute_local)


class _Ledger:
    """The runs' attempts: a finished run leaves the failures; a failed one goes round again
    until its retries are spent, then is recorded with its error."""

    def __init__(self, todo: list, retries: int, prog):
        self.attempts = {r.run_id: 0 for r in todo}
        self.failures: dict = {}
        self.retries, self.prog = retries, prog

    def done(self, r) -> None:
        self.prog.done += 1
        self.failures.pop(r.run_id, None)
        self.prog.update(f"{r.label()} done")

    def failed(self, r, msg: str) -> bool:
        """Records a failed attempt; True when the run is to be tried again."""
        self.attempts[r.run_id] += 1
        if self.attempts[r.run_id] <= self.retries:
            self.prog.update(f"{r.label()} failed ({msg}), retrying")
            return True
        self.failures[r.run_id] = msg
        self.prog.failed += 1
        self.prog.update(f"{r.label()} failed: {msg}")
        return False


def _child(conn, task: Callable, args: tuple) -> None:
    """A local worker: runs one run and reports ("ok", None), ("error", message), or
    ("write", message) for a write that failed for the store's reason (:func:`_write_error`)."""
    try:
        task(*args)
        conn.send(("ok", None))
    except BaseException as e:  # reported to the parent, which decides on a retry
        conn.send(("write" if _write_error(e) else "error", f"{type(e).__name__}: {e}".splitlines()[0]))
    finally:
        conn.close()


@contextlib.contextmanager
def _main_not_rerun(task: Callable):
    """Starts a spawned process without running the parent's main script again in it.

    A spawned process imports the parent's ``__main__`` (the script's path, or the module of
    ``python -m``) before it runs its target, so a plain script calling :func:`sweep` at its
    top level would start the sweep again in every worker (multiprocessing then refuses, and
    every run fails). The workers need nothing from the script: the target is fctlab's own
    function, so ``__main__`` is hidden while the process starts."""
    main = sys.modules.get("__main__")
    if main is None or getattr(task, "__module__", None) == "__main__":
        yield
        return
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    try:
        main.__dict__.pop("__file__", None)
        main.__spec__ = None
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _execute_local(sw: Sweep, todo: list, out: Path, workers: Optional[int], retries: int, prog, task) -> dict:
    """Runs `todo` in at most `workers` processes, one process per run (spawned, so no state
    is shared). A process that dies (killed, out of memory) costs its own run one attempt and
    no other run anything: queued runs stay queued and the others keep running."""
    ctx = mp.get_context("spawn")
    limit = workers or os.cpu_count() or 1
    ledger = _Ledger(todo, retries, prog)
    pending = list(todo)
    running: dict = {}  # process -> (run, connection)
    try:
        while pending or running:
            while pending and len(running) < limit:
                r = pending.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                args = (str(sw.base_of(r)), r.overrides(), r.run_id, list(r.values), r.seed, str(out))
                p = ctx.Process(target=_child, args=(send, task, args), daemon=True)
                with _main_not_rerun(task):
                    p.start()
                send.close()
                running[p] = (r, recv)
            wait([p.sentinel for p in running], timeout=1.0)
            for p in [p for p in running if not p.is_alive()]:
                p.join()
                r, recv = running.pop(p)
                try:  # a process killed before it reported leaves the pipe closed and empty
                    status, msg = recv.recv()
                except (EOFError, OSError):
                    status, msg = "error", f"its worker process died ({_exit_text(p.exitcode)})"
                recv.close()
                if status == "ok":  # its results are in place (a process killed after that lost nothing)
                    ledger.done(r)
                elif status == "write":  # no retry can write: the sweep stops (the others are stopped below)
                    raise _unwritable(out, msg)
                elif ledger.failed(r, msg):
                    pending.append(r)
    finally:
        for p in running:  # interrupted: stop what still runs
            p.terminate()
        for p in running:
            p.join(5)
    return ledger.failures


def _exit_text(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _execute(
    sw: Sweep,
    todo: list,
    out: Path,
    workers,
    cluster,
    retries: int,
    prog: _Progress,
    task: Callable = _run_one,
    executor=None,
) -> dict:
    """Runs `todo` (each through `task`, retried up to `retries` times); returns the failed runs
    and their errors. `executor` replaces the local pool or cluster (for tests)."""
    if executor is None and cluster is None:
        return _execute_local(sw, todo, out, workers, retries, prog, task)
    ledger = _Ledger(todo, retries, prog)
    pending = list(todo)
    ex, client = (executor, None) if executor is not None else _executor(workers, cluster)
    try:
        while pending:
            futs = {
                ex.submit(task, str(sw.base_of(r)), r.overrides(), r.run_id, list(r.values), r.seed, str(out)): r
                for r in pending
            }
            pending = []
            for f in cf.as_completed(futs):
                r = futs[f]
                try:
                    f.result()
                    ledger.done(r)
                except Exception as e:  # the run failed: retry a bounded number of times
                    # (a Dask worker lost mid-run has its tasks recomputed by Dask itself)
                    if _write_error(e):
                        raise _unwritable(out, f"{type(e).__name__}: {e}") from None
                    if ledger.failed(r, f"{type(e).__name__}: {e}".splitlines()[0]):
                        pending.append(r)
    finally:
        if client is not None:
            client.close()
        elif executor is None:
            ex.shutdown(wait=True, cancel_futures=True)
    return ledger.failures


def _with_flow_sums(row: dict, flows: Path) -> dict:
    """`row` with the run's timeouts and retransmits (summed over its flows) after its drops."""
    import pandas as pd  # lazy: pandas costs 250 ms of start-up

    sums = pd.read_parquet(flows, columns=["timeouts", "retransmits"]).sum()
    added = {k: int(sums[k]) for k in ("timeouts", "retransmits")}
    if "drops" not in row:
        return {**row, **added}
    out = {}
    for k, v in row.items():
        out[k] = v
        if k == "drops":
            out.update(added)
    return out


def _write_runs_table(sw: Sweep, out: Path, failures: dict):
    """Writes runs.parquet: a run is done when its directory is stored (its manifest written)."""
    import pandas as pd  # lazy: pandas costs 250 ms of start-up

    rows = []
    for r in sw.runs:
        row = {"run_id": r.run_id}
        row.update({k: v for k, v in r.values})
        row["seed"] = r.seed
        d = out / "flows" / f"run_id={r.run_id}" / "summary.json"
        if (d.parent / MANIFEST).is_file():
            summary = read_summary(d.parent)
            row["status"], row["error"] = "done", None
            # the figures of the run; what its producer could not measure (null) and the
            # nested swept values (already columns) stay out
            kept = {k: v for k, v in summary.items() if v is not None and not isinstance(v, dict)}
            row.update({f"summary_{k}" if k in row else k: v for k, v in kept.items()})
            row = _with_flow_sums(row, d.parent / "flows.parquet")
            row["wall_s"] = summary["wall_time_s"]
        else:
            row["status"] = "failed" if r.run_id in failures else "missing"
            row["error"] = failures.get(r.run_id)
        rows.append(row)
    df = pd.DataFrame(rows)
    write_atomic(out / "runs.parquet", lambda p: df.to_parquet(p, index=False))
    return df


# ----------------------------------------------------------------------------- query


def query(directory: "str | os.PathLike", sql: str):
    """Runs `sql` with DuckDB over a sweep's store (tables ``runs``, ``flows``, ``links``, and
    ``queues`` and ``cwnd`` when the base scenario sampled them, each row with its run's swept
    values, seed and run_id); returns a DataFrame."""
    try:
        _, result = execute(directory, sql)
        df = result.df()
    except QueryError as e:
        raise SweepError(str(e)) from None
    # Integer sums are HUGEINT in DuckDB and arrive as floats: give them back as integers.
    for name, kind, *_ in result.description:
        if str(kind) == "HUGEINT" and name in df.columns:
            col = df[name]
            if col.dtype.kind == "f" and (col.dropna() % 1 == 0).all() and col.abs().max(skipna=True) < 2**63:
                df[name] = col.astype("Int64")
    return df


def verify(directory: "str | os.PathLike") -> list:
    """Checks a sweep's store against the checksums it keeps (docs/sweeps.md): returns one line
    per file that is missing, changed or not in its manifest, naming the file (and so its run)
    and the command that writes it again; an empty list when the store is whole."""
    d = Path(directory)
    if not (d / "runs.parquet").is_file() and not (d / MANIFEST).is_file():
        raise SweepError(f"{d}: not a sweep directory (no runs.parquet)")
    return check_store(d)[0]


# ----------------------------------------------------------------------------- CLI


def configure(p) -> None:
    p.description = (
        "Run every combination of a base scenario's varied keys and seeds, on all cores or a Dask "
        "cluster, into a resumable results store; see docs/sweeps.md."
    )
    p.usage = "fctlab sweep SWEEP_FILE --out DIR [options] | fctlab sweep verify DIR"
    p.add_argument(
        "sweep_file",
        help="the sweep file (TOML: base, [axes], [zip], seeds); or `verify`, to check the files of the sweep "
        "directory DIR against their checksums (exit 1 when some fail)",
    )
    p.add_argument("directory", nargs="?", metavar="DIR", help=argparse.SUPPRESS)
    p.add_argument("--out", metavar="DIR", help="the sweep directory (created; a sweep there is resumed)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: all cores)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS", help="a Dask scheduler, tcp://HOST:PORT")
    p.add_argument(
        "--retries", type=int, default=1, help="attempts after a failure before a run is recorded as failed (default 1)"
    )


def _verify_cli(directory: Optional[str]) -> int:
    if directory is None:
        print("fctlab sweep verify: error: give the sweep directory: fctlab sweep verify DIR", file=sys.stderr)
        return 2
    try:
        problems = verify(directory)
    except SweepError as e:
        print(f"fctlab sweep verify: error: {e}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    if problems:
        print(f"fctlab sweep verify: {directory}: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"{directory}: every file matches its checksum")
    return 0


def run(args) -> int:
    if args.sweep_file == "verify" and args.out is None:
        return _verify_cli(args.directory)
    if args.directory is not None or args.out is None:
        what = f"unexpected argument {args.directory!r}" if args.directory is not None else "--out DIR is required"
        print(f"fctlab sweep: error: {what} (fctlab sweep SWEEP_FILE --out DIR)", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("fctlab sweep: error: --workers: expected 1 or more", file=sys.stderr)
        return 2
    try:
        runs = sweep(
            args.sweep_file, args.out, workers=args.workers, cluster=args.cluster, retries=max(0, args.retries)
        )
    except SweepError as e:
        print(f"fctlab sweep: error: {e}", file=sys.stderr)
        return 2
    return 1 if (runs["status"] != "done").any() else 0
