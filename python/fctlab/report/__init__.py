"""Reports over fctlab run directories.

:func:`write_report` turns one or more run directories (as written by
``fctlab run``) into an HTML or Markdown report with tables and PNG plots;
:func:`main_report` is the ``fctlab report`` command line. The report's
contents are described in ``docs/metrics.md``.

matplotlib is imported only when a report is drawn, so :func:`load_run` and
the rest of this package stay light.
"""

from __future__ import annotations

import sys

from ..cli import main
from ..numfmt import one_line
from .runs import REQUIRED_FLOW_COLUMNS, Run, RunLoadError, load_run
from .writer import SECTION_TITLES, write_report

__all__ = [
    "write_report",
    "main_report",
    "load_run",
    "Run",
    "RunLoadError",
    "REQUIRED_FLOW_COLUMNS",
    "SECTION_TITLES",
]


def configure(parser) -> None:
    """The arguments of ``fctlab report DIR [DIR ...] --out OUTDIR [--format html|md] [--title T]``."""
    parser.description = "Write an HTML or Markdown report (tables and PNG plots) over run directories."
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="run directory written by `fctlab run`")
    parser.add_argument(
        "--out",
        required=True,
        metavar="OUTDIR",
        help="output directory for the report and its PNG files (created if needed)",
    )
    parser.add_argument(
        "--format", choices=("html", "md"), default="html", help="report format (default: html, self-contained)"
    )
    parser.add_argument("--title", default=None, metavar="T", help="report title")
    sw = parser.add_argument_group("sweep directories (written by `fctlab sweep`; docs/sweeps.md)")
    sw.add_argument(
        "--metric",
        default="slowdown_by_size",
        help="what to plot: slowdown_by_size (default: mean and p99 slowdown per size bucket against --x), or one "
        "run-level metric: fct_p99, fct_median, fct_mean, slowdown_p99, COLUMN:STAT[:FILTER] over each run's "
        "completed flows (slowdown:p99:size<100KB, fct:mean:size>=1MB), or a numeric column of runs.parquet",
    )
    sw.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the runs with this swept value (repeatable)",
    )
    sw.add_argument(
        "--x", default=None, metavar="KEY", help="the swept key on the x axis (default: the first that varies)"
    )
    sw.add_argument(
        "--by", default=None, metavar="KEY", help="one line per value of this swept key (default: the next that varies)"
    )


def run(args) -> int:
    """Runs ``fctlab report``: 0 on success (the report's path is printed), 2 on bad input (a
    missing run directory or file, an unreadable file), with a one-line message on stderr."""
    from .sweep import is_sweep_dir, write_sweep_report  # lazy: it loads fctlab.sweeps, 12 ms that run directories skip

    sweep_opts = bool(args.x or args.by or args.where or args.metric != "slowdown_by_size")
    try:
        if len(args.dirs) == 1 and is_sweep_dir(args.dirs[0]):
            path = write_sweep_report(
                args.dirs[0],
                args.out,
                metric=args.metric,
                x=args.x,
                by=args.by,
                fmt=args.format,
                title=args.title,
                where=args.where,
            )
            print(path)
            return 0
        if sweep_opts:
            raise ValueError(
                "--metric, --x, --by and --where apply to a sweep directory (one DIR written by `fctlab sweep`)"
            )
        path = write_report(args.dirs, args.out, title=args.title, fmt=args.format)
    except (ValueError, OSError) as exc:
        print(f"fctlab report: error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(path)
    return 0


def main_report(argv: list[str]) -> int:
    """``fctlab report`` with the arguments after ``report``; returns the exit status."""
    return main(["report", *argv])
