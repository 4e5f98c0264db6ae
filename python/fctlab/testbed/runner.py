"""Runs a scenario on real Linux TCP inside network namespaces and writes fctlab results."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

import pyarrow as pa

from .. import api
from .. import kernel as K
from ..rundir import read_summary, write_run
from .netns import Network, TestbedError
from .shell import TEMP_PREFIX, lock_path, note_registered, noted_registered
from .pias import tagged
from .scenario import TestbedPlan, load_plan
from .programs import Programs, resolve_congestion_controls
from .results import Measured, collect
from .traffic import (
    PORT_BASE,
    Transfer,
    apply_deliveries,
    base_rtt,
    sample_cwnd,
    scheduled_pairs,
    start_receivers,
    start_senders,
)


SUBNET = "10.88"


SETUP_MARGIN_S = 0.3  # between "all receivers listening" and t = 0


MAX_RUN_S = 120.0  # hard bound on one run's traffic phase


def host_address(index: int) -> str:
    return f"{SUBNET}.{index // 250}.{index % 250 + 1}"


def build_network(plan: TestbedPlan, net: Network, marker=None, tagger=None, port_program=None) -> None:
    """The plan's namespaces, links, ports and addresses; ``tagger`` (a pias.Tagger) goes on
    the interface of every host that sends PIAS flows, and ``port_program(ns, dev, rate_bps)``
    runs for every switch port."""
    for sw in plan.switches:
        net.add_node(sw, switch=True)
    for h in plan.hosts:
        net.add_node(h, switch=False)
    port_no = {sw: 0 for sw in plan.switches}

    def dev(node):
        if node in port_no:
            port_no[node] += 1
            return f"p{port_no[node]}"
        return "eth0"

    ports = dict(
        marker=marker,
        ecn_threshold=plan.ecn_threshold,
        bands=plan.bands,
        nic_bands=plan.nic_bands,
        port_program=port_program,
    )
    for l in plan.links:
        if l.level == "bottleneck" and plan.delay_s > 0:
            # left -> [TBF] -> dl (delay line) -> right, and back through right's TBF
            net.add_node("dl", switch=False)
            net.add_link(
                l.a,
                "dl",
                dev(l.a),
                "a0",
                a_switch=True,
                b_switch=False,
                rate_a_bps=l.rate_a,
                limit_a=l.buf_a,
                rate_b_bps=None,
                limit_b=0,
                **ports,
            )
            net.add_link(
                "dl",
                l.b,
                "a1",
                dev(l.b),
                a_switch=False,
                b_switch=True,
                rate_a_bps=None,
                limit_a=0,
                rate_b_bps=l.rate_b,
                limit_b=l.buf_b,
                **ports,
            )
            net.relabel_ports("dl", l.a, l.b)
            net.add_delay_line("dl", "a0", "a1", plan.delay_s)
            continue
        da, db = dev(l.a), dev(l.b)
        net.add_link(
            l.a,
            l.b,
            da,
            db,
            a_switch=l.a in port_no,
            b_switch=l.b in port_no,
            rate_a_bps=l.rate_a,
            limit_a=l.buf_a,
            rate_b_bps=l.rate_b,
            limit_b=l.buf_b,
            **ports,
        )
    for i, h in enumerate(plan.hosts):
        net.add_address(h, "eth0", host_address(i), 16)
    if tagger is not None:
        for h in sorted({f.src for f in plan.flows if f.protocol == "pias"}):
            tagger.attach(net.ns(h), "eth0")
    # Every flow starts as a fresh connection, as in the simulator: Linux would otherwise
    # start a connection with the ssthresh and RTT it remembers for that destination.
    ecn_hosts = {f.src for f in plan.flows if f.ecn}
    for h in sorted({f.src for f in plan.flows} | {f.dst for f in plan.flows}):
        net.set_sysctls(
            h, {"net.ipv4.tcp_no_metrics_save": "1", **({"net.ipv4.tcp_ecn": "1"} if h in ecn_hosts else {})}
        )


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While a run holds namespaces, SIGTERM raises KeyboardInterrupt, so that the cleanup
    runs when the process is terminated (a test runner or a service manager stopping it), not
    only on Ctrl-C. Only the main thread can set signal handlers; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_plan(
    plan: TestbedPlan,
    *,
    scenario_file: str = "",
    overrides: Sequence[str] = (),
    sha256: str = "",
    max_run_s: float = MAX_RUN_S,
    atcp_halving: Optional[str] = None,
    progress=None,
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    """Runs ``plan``; returns the flows and links tables, the summary, and the cwnd table
    (None unless ``[monitor] cwnd_interval`` is set). ``progress(elapsed_s, flows_done,
    flows_total)`` is called about every 0.5 s while the traffic runs. SIGTERM interrupts it
    as Ctrl-C does (KeyboardInterrupt, after the namespaces are removed)."""
    with _sigterm_as_interrupt(), _one_run_at_a_time():
        return _run_plan(plan, scenario_file, overrides, sha256, max_run_s, atcp_halving, progress)


def clean_after_killed_runs() -> tuple:
    """When no run holds the testbed's lock (a run that holds it is using its own): removes
    the temporary directories (``TEMP_PREFIX``) killed runs left and unregisters the kernel
    congestion controls they registered and noted. Returns (directories removed, names
    unregistered); a name that cannot be unregistered raises TestbedError."""
    fd = os.open(lock_path(), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return [], []
        left = sorted(Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*"))
        for d in left:
            shutil.rmtree(d, ignore_errors=True)
        noted = noted_registered()
        unregistered = []
        try:
            if noted & set(K.INSTANCES) and K.registered():
                unregistered += K.unload()
            if K.DCTCP in noted and K.dctcp_registered():
                K.unload_dctcp()
                unregistered.append(K.DCTCP)
        except K.KernelError as e:
            raise TestbedError(f"unregistering what a killed run left: {e}") from None
        note_registered(set())
        return left, unregistered
    finally:
        os.close(fd)


@contextlib.contextmanager
def _one_run_at_a_time():
    """Holds the testbed's lock for a run, waiting (and saying so) while another run holds it."""
    path = lock_path()
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"fctlab testbed: waiting for another testbed run on this machine ({path})", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _run_plan(
    plan: TestbedPlan,
    scenario_file: str,
    overrides: Sequence[str],
    sha256: str,
    max_run_s: float,
    atcp_halving: Optional[str],
    progress,
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    wall0 = time.monotonic()
    atcp = resolve_congestion_controls(plan, atcp_halving)
    interrupted = False
    results = {f.flow_id: Transfer() for f in plan.flows}
    scheduled: set = set()
    stats, base_rtts, duration = {}, {}, 0.0
    cwnd_rows = None
    net = Network()
    progs = Programs()
    pias_counts = feedback = None
    try:
        progs.load(plan, atcp)
        build_network(plan, net, progs.marker, progs.tagger, progs.port_program)
        for f in plan.flows:
            key = (f.src, f.dst)
            if key not in base_rtts:
                base_rtts[key] = base_rtt(net, f.src, f.dst, PORT_BASE - 1 - len(base_rtts))
        last_start = max(f.start_s for f in plan.flows)
        horizon = plan.stop_time_s if plan.stop_time_s is not None else last_start + max_run_s
        horizon = min(horizon, max_run_s)
        pairs = scheduled_pairs(plan)
        scheduled = {f.flow_id for fl in pairs.values() for f in fl}
        plain = [f for f in plan.flows if f.flow_id not in scheduled]
        ready = threading.Barrier(len(plain) + len(pairs) + 1)
        stop_at: list = [None]
        bound = time.monotonic() + horizon + 30  # sockets never block past this
        threads, deliveries = start_receivers(net, plan, pairs, plain, results, ready, stop_at, bound, horizon)
        try:
            ready.wait(timeout=30)
        except threading.BrokenBarrierError:
            errs = [r.error for r in results.values() if r.error]
            raise TestbedError(f"receivers did not start: {errs[0] if errs else 'timeout'}") from None
        t0 = time.monotonic() + SETUP_MARGIN_S
        stop_abs = t0 + plan.stop_time_s if plan.stop_time_s is not None else None
        stop_at[0] = stop_abs
        end_abs = t0 + horizon
        threads += start_senders(net, plan, pairs, plain, results, t0, stop_abs, end_abs)
        sampler, sampling_done = None, threading.Event()
        if plan.cwnd_interval_s is not None:
            cwnd_rows = []
            kernel_params = K.loaded_params() if atcp is not None else None
            sampler = threading.Thread(
                target=sample_cwnd,
                daemon=True,
                args=(plan, results, kernel_params, t0, end_abs, sampling_done, cwnd_rows),
            )
            sampler.start()
        # bounded: every socket operation ends by `bound`
        while any(t.is_alive() for t in threads) and time.monotonic() < bound + 1:
            for t in threads:
                t.join(0.5)
                if t.is_alive():
                    break
            if progress is not None:
                progress(time.monotonic() - t0, sum(r.completed for r in results.values()), len(plan.flows))
        if sampler is not None:
            sampling_done.set()
            sampler.join(5)
        duration = (stop_abs if stop_abs is not None else time.monotonic()) - t0
        if plan.stop_time_s is None:
            ends = [r.finish for r in results.values() if r.finish is not None]
            duration = (
                (max(ends) - t0) if ends and all(r.completed for r in results.values()) else time.monotonic() - t0
            )
        stats = net.port_stats()
        feedback = progs.port_counters(net)
        if progs.tagger is not None:
            pias_counts = {h: tagged(net.ns(h), "eth0") for h in sorted({f.src for f in plan.flows})}
        apply_deliveries(pairs, deliveries, results)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        left = net.destroy()
        progs.close()
        if left:
            raise TestbedError(f"could not delete namespaces {', '.join(left)}")

    measured = Measured(
        results=results,
        stats=stats,
        base_rtts=base_rtts,
        scheduled=scheduled,
        t0=t0,
        duration=duration,
        wall_s=time.monotonic() - wall0,
        interrupted=interrupted,
        atcp=atcp,
        delay_line=net.delay_stats.get("dl"),
        cwnd_rows=cwnd_rows,
        pias_tagged=pias_counts,
        feedback=None if feedback is None else {"ports": feedback, "hosts": progs.host_counters()},
    )
    return collect(plan, measured, scenario_file=scenario_file, overrides=overrides, sha256=sha256)


def run_testbed(
    scenario: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    set: Sequence[str] = (),
    max_run_s: float = MAX_RUN_S,
    atcp_halving: Optional[str] = None,
    progress=None,
) -> dict:
    """Validates ``scenario`` with the simulator's checker, runs it in namespaces and writes
    ``flows.parquet``, ``links.parquet`` and ``summary.json`` into ``out_dir``. Returns the summary.
    ``atcp_halving`` overrides the ATCP flows' ``halving`` key for the kernel ATCP."""
    try:
        desc = api.validate(scenario, set=list(set))
    except api.ScenarioError as e:
        raise TestbedError(str(e)) from None
    plan = load_plan(Path(scenario), set)
    flows, links, summary, cwnd = run_plan(
        plan,
        scenario_file=str(scenario),
        overrides=set,
        sha256=desc.get("scenario_sha256", ""),
        max_run_s=max_run_s,
        atcp_halving=atcp_halving,
        progress=progress,
    )
    write_run(out_dir, "testbed", summary, flows, links, cwnd=cwnd)
    return read_summary(out_dir)
