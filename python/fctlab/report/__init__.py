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

from .._argparse import OneLineParser
from .numfmt import one_line
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


def main_report(argv: list[str]) -> int:
    """``fctlab report DIR [DIR ...] --out OUTDIR [--format html|md] [--title T]``.

    Parameters
    ----------
    argv : list of str
        Arguments after ``report``.

    Returns
    -------
    int
        0 on success (the report's path is printed), 2 on bad input (a
        missing run directory or file, an unreadable file, bad arguments),
        with a one-line message on stderr.
    """
    parser = OneLineParser(
        prog="fctlab report",
        description="Write an HTML or Markdown report (tables and PNG plots) over run directories.",
    )
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="run directory written by `fctlab run`")
    parser.add_argument("--out", required=True, metavar="OUTDIR",
                        help="output directory for the report and its PNG files (created if needed)")
    parser.add_argument("--format", choices=("html", "md"), default="html",
                        help="report format (default: html, self-contained)")
    parser.add_argument("--title", default=None, metavar="T", help="report title")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already reported on one line
        return int(exc.code or 0)
    try:
        path = write_report(args.dirs, args.out, title=args.title, fmt=args.format)
    except (ValueError, OSError) as exc:
        print(f"fctlab report: error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(path)
    return 0
