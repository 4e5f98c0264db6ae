"""A testbed run's results: the flows, links and cwnd tables and the summary, from what the run
measured (:class:`Measured`); no network is needed, so recorded measurements give the same
tables."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence

import pyarrow as pa

from .. import kernel as K
from ..api import CWND_SCHEMA, FLOW_SCHEMA, LINK_SCHEMA
from ..plan import rows_for
from .scenario import FRAME, TestbedPlan, path_rate


@dataclass
class Measured:
    """What a testbed run measured, the input of :func:`collect` (times are
    ``time.monotonic()`` seconds; ``t0`` is the run's time zero)."""

    results: dict  # flow_id -> Transfer
    stats: dict  # "a->b" -> the port's counters and its plan ("port")
    base_rtts: dict  # (src, dst) -> seconds
    scheduled: set  # flow ids carried by the scheduling library
    t0: float
    duration: float
    wall_s: float
    interrupted: bool
    atcp: Optional[K.AtcpParams]
    delay_line: Optional[dict]
    cwnd_rows: Optional[list]  # rows of the cwnd table (dicts)
    pias_tagged: Optional[dict] = None  # sending host -> the PIAS tagger's counters
    feedback: Optional[dict] = None  # router feedback programs' counters (ports by link, hosts)


def collect(
    plan: TestbedPlan, m: Measured, *, scenario_file: str = "", overrides: Sequence[str] = (), sha256: str = ""
) -> tuple[pa.Table, pa.Table, dict, Optional[pa.Table]]:
    """The flows and links tables, the summary and the cwnd table of a run from what it
    measured (no network needed: recorded measurements give the same tables)."""
    cwnd = None
    if m.cwnd_rows is not None:
        cwnd = pa.Table.from_pylist(rows_for(CWND_SCHEMA, m.cwnd_rows, where="testbed cwnd"), schema=CWND_SCHEMA)
    summary = _summary(plan, m, scenario_file=scenario_file, overrides=overrides, sha256=sha256)
    return _flow_table(plan, m), _link_table(plan, m), summary, cwnd


def _flow_table(plan: TestbedPlan, m: Measured) -> pa.Table:
    """What the testbed measured per flow; every other column is null (``rows_for``): the
    kernel does not count timeouts per kind, loss probes or per-flow drops (the qdiscs count
    drops per port), and keeps a smoothed RTT, not a mean."""
    measured = []
    for f in plan.flows:
        r = m.results[f.flow_id]
        start = (r.start - m.t0) if r.start is not None else None
        finish = (r.finish - m.t0) if r.finish is not None else None
        fct = (finish - start) if (finish is not None and start is not None) else None
        rtt = m.base_rtts.get((f.src, f.dst), float("nan"))
        ideal = (
            (f.size_bytes * 8 / path_rate(plan, f) + (0.0 if rtt != rtt else rtt)) if f.size_bytes is not None else None
        )
        row = dict(
            flow_id=f.flow_id,
            src=f.src,
            dst=f.dst,
            size_bytes=f.size_bytes,
            bytes_delivered=r.received,
            start_s=start,
            finish_s=finish,
            fct_s=fct,
            ideal_fct_s=ideal,
            slowdown=fct / ideal if (fct is not None and ideal) else None,
            completed=bool(r.completed),
            protocol=f.protocol,
            deadline_s=f.deadline_s,
            tag=f.tag,
            group=f.group,
        )
        if f.flow_id in m.scheduled:
            # the scheduling library neither reads TCP_INFO nor times its connections
            row["scheduler"] = plan.scheduler["policy"]
        else:
            row.update(
                scheduler="none",
                conn_finish_s=finish,
                retransmits=r.retransmits if r.retransmits is not None else 0,
                packets_sent=r.segs_out if r.segs_out is not None else 0,
                rtt_min_s=r.min_rtt_s,
            )
        measured.append(row)
    return pa.Table.from_pylist(rows_for(FLOW_SCHEMA, measured, where="testbed flows"), schema=FLOW_SCHEMA)


def _link_table(plan: TestbedPlan, m: Measured) -> pa.Table:
    """What the qdiscs counted per port; queue maxima and means are null (``rows_for``): the
    testbed does not sample its queues."""
    measured = []
    for i, (name, st) in enumerate(m.stats.items()):
        p = st["port"]
        a, b = name.split("->")
        level = next((l.level for l in plan.links if {l.a, l.b} == {a, b}), "")
        if level == "host" and a in plan.hosts:
            level = "nic"
        vals = dict(
            link_id=i,
            src=a,
            dst=b,
            level=level,
            rate_bps=p.rate_bps,
            delay_s=0.0,
            buffer_pkts=p.limit_bytes // FRAME,
            buffer_bytes=p.limit_bytes,
            tx_packets=st["packets"],
            tx_bytes=st["bytes"],
            drops=st["drops"],
            ecn_marks=st.get("ecn_marks") or 0,
            utilization=(st["bytes"] * 8 / (p.rate_bps * m.duration)) if m.duration > 0 else 0.0,
        )
        measured.append(vals)
    return pa.Table.from_pylist(rows_for(LINK_SCHEMA, measured, where="testbed links"), schema=LINK_SCHEMA)


def _summary(plan: TestbedPlan, m: Measured, *, scenario_file: str, overrides: Sequence[str], sha256: str) -> dict:
    errors = {f.flow_id: m.results[f.flow_id].error for f in plan.flows if m.results[f.flow_id].error}
    summary = {
        "scenario_name": plan.name,
        "scenario_sha256": sha256,
        "scenario_file": scenario_file,
        "overrides": list(overrides),
        "seed": plan.seed,
        "sim_time_s": m.duration,
        "wall_time_s": m.wall_s,
        "flows_total": len(plan.flows),
        "flows_started": sum(r.start is not None for r in m.results.values()),
        "flows_completed": sum(r.completed for r in m.results.values()),
        "payload_bytes_delivered": sum(r.received for r in m.results.values()),
        "drops": sum(st["drops"] for st in m.stats.values()),
        "ecn_marks": sum(st.get("ecn_marks") or 0 for st in m.stats.values()),
        "ecn_threshold": str(plan.ecn_threshold) if plan.ecn_threshold is not None else None,
        "priority_bands": plan.bands if plan.bands > 1 else None,
        "pias_tagged": m.pias_tagged,
        "feedback": m.feedback,
        "interrupted": m.interrupted,
        "kernel": os.uname().release,
        "congestion_controls": {str(f.flow_id): plan.sockopts[f.flow_id].cc for f in plan.flows},
        "atcp_params": m.atcp.to_dict() if m.atcp is not None else None,
        "base_rtt_s": {f"{a}->{b}": v for (a, b), v in m.base_rtts.items()},
        "emulated_delay_s": plan.delay_s,
        "delay_line": m.delay_line,
        "notes": plan.notes + ['protocol "tcp" runs as the kernel\'s reno (NewReno with SACK)'],
        "flow_errors": {str(k): v for k, v in errors.items()},
    }
    return summary
