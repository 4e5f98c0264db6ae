"""fctlab beside another simulator: one scenario run by both, on the identical flow list, over
several seeds, with a side-by-side report (docs/crosscheck.md).

    fctlab crosscheck SCENARIO --against ns2 --out DIR [--seeds N] [--set key=value ...]

Layout of DIR: ``seed-S/fctlab/`` and ``seed-S/ns2/`` are run directories in the flows-table
format (``flows.parquet``, ``links.parquet``, ``summary.json``; the ns-2 one also holds the Tcl
script and ns's output), ``crosscheck.json`` the statistics, ``report.md`` and ``report.html``
the report with its plots.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from ..api import RunResult, ScenarioError, ScenarioLike, _schema
from ..api import run as fctlab_run
from .. import plan as plan_mod
from ..plan import Unsupported as Unsupported  # the error the functions below raise
from ..plan import rows_for
from . import htsim, ns2, ns3
from . import testbed as kernel_testbed

#: Targets by name. A target is a module with
#:   PRODUCER: str                      the simulator's name as the report prints it
#:   check(plan) -> None                raises Unsupported naming the key it cannot run
#:   run(plan, seed, out) -> (flows rows, links rows, summary, cwnd rows[, pfc rows])
#:                                      (pfc rows: a lossless run's pauses, or None)
#:   Error: type                        what `run` raises when the simulator fails (one line)
#: Rows are dicts with the columns the simulator measured; `other_result` fills the rest.
#: Optional: WALL_NOTE (what a seed's wall time holds), seed_notes(summaries) -> lines
#: for the report (the testbed: the kernel and the machine's load per seed), and
#: pairs_flows(plan) -> bool (False when the target routes flows otherwise than fctlab), and
#: LOSSLESS = True (check() runs or refuses lossless plans itself).
TARGETS = {"ns2": ns2, "htsim": htsim, "ns3": ns3, "testbed": kernel_testbed}


@dataclass
class SeedRun:
    seed: int
    fctlab_dir: Path
    other_dir: Path
    fctlab_wall_s: float
    other_wall_s: float
    #: the crosscheck's own work: translating, writing the script, reading ns's output, writing both runs
    own_wall_s: float


@dataclass
class Crosscheck:
    """The outcome: the runs per seed, the statistics and the report's path."""

    scenario: str
    against: str
    out: Path
    runs: list
    stats: dict
    notes: list


def other_result(
    flows_rows: list,
    link_rows: list,
    summary: dict,
    fctlab_flows,
    cwnd_rows: Sequence = (),
    producer: str = "ns-2.35",
    pfc_rows: Optional[Sequence] = None,
):
    """The other simulator's results as a :class:`fctlab.api.RunResult` in fctlab's format: the
    columns it does not report are null; `ideal_fct_s` (a property of the flow and its path) and
    `deadline_s` (of the flow) are fctlab's."""
    import pyarrow as pa  # lazy: pyarrow costs 80 ms of start-up

    ids = fctlab_flows.column("flow_id").to_pylist()
    ideal = dict(zip(ids, fctlab_flows.column("ideal_fct_s").to_pylist()))
    deadline = dict(zip(ids, fctlab_flows.column("deadline_s").to_pylist()))
    for r in flows_rows:
        r["ideal_fct_s"] = ideal.get(r["flow_id"])
        r["deadline_s"] = deadline.get(r["flow_id"])
        r["slowdown"] = (r["fct_s"] / r["ideal_fct_s"]) if r["fct_s"] is not None and r["ideal_fct_s"] else None
        r.setdefault("scheduler", "none")
        r["conn_finish_s"] = r["finish_s"]
    fs, ls, cs = _schema("flows"), _schema("links"), _schema("cwnd")
    cwnd = pa.Table.from_pylist(rows_for(cs, cwnd_rows, where=f"{producer} cwnd"), schema=cs) if cwnd_rows else None
    pfc = None
    if pfc_rows is not None:  # a lossless run's pauses and resumes (pfc.parquet)
        ps = _schema("pfc")
        pfc = pa.Table.from_pylist(rows_for(ps, list(pfc_rows), where=f"{producer} pfc"), schema=ps)
    return RunResult(
        pa.Table.from_pylist(rows_for(fs, flows_rows, where=f"{producer} flows"), schema=fs),
        pa.Table.from_pylist(rows_for(ls, link_rows, where=f"{producer} links"), schema=ls),
        None,
        summary,
        cwnd_table=cwnd,
        pfc_table=pfc,
        producer=producer,
    )


