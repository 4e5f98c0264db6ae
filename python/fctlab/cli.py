"""The ``fctlab`` command.

    fctlab run SCENARIO.toml --out DIR [--set key=value ...] [--sample-queues 100us]
    fctlab validate SCENARIO.toml [--set key=value ...]
    fctlab report DIR [DIR ...] --out OUTDIR
    fctlab compare DIR_A DIR_B
    fctlab bench [--quick]
    fctlab reproduce atcp [--quick] [--out DIR]
    fctlab kernel load|unload|status
    fctlab testbed check|run SCENARIO.toml --out DIR
    fctlab crosscheck SCENARIO.toml --against ns2 --out DIR [--seeds N]
    fctlab sweep SWEEP.toml --out DIR [--workers N]
    fctlab query DIR "SQL"
    fctlab sched send|recv ...

One argparse parser with a subcommand per command (:data:`COMMANDS`); ``fctlab COMMAND -h``
describes each.
Bad input exits with status 2 and one line naming the file, the key and what was expected.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import time
from typing import Optional, Sequence

from . import __version__, _core
from ._argparse import OneLineParser
from ._extras import MissingExtra
from .api import ScenarioError, _flows_stream, _run, router_assisted_protocols, validate
from .numfmt import count, duration, seconds
from .plan import load


def _fmt_s(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x >= 1:
        return f"{x:.3f}s"
    if x >= 1e-3:
        return f"{x * 1e3:.3f}ms"
    return f"{x * 1e6:.1f}us"


def _fmt_rate(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


def summary_table(res) -> str:
    """A short human-readable summary of a run."""
    s = res.summary
    lines = []
    state = "interrupted" if s.get("interrupted") else "done"
    lines.append(
        f"{s['scenario_name']} (seed {s['seed']}): {state} at {_fmt_s(s['sim_time_s'])} simulated "
        f"in {s['wall_time_s']:.3f}s wall, {_fmt_rate(s['events_per_s'])} events/s, "
        f"{_fmt_rate(s['data_packets_delivered_per_wall_s'])} data pkts/s"
    )
    lines.append(f"  flows      {s['flows_completed']} of {s['flows_total']} completed")
    # From the flows read in batches (pandas is not needed for a summary, and costs start-up
    # time; a batch at a time, the summary of ten million flows holds no more than one).
    from .flowstats import (
        COLUMNS,
        run_figures,
    )  # lazy: it loads pyarrow (80 ms of start-up, `fctlab validate`, `--help`)

    fs = run_figures(lambda: res.flows_batches(COLUMNS), s)
    lines.append(f"  {fs.headline()}" + (f", max {seconds(fs.fct.top)}" if fs.fct.n else ""))
    if fs.fct.n:
        lines.append(f"  slowdown   {fs.slowdown_text()}")
    if fs.long_lived and s["sim_time_s"] > 0:
        gp = [b * 8 / max(s["sim_time_s"] - (t0 or 0.0), 1e-12) for b, t0 in fs.long_lived]
        lines.append(
            f"  long-lived {len(gp)} flows, goodput mean {_fmt_rate(sum(gp) / len(gp))}bps, total {_fmt_rate(sum(gp))}bps"
        )
    lines.append(
        f"  network    {s['data_packets_delivered']} data packets delivered, {s['drops']} drops, "
        f"{s['ecn_marks']} ECN marks, retransmits {fs.retransmits}, timeouts {fs.timeouts} (all flows)"
    )
    return "\n".join(lines)


def _progress_printer(stream, stop_s: Optional[float]):
    """Progress on a terminal: a bar of the simulated time reached (of `stop_s`, or of the
    flows completed when the run has no stop time) and an estimate of the wall time left."""
    start = time.monotonic()

    def cb(sim_s: float, done: int, total: int) -> None:
        elapsed = time.monotonic() - start
        frac = min(sim_s / stop_s, 1.0) if stop_s else (done / total if total else 0.0)
        filled = int(frac * 24)
        left = f", ~{elapsed * (1 - frac) / frac:.0f}s left" if frac >= 0.02 else ""
        of = f" of {duration(stop_s)}" if stop_s else ""
        stream.write(
            f"\r  [{'#' * filled}{'.' * (24 - filled)}] {frac * 100:3.0f}%  simulated {duration(sim_s)}{of}, "
            f"{done}/{total} flows done, {elapsed:.0f}s{left}   "
        )
        stream.flush()

    return cb


def cmd_run(args) -> int:
    sets = list(args.set or [])
    if args.sample_queues:
        sets.append(f'monitor.queue_interval="{args.sample_queues}"')
    if args.trace_cwnd:
        sets.append(f'monitor.cwnd_interval="{args.trace_cwnd}"')
    if args.trace_drops:
        sets.append("monitor.drops=true")
    if args.pcap:
        sets.append("monitor.pcap=" + json.dumps(args.pcap))
    progress = None
    try:
        # Flows go to flows.parquet as they finish, not into memory.
        stream = _flows_stream(args.out)
    except OSError as e:
        print(f"fctlab run: error: cannot write results to {args.out}: {e}", file=sys.stderr)
        return 2
    try:
        try:
            if sys.stderr.isatty() and not args.quiet:
                # the stop time after overrides, for the bar (a scenario check: cheap next to the run)
                stop_s = validate(args.scenario, set=sets, unset=list(args.unset or []))["stop_time_s"]
                progress = _progress_printer(sys.stderr, stop_s)
            res = _run(args.scenario, sets, progress, 0.5, list(args.unset or []), flows_stream=stream)
        except ScenarioError as e:
            if progress:
                sys.stderr.write("\n")
            print(f"fctlab run: error: {e}", file=sys.stderr)
            return 2
        if progress:
            sys.stderr.write("\r" + " " * 110 + "\r")
        try:
            out = res.write(args.out)
        except OSError as e:
            print(f"fctlab run: error: cannot write results to {args.out}: {e}", file=sys.stderr)
            return 2
    finally:
        stream.discard()
    if not args.quiet:
        print(summary_table(res))
        files = "flows.parquet, links.parquet, summary.json" + (
            ", queues.parquet" if res.queues_table is not None else ""
        )
        files += ", cwnd.parquet" if res.cwnd_table is not None else ""
        files += ", drops.parquet" if res.drops_table is not None else ""
        files += ", pfc.parquet" if res.pfc_table is not None else ""
        print(f"  wrote      {out}/ ({files})")
        for c in res.pcaps:
            missed = f"; {count(c.missed)} more in the window left out (pcap_max_packets)" if c.missed else ""
            print(f"  capture    {out}/pcap/{c.file_name}: {c.name}, {count(c.packets)} packets{missed}")
    if res.summary.get("interrupted"):
        print(
            "interrupted: results cover the simulated time reached; unfinished flows have completed=false",
            file=sys.stderr,
        )
        return 130
    return 0


def cmd_validate(args) -> int:
    try:
        info = validate(args.scenario, set=list(args.set or []), unset=list(args.unset or []))
    except ScenarioError as e:
        print(f"fctlab validate: error: {e}", file=sys.stderr)
        return 2
    hosts = info["hosts"]
    shown = ", ".join(hosts) if len(hosts) <= 8 else f"{', '.join(hosts[:4])}, ..., {hosts[-1]}"
    stop = duration(info["stop_time_s"]) if info["stop_time_s"] is not None else "when all flows finish"
    print(
        f"{args.scenario}: ok: {info['topology']} with {len(hosts)} hosts ({shown}), {info['switches']} switches, "
        f"{info['links']} links; {info['flows']} flows ({info['long_lived_flows']} long-lived); stops {stop}"
    )
    print("  " + transport_line(info["transport"]))
    for note in ecn_notes(args.scenario, list(args.set or []), list(args.unset or []), info["transport"]):
        print("  " + note)
    for note in info["derived"]:
        print("  left out: " + note)
    note = buffer_note(load(args.scenario, list(args.set or []), list(args.unset or []), flows=False))
    if note:
        print("  " + note)
    return 0


def buffer_note(plan) -> str:
    """What `validate` says about lossless ports and shared buffers, if the scenario has either."""
    sb, pfc = plan.switch_buffer, plan.pfc
    if sb is None and pfc is None:
        return ""
    parts = []
    if pfc is not None:
        parts.append("lossless: switches pause their inputs' senders (priority flow control)")
    if sb is not None:
        if pfc is not None:
            alpha = "pfc_alpha from each port's rate" if sb["pfc_alpha"] is None else f"pfc_alpha {sb['pfc_alpha']}"
            parts.append(
                f"a shared buffer of {count(sb['bytes'])} B per switch, inputs paused by its free space ({alpha})"
            )
        else:
            parts.append(
                f"a shared buffer of {count(sb['bytes'])} B per switch, output queues within {sb['alpha']} times its free space"
            )
    return "buffers: " + "; ".join(parts)


def _queue_marks(q: dict) -> bool:
    """Whether a queue discipline (as the plan gives it, ``fctlab.plan.Port.queue``) ever sets CE."""
    kind = q["kind"]
    return (
        kind == "ecn"
        or (kind == "red" and bool(q.get("ecn")))
        or (kind == "priority" and q.get("ecn_threshold") is not None)
    )


def ecn_notes(scenario, set, unset, t: dict) -> list:
    """What `validate` says about ECN: which flows are ECN-capable whatever ``transport.ecn``
    says, and a warning when ECN-capable flows cross only queues that never mark."""
    needs = sorted({n for r in _core.protocols() if r.get("requires_ecn") for n in r["names"]} & t["protocols"].keys())
    notes = []
    if needs:
        notes.append(f"ECN: the data packets of {', '.join(needs)} flows are ECN-capable whatever transport.ecn says")
    if not (t["ecn"] or needs):
        return notes
    plan = load(scenario, list(set), list(unset), flows=False)
    switch_queue, nic_queue = plan.queue(nic=False), plan.queue(nic=True)
    if not (_queue_marks(switch_queue) or _queue_marks(nic_queue)):
        who = f"{', '.join(needs)} flows" if needs else "ECN-capable flows (transport.ecn = true)"
        notes.append(
            f"warning: {who} react to ECN marks, but no queue marks (switch queue {switch_queue['kind']}, "
            f'NIC queue {nic_queue["kind"]}): they will see losses only; mark with queue = "ecn" and '
            'ecn_threshold, or queue = "red" with red_ecn = true'
        )
    return notes


def transport_line(t: dict) -> str:
    """The resolved TCP settings of a scenario, on one line."""
    protos = ", ".join(f"{k} ({v} flows)" for k, v in t["protocols"].items()) or "no flows"
    roce = {n for r in _core.protocols() if "roce" in r["transports"] for n in r["names"]} & set(t["protocols"])
    routed = (router_assisted_protocols() & set(t["protocols"])) - roce
    ssthresh = "unlimited" if t["initial_ssthresh_bytes"] is None else f"{count(t['initial_ssthresh_bytes'])} B"
    tick = "exact" if not t["rto_granularity_s"] else seconds(t["rto_granularity_s"])
    onoff = lambda b: "on" if b else "off"  # noqa: E731
    always = sorted({n for r in _core.protocols() if r.get("requires_ecn") for n in r["names"]} & t["protocols"].keys())
    ecn_always = f"on for {', '.join(always)}, which requires it; " if always and not t["ecn"] else ""
    return (
        f"transport: profile {t['profile']}; {protos}; mss {t['mss_bytes']} B + {t['header_bytes']} B headers, "
        f"initial window {t['initial_cwnd_segments']}, initial ssthresh {ssthresh}, rwnd {count(t['rwnd_bytes'])} B, "
        f"SACK {onoff(t['sack'])}"
        + (f" ({t['sack_recovery']} recovery)" if t["sack"] else f" ({t['newreno_recovery']} recovery)")
        + ", "
        f"{t['window_model']} window, {t['rto_model']} RTO, "
        f"limited transmit (singledup) {onoff(t['singledup'])}, whole packets {onoff(t['whole_packets'])}, "
        f"delayed ACK {onoff(t['delayed_ack'])}, dupthresh {t['dupthresh']}, "
        f"RTO min {seconds(t['min_rto_s'])} initial {seconds(t['initial_rto_s'])} max {seconds(t['max_rto_s'])} "
        f"tick {tick}, ECN {onoff(t['ecn'])} ({ecn_always}{t['ecn_reaction']} reaction, CWR hold {onoff(t['cwr'])}), "
        f"tail loss probe {onoff(t['tail_loss_probe'])}, "
        f"handshake {onoff(t['handshake'])}"
        + (
            f"; {', '.join(sorted(routed))}: router-assisted (always SYN and FIN, paced at the routers' rate, "
            "no tail loss probes)"
            if routed
            else ""
        )
        + (
            f"; {', '.join(sorted(roce))} on the roce transport: line rate or the algorithm's rate, "
            + (
                f"go-back-N, an ACK per {t['ack_interval']} packets, NACKs at most once per "
                f"{seconds(t['nack_interval_s'])} per gap"
                if t["roce_recovery"] == "go_back_n"
                else f"IRN's selective repeat (a NACK per packet out of order, one BDP outstanding, timeouts "
                f"{seconds(t['irn_rto_low_s'])} and {seconds(t['irn_rto_high_s'])}), an ACK per {t['ack_interval']} "
                "packets"
            )
            + f", CNPs at most once per {seconds(t['cnp_interval_s'])}"
            if roce
            else ""
        )
        + (
            f"; flows scheduled per host pair by {t['scheduler']} ("
            + (
                f"send buffers of {count(t['send_buffer_bytes'])} B"
                if t["send_buffer_bytes"]
                else "data chosen as each segment is sent"
            )
            + ")"
            if t.get("scheduler")
            else ""
        )
    )


def configure_run(r) -> None:
    r.description = "Run a scenario, write its results and print a summary."
    r.add_argument("scenario", help="scenario file (.toml, or .json)")
    r.add_argument("--out", required=True, help="directory for flows.parquet, links.parquet, summary.json")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    r.add_argument(
        "--unset", action="append", metavar="KEY", help="remove a scenario key, after the overrides (repeatable)"
    )
    r.add_argument("--sample-queues", metavar="INTERVAL", help='sample switch queues every INTERVAL (e.g. "100us")')
    r.add_argument(
        "--trace-cwnd", metavar="INTERVAL", help='sample every flow\'s congestion window every INTERVAL (e.g. "1ms")'
    )
    r.add_argument("--trace-drops", action="store_true", help="record every dropped packet in drops.parquet")
    r.add_argument(
        "--pcap",
        action="append",
        metavar="HOST|A->B",
        help="capture a host's packets, or a link's, in pcap/NAME.pcap (repeatable)",
    )
    r.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def configure_validate(v) -> None:
    v.description = "Check a scenario without running it and describe it."
    v.add_argument("scenario")
    v.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key (repeatable)")
    v.add_argument(
        "--unset", action="append", metavar="KEY", help="remove a scenario key, after the overrides (repeatable)"
    )


#: Every command: its one-line help, and the module whose ``configure(parser)`` adds its
#: arguments and whose ``run(args)`` runs it. A module is imported only when its command is
#: the one given, so that commands pay only for what they use.
COMMANDS = {
    "run": ("run a scenario and write its results", None),
    "validate": ("check a scenario without running it", None),
    "report": ("write an HTML or Markdown report of result directories", "fctlab.report"),
    "compare": ("compare two result directories", "fctlab.compare"),
    "bench": ("run the benchmark scenarios", "fctlab.bench"),
    "reproduce": ("reproduce a paper's experiments beside its numbers", "fctlab.reproduce"),
    "sweep": ("run a parameter sweep on all cores or a Dask cluster", "fctlab.sweeps"),
    "query": ("run SQL over a sweep's results", "fctlab.sweeps_query"),
    "kernel": ("build, load, unload the ATCP BPF congestion control", "fctlab.kernel"),
    "testbed": ("run scenarios on the real kernel in network namespaces", "fctlab.testbed"),
    "crosscheck": ("run a scenario in fctlab and in another simulator side by side", "fctlab.crosscheck"),
    "peers": ("build and list the other simulators the crosscheck runs", "fctlab.peers"),
    "validation": ("record a crosscheck suite's outcome; render the validation matrix", "fctlab.validation"),
    "sched": ("send or receive a workload over real sockets with SCHED_TCP's scheduling", "fctlab.sched"),
}
_LOCAL = {"run": (configure_run, cmd_run), "validate": (configure_validate, cmd_validate)}


def parser(command: Optional[str] = None) -> OneLineParser:
    """The ``fctlab`` argument parser, with the arguments of `command` (one subcommand each)."""
    p = OneLineParser(prog="fctlab", description="Flow completion time lab: packet-level data-center simulation.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=OneLineParser, metavar="COMMAND")
    for name, (help_, module) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_)
        if name != command:
            continue
        if module is None:
            configure, run = _LOCAL[name]
        else:
            mod = importlib.import_module(module)
            configure, run = mod.configure, mod.run
        configure(sp)
        sp.set_defaults(_run=run, _parser=sp)
    return p


def _command_of(argv: Sequence[str]) -> Optional[str]:
    """The command a command line names: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    p = parser(command if command in COMMANDS else None)
    try:
        args, extra = p.parse_known_args(argv)
        if extra:  # named by the command they were given to
            getattr(args, "_parser", p).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as e:  # --help, or a usage error already reported on one line
        return int(e.code or 0)
    if args.version:
        print(f"fctlab {__version__}")
        return 0
    if args.command is None:
        p.print_help()
        return 2
    try:
        return args._run(args)
    except MissingExtra as e:  # an optional library not installed: the pip install that brings it
        print(f"fctlab {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


#: Commands that leave every file they wrote closed and no thread or process running when
#: they return: the process ends without the interpreter's teardown, which for a run (pyarrow
#: and numpy loaded) is about 20 ms, 5% of a small run's whole time.
NO_TEARDOWN = frozenset({"run"})


def entry() -> None:
    """Console entry point: exit status from :func:`main`, quiet on a closed pipe."""
    try:
        code = main()
        sys.stdout.flush()
        if _command_of(sys.argv[1:]) in NO_TEARDOWN:
            sys.stderr.flush()
            os._exit(code)
    except KeyboardInterrupt:
        # Ctrl-C outside a run's simulation loop (which handles it itself): no traceback.
        print("interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        # e.g. `fctlab run ... | head`: stop quietly, as other command-line tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    sys.exit(code)


if __name__ == "__main__":
    entry()
