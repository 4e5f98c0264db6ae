"""`fctlab reproduce PAPER`: rerun a paper's simulations and write a report that compares
fctlab's numbers with the paper's.

Papers: ``atcp`` (Adaptive TCP; see docs/reproduce_atcp.md), ``thesis`` (Munir's thesis,
chapters 3 and 4: SDC, RACS and RCP; see docs/reproduce_thesis.md), ``schedtcp``
(non-intrusive scheduling of TCP flows; see docs/reproduce_schedtcp.md), ``pfabric``
(pFabric's normalized FCTs against load; see docs/reproduce_pfabric.md), ``pias`` (PIAS's
FCTs against load beside DCTCP and pFabric; see docs/reproduce_pias.md), ``homa`` (Homa's
slowdown by message size beside pFabric and PIAS; see docs/reproduce_homa.md), ``d3`` (D3's
deadline benchmark beside RCP and TCP; see docs/reproduce_d3.md) and ``d2tcp`` (D2TCP's missed
deadlines against fan-in beside DCTCP and D3; see docs/reproduce_d2tcp.md).

    fctlab reproduce atcp [--quick] [--out DIR] [--items 1,2,7] [--budget SECONDS] [--workers N | --cluster ADDRESS]

The report (``DIR/report.md``, ``DIR/report.html``), its PNG figures and ``results.json``
are written into ``DIR``. Progress goes to stderr. Exit status: 0 when the report was
written, 2 for bad arguments (one line on stderr), 130 when interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..cli import main


__all__ = ["main_reproduce", "configure", "run", "PAPERS", "default_scenario_dir"]

PAPERS = ("atcp", "thesis", "schedtcp", "pfabric", "pias", "homa", "d3", "d2tcp")


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
    p.add_argument("paper", help="the paper to reproduce: " + ", ".join(PAPERS))
    p.add_argument("--quick", action="store_true", help="shorter runs (a few minutes in total); noisier numbers")
    p.add_argument("--out", default=None, help="output directory (default: out/reproduce_<paper>[_quick])")
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
        "--cluster",
        default=None,
        metavar="ADDRESS",
        help="run the items on a Dask scheduler, tcp://HOST:PORT (its workers must see the output directory)",
    )


def main_reproduce(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab reproduce`` with the arguments after ``reproduce``; returns the exit status."""
    return main(["reproduce", *(sys.argv[1:] if argv is None else argv)])


def run(args) -> int:
    """Runs ``fctlab reproduce``: 0 when the report was written, 2 for bad arguments, 130
    when interrupted."""
    try:
        if args.paper not in PAPERS:
            raise _ArgError(f"unknown paper {args.paper!r} (known: {', '.join(PAPERS)})")
        spec = importlib.import_module(f".{args.paper}", __name__).paper()
        all_items = sorted(spec.items)
        items = _parse_items(args.items, all_items) if args.items is not None else all_items
        if args.workers is not None and args.workers < 1:
            raise _ArgError("--workers: expected 1 or more")
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
        run_paper(
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
    except SweepError as e:
        print(f"fctlab reproduce: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
