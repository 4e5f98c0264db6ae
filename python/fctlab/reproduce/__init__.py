"""`fctlab reproduce PAPER`: rerun a paper's simulations and write a report that compares
fctlab's numbers with the paper's.

Papers: ``atcp`` (Adaptive TCP; see docs/reproduce_atcp.md), ``thesis`` (Munir's thesis,
chapters 3 and 4: SDC, RACS and RCP; see docs/reproduce_thesis.md), ``schedtcp``
(non-intrusive scheduling of TCP flows; see docs/reproduce_schedtcp.md), ``pfabric``
(pFabric's normalized FCTs against load; see docs/reproduce_pfabric.md), ``pias`` (PIAS's
FCTs against load beside DCTCP and pFabric; see docs/reproduce_pias.md), ``homa`` (Homa's
slowdown by message size beside pFabric and PIAS; see docs/reproduce_homa.md), ``d3`` (D3's
deadline benchmark beside RCP and TCP; see docs/reproduce_d3.md), ``d2tcp`` (D2TCP's missed
deadlines against fan-in beside DCTCP and D3; see docs/reproduce_d2tcp.md) and ``hpcc`` (HPCC's
FCT slowdown by flow size and PFC pauses beside DCQCN, TIMELY and DCTCP on a lossless fabric;
see docs/reproduce_hpcc.md) and ``ndp`` (NDP's permutation throughput and incast completion
beside DCTCP over a 432-node FatTree; see docs/reproduce_ndp.md).

    fctlab reproduce atcp [--quick] [--out DIR] [--items 1,2,7] [--budget SECONDS] [--workers N | --cluster ADDRESS]
    fctlab reproduce --claims [PAPER] [--check] [--out FILE]

The report (``DIR/report.md``, ``DIR/report.html``), its PNG figures and ``results.json``
are written into ``DIR``. Progress goes to stderr. Exit status: 0 when the report was
written, 2 for bad arguments (one line on stderr), 130 when interrupted.

``--claims`` writes the claims ledger (``docs/claims.md``, or ``--out FILE``) from the claims of
the papers' ``expected.toml`` and their stored results, and prints the counts per paper (see
:mod:`fctlab.reproduce.claims`); with a paper, it prints that paper's section instead. With
``--check`` it writes nothing and exits 1 when the ledger is not what it would write.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..cli import main
from . import stored


__all__ = ["main_reproduce", "configure", "run", "PAPERS", "default_scenario_dir"]

PAPERS = ("atcp", "thesis", "schedtcp", "pfabric", "pias", "homa", "d3", "d2tcp", "hpcc", "ndp")


class _ArgError(Exception):
    pass


def default_scenario_dir(paper: str) -> Path:
    """``scenarios/papers/<paper>`` of the source tree (the package lives in
    ``python/fctlab``), or of the current directory when that does not exist."""
    here = Path(__file__).resolve().parents[3] / "scenarios" / "papers" / paper
    if here.is_dir():
        return here
    return Path.cwd() / "scenarios" / "papers" / paper


def _parse_items(text: str, valid: Sequence[int]) -> list:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) not in valid:
            raise _ArgError(f"--items: expected item numbers among {', '.join(map(str, valid))}, got {part!r}")
        if int(part) not in out:
            out.append(int(part))
    if not out:
        raise _ArgError("--items: no item given")
    return out


def configure(p) -> None:
    """The arguments of ``fctlab reproduce PAPER [--quick] [--out DIR] [--items ...]``."""
    p.description = "Rerun a paper's simulations and write a report comparing fctlab's numbers with the paper's."
    p.add_argument("paper", nargs="?", help="the paper to reproduce: " + ", ".join(PAPERS))
    p.add_argument(
        "--docs",
        action="store_true",
        help="render the reproduction docs (docs/src -> docs) from the stored full runs, and run nothing",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="with --docs or --claims: write nothing; fail when a doc (the ledger) differs from its rendering or a "
        "stored run is stale",
    )
    p.add_argument("--quick", action="store_true", help="shorter runs (a few minutes in total); noisier numbers")
    p.add_argument(
        "--out",
        default=None,
        help="output directory (default: out/reproduce_<paper>[_quick]); with --claims, the ledger file (default: docs/claims.md)",
    )
    p.add_argument("--items", default=None, help="comma-separated item numbers to run (default: all)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="do not start new items after this much wall-clock time; they are reported as not run",
    )
    p.add_argument("--scenarios", default=None, metavar="DIR", help="directory of the paper's scenario files")
    p.add_argument("--workers", type=int, default=None, help="run the items in this many local processes (default 1)")
    p.add_argument(
        "--record",
        action="store_true",
        help="store the full run's rows and figures in docs/results/<paper>.json (the reproduction docs render from it)",
    )
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="run the items on a Dask scheduler, tcp://HOST:PORT (its workers must see the output directory)",
    )
    p.add_argument(
        "--claims",
        action="store_true",
        help="write the claims ledger (docs/claims.md) from the stored results and print the counts per paper; "
        "with a paper, print its section",
    )


def main_reproduce(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab reproduce`` with the arguments after ``reproduce``; returns the exit status."""
    return main(["reproduce", *(sys.argv[1:] if argv is None else argv)])