def _write_other(
    flows_rows: list,
    link_rows: list,
    summary: dict,
    fctlab_flows,
    out: Path,
    cwnd_rows: Sequence = (),
    producer="",
    pfc_rows: Optional[Sequence] = None,
) -> None:
    other_result(flows_rows, link_rows, summary, fctlab_flows, cwnd_rows, producer, pfc_rows).write(out)


def run_other(scenario: ScenarioLike, fctlab_result, *, against: str = "ns2", out, set: Sequence[str] = ()):
    """`scenario` with the overrides `set` (the seed among them) run by `against` on the flows
    fctlab ran for `fctlab_result` (the same scenario and overrides), written into `out` and
    returned as a :class:`fctlab.api.RunResult` (``summary["notes"]``: what it runs
    differently). Raises Unsupported naming the key it cannot run, or ns2.NsError."""
    target = TARGETS[against]
    p = plan_mod.load(scenario, list(set))
    if not getattr(target, "LOSSLESS", False):  # a target that runs lossless ports checks them itself
        plan_mod.refuse_lossless(p, target.PRODUCER)
    plan_mod.refuse_scaled_red(p, target.PRODUCER)
    plan_mod.refuse_balancing(p, target.PRODUCER, getattr(target, "BALANCING", ()))
    target.check(p)
    # a target may add a fifth table: the pauses and resumes of a lossless run (pfc.parquet rows)
    flows_rows, link_rows, summary, cwnd_rows, *more = target.run(p, p.seed, Path(out))
    summary["scenario_file"] = str(scenario) if not isinstance(scenario, dict) else "<dict>"
    summary["overrides"] = list(set)
    summary["notes"] = list(p.notes)
    res = other_result(flows_rows, link_rows, summary, fctlab_result.flows_table, cwnd_rows, target.PRODUCER, *more[:1])
    res.write(out)
    return res


def crosscheck(
    scenario: ScenarioLike,
    *,
    against: str = "ns2",
    out,
    seeds: int = 5,
    first_seed: int = 1,
    set: Sequence[str] = (),
    unset: Sequence[str] = (),
    log=None,
) -> Crosscheck:
    """Runs `scenario` in fctlab and in `against` for seeds first_seed .. first_seed+seeds-1,
    writes both runs per seed and the report into `out`.

    Raises ScenarioError (Unsupported names the key ns-2 cannot run) or ns2.NsError."""
    from .report import DEFAULT_WALL_NOTE, write_report  # lazy: crosscheck.report loads numpy (45 ms of start-up)

    if against not in TARGETS:
        raise ScenarioError(f"--against: {against!r} is not a crosscheck target (known: {', '.join(TARGETS)})")
    if seeds < 1:
        raise ScenarioError(f"--seeds: {seeds}: need at least one seed")
    target = TARGETS[against]
    out = Path(out)
    say = log or (lambda msg: None)
    runs, notes, summaries = [], [], []
    for k in range(seeds):
        seed = first_seed + k
        t_seed = time.perf_counter()
        sets = list(set) + [f"seed={seed}"]
        p = plan_mod.load(scenario, sets, unset)
        if not getattr(target, "LOSSLESS", False):  # a target that runs lossless ports checks them itself
            plan_mod.refuse_lossless(p, target.PRODUCER)
        plan_mod.refuse_scaled_red(p, target.PRODUCER)
        plan_mod.refuse_balancing(p, target.PRODUCER, getattr(target, "BALANCING", ()))
        target.check(p)
        notes = p.notes
        d = out / f"seed-{seed}"
        say(f"seed {seed}: fctlab ({len(p.flows)} flows)")
        t0 = time.perf_counter()
        res = fctlab_run(scenario, set=sets, unset=list(unset))
        fw = time.perf_counter() - t0
        res.write(d / "fctlab")
        say(f"seed {seed}: {against}")
        t0 = time.perf_counter()
        flows_rows, link_rows, summary, cwnd_rows, *more = target.run(p, seed, d / against)
        ow = time.perf_counter() - t0
        summary["scenario_file"] = str(scenario) if not isinstance(scenario, dict) else "<dict>"
        summary["overrides"] = sets
        _write_other(
            flows_rows, link_rows, summary, res.flows_table, d / against, cwnd_rows, target.PRODUCER, *more[:1]
        )
        summaries.append(summary)
        own = time.perf_counter() - t_seed - fw - ow
        runs.append(SeedRun(seed, d / "fctlab", d / against, fw, ow, own))
    name = str(scenario) if not isinstance(scenario, dict) else "<dict>"
    if hasattr(target, "seed_notes"):
        notes = list(notes) + target.seed_notes(summaries)
    # a target whose routing can differ from fctlab's says when flows cannot be paired
    pairs = getattr(target, "pairs_flows", lambda plan: True)(p)
    wall_note = getattr(target, "WALL_NOTE", DEFAULT_WALL_NOTE)
    stats = write_report(name, against, out, runs, p, notes, wall_note, pairs_flows=pairs)
    return Crosscheck(name, against, out, runs, stats, notes)


