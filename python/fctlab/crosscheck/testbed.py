"""The namespace testbed as a crosscheck target: the scenario run on the machine's own Linux
TCP (``fctlab testbed run``, docs/testbed.md), its run directory read back as the rows of the
crosscheck's other simulator.

The testbed reads the scenario file itself (its own plan: namespaces, TBF ports, the delay
line, the kernel's congestion controls), so this target passes it the file and the overrides
the crosscheck plan keeps (``plan.source``, ``plan.overrides``) and checks the plan with the
testbed's own checks: whatever ``fctlab testbed run`` refuses is refused here, naming the key.
On top of those it refuses the TCP settings the kernel has one way only (the initial window,
the minimum and initial RTO, SACK, the CWR state, tail loss probes, the handshake), because
fctlab would run them otherwise: the fctlab side of a kernel crosscheck is the ``linux``
profile, the one docs/testbed.md sets beside the kernel.

Wall-clock runs share the machine: each seed's summary notes carry the kernel version, the
load average before and after the run and the share of the CPUs that was busy or stolen
while it ran, and the report lists them per seed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from ..api import _source
from ..plan import Plan, Unsupported

#: The report's name for the kernel.
PRODUCER = "testbed"

#: What the wall time of a seed holds, for the report.
WALL_NOTE = "(building the namespaces, the traffic and its teardown)"

#: Bound on one seed's traffic phase, seconds.
MAX_RUN_S = 120.0

#: The TCP settings the kernel has one way only, as the fctlab key, its value in the kernel,
#: and why. fctlab's `linux` profile has each of them this way.
KERNEL_TCP = (
    ("profile", "linux", "the kernel is compared with fctlab's `linux` profile (docs/testbed.md)"),
    ("handshake", True, "every kernel flow opens a connection, and the testbed's FCT includes its handshake"),
    ("initial_cwnd_segments", 10, "the kernel's initial window is 10 segments (TCP_INIT_CWND)"),
    ("min_rto_s", 0.2, "the kernel's minimum RTO is 200 ms (TCP_RTO_MIN); the testbed sets no per-route rto_min"),
    ("initial_rto_s", 1.0, "the kernel's initial RTO is 1 s (TCP_TIMEOUT_INIT)"),
    ("sack", True, "the testbed's hosts keep the kernel's default net.ipv4.tcp_sack = 1"),
    ("cwr", True, "the kernel reduces its window over a round trip after an ECN echo (the CWR state, PRR)"),
    ("tail_loss_probe", True, "the kernel sends tail loss probes (net.ipv4.tcp_early_retrans = 3)"),
)
#: The fctlab key of each setting, as a scenario names it.
KEY_NAMES = {
    "initial_cwnd_segments": "initial_cwnd",
    "min_rto_s": "min_rto",
    "initial_rto_s": "initial_rto",
}


#: The fctlab protocols the testbed runs (docs/testbed.md; validation.py reads it).
PROTOCOLS = ("tcp", "cubic", "dctcp", "pias", "atcp", "rcp", "racs", "sdc")


class Error(RuntimeError):
    """A testbed run failed (the machine cannot run it, or the run itself failed)."""


@contextlib.contextmanager
def scenario_file(plan: Plan):
    """The plan's scenario as a file the testbed can read: the file itself, or (for a
    scenario given as a dict) a temporary JSON copy."""
    src = plan.source
    if isinstance(src, (str, os.PathLike)):
        yield Path(src)
        return
    text, _, fmt = _source(src)
    with tempfile.TemporaryDirectory(prefix="fctlab-xc-") as d:
        path = Path(d) / f"scenario.{fmt}"
        path.write_text(text, encoding="utf-8")
        yield path


def testbed_plan(plan: Plan, path: Path):
    """The testbed's own plan of the scenario, after its checks (its congestion controls
    resolved, PIAS's thresholds and the assisted protocols' parameters checked); a
    TestbedError becomes Unsupported with the testbed's message."""
    from ..testbed import assisted, programs, scenario, shell  # lazy: fctlab.testbed loads pyarrow (80 ms)

    try:
        tb = scenario.load_plan(path, list(plan.overrides))
        programs.resolve_congestion_controls(tb)
        programs.pias_thresholds(tb)
        if any(f.protocol in assisted.PROTOCOLS for f in tb.flows):
            assisted.feedback_params(tb)
    except shell.TestbedError as e:
        raise Unsupported(f"the testbed cannot run it: {e}") from None
    return tb