def _record(args, result: dict, out: Path) -> None:
    command = f"fctlab reproduce {args.paper}" + (f" --items {args.items}" if args.items else "")
    try:
        kept = stored.record(args.paper, result, out, command)
    except (stored.StoreError, OSError) as e:
        raise _ArgError(f"--record: {e}") from None
    print(
        f"fctlab reproduce {args.paper}: stored items {', '.join(map(str, kept)) or '(none)'} in "
        f"{stored.results_path(args.paper)}",
        file=sys.stderr,
    )


def _docs(args) -> int:
    """``fctlab reproduce --docs [--check]``: 0 when every doc is (or now is) its rendering
    from current stored runs, 1 otherwise (each problem on a line of its own)."""
    from .docs import render_all  # lazy: rendering loads the runner (numpy, pandas, the sweeps)

    problems = render_all(check=args.check)
    for p in problems:
        print(f"fctlab reproduce --docs: {p}", file=sys.stderr)
    if not problems:
        print("fctlab reproduce --docs: " + ("every doc is current" if args.check else "rendered"), file=sys.stderr)
    return 1 if problems else 0


def run(args) -> int:
    """Runs ``fctlab reproduce``: 0 when the report was written, 2 for bad arguments, 130
    when interrupted."""
    if args.claims:
        return _run_claims(args)
    if args.docs:
        if args.paper:
            print("fctlab reproduce: error: --docs renders every paper's doc: give no paper", file=sys.stderr)
            return 2
        return _docs(args)
    try:
        if args.check:
            raise _ArgError("--check goes with --docs or --claims")
        if not args.paper:
            raise _ArgError(f"give a paper ({', '.join(PAPERS)}), or --docs, or --claims")
        if args.paper not in PAPERS:
            raise _ArgError(f"unknown paper {args.paper!r} (known: {', '.join(PAPERS)})")
        spec = importlib.import_module(f".{args.paper}", __name__).paper()
        all_items = sorted(spec.items)
        items = _parse_items(args.items, all_items) if args.items is not None else all_items
        if args.workers is not None and args.workers < 1:
            raise _ArgError("--workers: expected 1 or more")
        if args.record and args.quick:
            raise _ArgError("--record: only full runs are stored (drop --quick)")
        if args.budget is not None and not args.budget > 0:
            raise _ArgError("--budget: expected a positive number of seconds")
        scen = Path(args.scenarios) if args.scenarios else default_scenario_dir(args.paper)
        if not (scen / "expected.toml").is_file() or not all((scen / f).is_file() for f in spec.required_files):
            raise _ArgError(f"--scenarios: {scen} does not hold the {args.paper} scenario files")
        out = (
            Path(args.out) if args.out else Path("out") / (f"reproduce_{args.paper}" + ("_quick" if args.quick else ""))
        )
        try:
            out.mkdir(parents=True, exist_ok=True)
            if not os.access(out, os.W_OK):
                raise OSError("not writable")
        except OSError as e:
            raise _ArgError(f"--out: cannot write to {out}: {e}")
    except _ArgError as e:
        print(f"fctlab reproduce: error: {e}", file=sys.stderr)
        return 2

    from ..sweeps import SweepError  # lazy: the sweeps and the items load pyarrow, pandas (330 ms of start-up)
    from .common import stderr_log
    from .runner import run_paper

    try:
        result = run_paper(
            spec,
            items,
            args.quick,
            out,
            scen,
            stderr_log,
            budget_s=args.budget,
            workers=args.workers,
            cluster=args.cluster,
        )
        if args.record:
            _record(args, result, out)
    except (SweepError, _ArgError) as e:
        print(f"fctlab reproduce: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def _run_claims(args) -> int:
    """``fctlab reproduce --claims [PAPER] [--check] [--out FILE]``: 0 when written (or current), 1
    when ``--check`` finds the ledger out of date, 2 for bad arguments or claims."""
    claims = importlib.import_module(".claims", __name__)
    try:
        if not args.claims:
            raise _ArgError("--check: only with --claims")
        others = [o for o, v in (("--quick", args.quick), ("--items", args.items), ("--budget", args.budget)) if v]
        others += [o for o, v in (("--scenarios", args.scenarios), ("--workers", args.workers)) if v is not None]
        others += ["--cluster"] if args.cluster is not None else []
        if others:
            raise _ArgError(f"{others[0]}: not with --claims")
        if args.paper is not None and args.paper not in claims.PAPERS:
            raise _ArgError(f"--claims: no claims ledger for {args.paper!r} (ledgers: {', '.join(claims.PAPERS)})")
        if args.paper is not None and args.check:
            raise _ArgError("--check: checks the whole ledger, without a paper")
        papers = (args.paper,) if args.paper else claims.PAPERS
        text, outcomes = claims.render(papers=papers)
    except (_ArgError, claims.ClaimsError, claims.ExpectedError) as e:
        print(f"fctlab reproduce: error: {e}", file=sys.stderr)
        return 2
    ledger = Path(args.out) if args.out else claims.ledger_path()
    if args.check:
        if ledger.is_file() and ledger.read_text(encoding="utf-8") == text:
            return 0
        print(f"fctlab reproduce: {ledger} is not what `fctlab reproduce --claims` writes now", file=sys.stderr)
        return 1
    for paper, outs in outcomes.items():
        print(f"{paper}: {claims.count_line(outs)}")
    if args.paper:
        print()
        print(text, end="")
        return 0
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        ledger.write_text(text, encoding="utf-8")
    except OSError as e:
        print(f"fctlab reproduce: error: --out: cannot write {ledger}: {e}", file=sys.stderr)
        return 2
    print(f"wrote {ledger}")
    return 0