def suite(
    directory, *, against: str = "ns2", out, seeds: int = 5, first_seed: int = 1, set: Sequence[str] = (), log=None
) -> list:
    """Every scenario of `directory` (``*.toml``) crosschecked into ``out/<name>/``, and
    ``out/suite.md``: one table of every graded figure of every set-up."""
    from .report import suite_table  # lazy: crosscheck.report loads numpy (45 ms of start-up)

    files = sorted(Path(directory).glob("*.toml"))
    if not files:
        raise ScenarioError(f"{directory}: no scenario files (*.toml) in this directory")
    say = log or (lambda msg: None)
    results = []
    for f in files:
        say(f"{f.stem}")
        results.append(
            crosscheck(f, against=against, out=Path(out) / f.stem, seeds=seeds, first_seed=first_seed, set=set, log=log)
        )
    table = suite_table(results, against, directory, out, seeds)
    (Path(out) / "suite.md").write_text(table)
    return results


def configure(parser) -> None:
    parser.add_argument(
        "scenario", help="scenario file (TOML or JSON), or a directory: every *.toml in it, and a table of all"
    )
    parser.add_argument(
        "--against",
        required=True,
        choices=sorted(TARGETS),
        help="the other simulator (ns2: ns-2.35's `ns`; htsim: built by `fctlab peers build htsim`; ns3: ns-3.44 "
        "from its PyPI wheel, built on first use; testbed: this machine's Linux TCP in namespaces, as root)",
    )
    parser.add_argument("--out", required=True, help="output directory: both runs per seed and the report")
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds, from --first-seed on (default 5)")
    parser.add_argument("--first-seed", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    parser.add_argument("--unset", action="append", metavar="KEY", help="remove a scenario key (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the verdict lines")


def run(args) -> int:
    log = None if args.quiet else (lambda msg: print(f"[crosscheck] {msg}", file=sys.stderr, flush=True))
    try:
        if Path(args.scenario).is_dir():
            results = suite(
                args.scenario,
                against=args.against,
                out=args.out,
                seeds=args.seeds,
                first_seed=args.first_seed,
                set=list(args.set or []),
                log=log,
            )
            from .report import verdict_lines  # lazy: crosscheck.report loads numpy (45 ms of start-up)

            for cc in results:
                print(f"{Path(cc.scenario).stem}: {verdict_lines(cc.stats)[-1]}")
            print(f"table: {Path(args.out) / 'suite.md'}")
            return 0
        cc = crosscheck(
            args.scenario,
            against=args.against,
            out=args.out,
            seeds=args.seeds,
            first_seed=args.first_seed,
            set=list(args.set or []),
            unset=list(args.unset or []),
            log=log,
        )
    except ScenarioError as e:
        print(f"fctlab crosscheck: error: {e}", file=sys.stderr)
        return 2
    except tuple(t.Error for t in TARGETS.values()) as e:
        print(f"fctlab crosscheck: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"fctlab crosscheck: error: cannot write to {args.out}: {e}", file=sys.stderr)
        return 2
    from .report import verdict_lines  # lazy: crosscheck.report loads numpy (45 ms of start-up)

    for line in verdict_lines(cc.stats):
        print(line)
    print(f"report: {Path(args.out) / 'report.html'} (and report.md)")
    return 0