def check(plan: Plan) -> None:
    """Raises Unsupported, naming the key, for what the testbed cannot run or the kernel runs
    with other TCP settings than the scenario's; adds to ``plan.notes`` what it runs
    differently."""
    if plan.source is None:
        raise Unsupported("the testbed target needs the scenario itself (a file or a dict), not only its plan")
    if plan.unset:
        raise Unsupported(
            f"--unset {', '.join(plan.unset)}: the testbed reads the scenario file with --set overrides only; "
            "remove the key from a copy of the file"
        )
    t = plan.tcp
    for key, kernel, why in KERNEL_TCP:
        if t[key] != kernel:
            name = KEY_NAMES.get(key, key)
            raise Unsupported(f"transport.{name} = {t[key]!r}: {why}; set it to {kernel!r} to crosscheck on the kernel")
    with scenario_file(plan) as path:
        tb = testbed_plan(plan, path)
    ccs = sorted({f"{f.protocol} as {tb.sockopts[f.flow_id].cc}" for f in tb.flows})
    plan.notes.append(
        f"kernel congestion controls: {', '.join(ccs)} (`reno` and `cubic` are the kernel's own modules; "
        "`fctlab_*` are fctlab's BPF congestion controls, kernel/*.bpf.c, loaded for the run)"
    )
    plan.notes += tb.notes
    plan.notes += [
        "kernel segments carry 1,448 payload bytes in 1,514-byte frames (TCP timestamps), fctlab's "
        f"{t['mss_bytes']} in {t['mss_bytes'] + t['header_bytes']}-byte packets",
        "kernel receivers send delayed and quick ACKs as Linux does"
        + (
            "" if t["delayed_ack"] else "; fctlab's receivers acknowledge every segment (transport.delayed_ack = false)"
        ),
        "the testbed's FCT runs from connect() to the receiver's 1-byte application ACK on the sender, with "
        "Python threads at both ends (docs/testbed.md)",
        "the kernel counts no timeouts per flow (TCP_INFO has none); the timeout counters are not graded",
    ]


def machine_load() -> dict:
    """The machine's load now: the 1-minute load average and the CPU time counters of
    /proc/stat (jiffies: busy, idle and stolen, over all CPUs)."""
    la = Path("/proc/loadavg").read_text().split()
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in fields] + [0] * 10
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    return {
        "loadavg": float(la[0]),
        "busy": user + nice + system + irq + softirq,
        "idle": idle + iowait,
        "steal": steal,
        "at": time.monotonic(),
    }


def load_between(a: dict, b: dict) -> dict:
    """What the machine did between two :func:`machine_load` readings: the load averages, the
    share of CPU time busy and stolen (of all CPUs' time), and the stolen seconds."""
    tot = (b["busy"] - a["busy"]) + (b["idle"] - a["idle"]) + (b["steal"] - a["steal"])
    hz = os.sysconf("SC_CLK_TCK")
    return {
        "loadavg_before": a["loadavg"],
        "loadavg_after": b["loadavg"],
        "busy": (b["busy"] - a["busy"]) / tot if tot > 0 else 0.0,
        "steal": (b["steal"] - a["steal"]) / tot if tot > 0 else 0.0,
        "steal_s": (b["steal"] - a["steal"]) / hz,
        "cpus": os.cpu_count() or 1,
    }


def load_text(d: dict) -> str:
    """One line for a note or a failure message."""
    return (
        f"machine load: load average {d['loadavg_before']:.2f} before, {d['loadavg_after']:.2f} after; "
        f"{d['busy']:.0%} of {d['cpus']} CPUs busy and {d['steal']:.1%} stolen ({d['steal_s']:.2f} s) during the run"
    )


def run(plan: Plan, seed: int, out: Path, max_run_s: float = MAX_RUN_S):
    """Runs `plan` on the testbed with `seed` (one of ``plan.overrides``) into `out`; returns
    (flows rows, links rows, summary, cwnd rows) read back from the testbed's run directory."""
    import pyarrow.parquet as pq  # lazy: pyarrow costs 80 ms of start-up, which other targets avoid

    from .. import rundir, testbed  # lazy: both load pyarrow

    probs = testbed.netns.check_machine()
    if probs:
        raise Error("testbed unavailable: " + "; ".join(probs))
    out = Path(out)
    with scenario_file(plan) as path:
        before = machine_load()
        try:
            testbed.run_testbed(path, out, set=list(plan.overrides), max_run_s=max_run_s)
        except testbed.shell.TestbedError as e:
            raise Error(f"testbed run (seed {seed}): {e}") from None
        load = load_between(before, machine_load())
    summary = rundir.read_summary(out)
    if summary.get("seed") != seed:
        raise Error(f"testbed run: ran seed {summary.get('seed')}, expected {seed}")
    flows = pq.read_table(out / "flows.parquet").to_pylist()
    links = pq.read_table(out / "links.parquet").to_pylist()
    cwnd = pq.read_table(out / "cwnd.parquet").to_pylist() if (out / "cwnd.parquet").exists() else []
    summary = {k: v for k, v in summary.items() if k not in ("schema_version", "producer") and v is not None}
    summary["notes"] = list(summary.get("notes") or []) + [load_text(load)]
    return flows, links, summary, cwnd


def seed_notes(summaries: list) -> list:
    """The report's lines on the runs themselves: the kernel, and per seed the wall time, the
    machine's load and the flows that failed."""
    if not summaries:
        return []
    kernels = sorted({s.get("kernel") or "?" for s in summaries})
    lines = [f"kernel: Linux {', '.join(kernels)}, {os.cpu_count()} CPUs; wall-clock runs, one seed at a time"]
    for s in summaries:
        load = next((n for n in s.get("notes") or [] if n.startswith("machine load")), "machine load: not measured")
        errs = s.get("flow_errors") or {}
        lines.append(
            f"seed {s.get('seed')}: {s.get('wall_time_s') or 0:.1f} s of wall time, "
            f"{s.get('flows_completed')} of {s.get('flows_total')} flows completed; {load}"
            + (
                f"; {len(errs)} flow error(s), e.g. flow {next(iter(errs))}: {next(iter(errs.values()))}"
                if errs
                else ""
            )
        )
    return lines
