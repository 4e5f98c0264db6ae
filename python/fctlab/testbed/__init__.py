"""The namespace testbed: run a scenario on real Linux TCP (and the ATCP BPF congestion
control) over veth links, Linux bridges and TBF queues.

    fctlab testbed check
    fctlab testbed run SCENARIO.toml --out DIR [--set key=value ...] [--max-time SECONDS]
                       [--atcp-halving per-episode|per-window]
    fctlab testbed clean

See ``docs/testbed.md``.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from .hostprog import remove_stale_cgroup, stale_cgroups
from .netns import TestbedError, check_features, check_machine, delete_namespaces, stale_namespaces
from .runner import MAX_RUN_S, clean_after_killed_runs, run_testbed
from .._argparse import OneLineParser
from ..cli import main

__all__ = ["main_testbed", "run_testbed", "check_machine", "TestbedError"]


def configure(p) -> None:
    """The arguments of ``fctlab testbed check|run|clean``."""
    p.description = "Run scenarios on real Linux TCP in network namespaces."
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    sub.add_parser("check", help="exit 0 when this machine can run the testbed, else say why")
    r = sub.add_parser("run", help="run a scenario and write flows.parquet, links.parquet, summary.json")
    r.add_argument("scenario")
    r.add_argument("--out", required=True, metavar="DIR")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    r.add_argument(
        "--atcp-halving",
        choices=("per-episode", "per-window"),
        default=None,
        help="kernel ATCP: one halving per congestion episode or per window as reno "
        "(default: the scenario's ATCP key `halving`, itself per-episode by default)",
    )
    r.add_argument(
        "--max-time",
        type=float,
        default=MAX_RUN_S,
        metavar="SECONDS",
        help=f"bound on the traffic phase (default {MAX_RUN_S:.0f})",
    )
    sub.add_parser(
        "clean", help="delete namespaces, cgroups and temporary directories left by testbed runs that no longer exist"
    )


def main_testbed(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab testbed`` with the arguments after ``testbed``; returns the exit status."""
    return main(["testbed", *(sys.argv[1:] if argv is None else argv)])


def run(a) -> int:
    """Runs ``fctlab testbed``."""
    if a.cmd == "check":
        probs = check_machine()
        if probs:
            for pr in probs:
                print(f"testbed unavailable: {pr}")
            return 1
        print("testbed ok: namespaces, veth, bridge, tbf; TCP flows")
        feats = check_features()
        for key, what in (
            ("atcp", "ATCP flows (build tools)"),
            ("ecn", 'queue = "ecn" (BPF marker)'),
            ("priority", 'queue = "priority" (HTB bands, u32 on DSCP, BPF shared buffer)'),
            ("delay", "link delay (delay line)"),
        ):
            print(f"  {what}: {'ok' if feats[key] is None else 'unavailable: ' + feats[key]}")
        return 0
    if a.cmd == "clean":
        stale = stale_namespaces()
        left = delete_namespaces(stale)
        groups = stale_cgroups()
        for g in groups:
            if not remove_stale_cgroup(g):
                left.append(str(g))
        try:
            temp, unregistered = clean_after_killed_runs()
        except TestbedError as e:
            print(f"fctlab testbed clean: error: {e}", file=sys.stderr)
            return 1
        print(
            f"deleted {len(stale) + len(groups) - len(left)} stale namespace(s) and cgroup(s)"
            + (f" and {len(temp)} temporary director{'y' if len(temp) == 1 else 'ies'} of killed runs" if temp else "")
            + (f"; unregistered {', '.join(unregistered)}" if unregistered else "")
            + (f"; could not delete {', '.join(left)}" if left else "")
        )
        return 1 if left else 0
    progress = None
    if sys.stderr.isatty():

        def progress(elapsed: float, done: int, total: int) -> None:
            sys.stderr.write(f"\r  testbed: {elapsed:5.1f}s of traffic, {done}/{total} flows done   ")
            sys.stderr.flush()

    try:
        s = run_testbed(
            a.scenario, a.out, set=a.set, max_run_s=a.max_time, atcp_halving=a.atcp_halving, progress=progress
        )
    except TestbedError as e:
        print(f"fctlab testbed run: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; namespaces removed", file=sys.stderr)
        return 130
    finally:
        if progress is not None:
            sys.stderr.write("\r" + " " * 60 + "\r")
    marks = f", {s['ecn_marks']} ECN marks" if s.get("ecn_threshold") else ""
    print(
        f"{s['scenario_name']}: {s['flows_completed']} of {s['flows_total']} flows completed in "
        f"{s['sim_time_s']:.3f}s, {s['drops']} drops{marks}; results in {a.out}"
    )
    for note in s.get("notes", []):
        if "delay" in note:
            print(f"  note: {note}")
    for k, v in s["flow_errors"].items():
        print(f"  flow {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main_testbed())
