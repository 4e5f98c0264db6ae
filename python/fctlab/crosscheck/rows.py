"""The rows another simulator's results make: one per flow, one per port, and the summary, from
the counts its output gives (shared by the targets that read a simulator's printed lines)."""

from __future__ import annotations

from typing import Optional

from ..plan import Flow, Plan


def flow_row(
    f: Flow,
    start_s: Optional[float],
    finish_s: Optional[float],
    delivered: Optional[int],
    retransmits: Optional[int],
    timeouts: Optional[int],
    packets_sent: Optional[int],
) -> dict:
    """A flows row: the plan's flow with the times and counts the simulator measured."""
    return {
        "flow_id": f.flow_id,
        "src": f.src,
        "dst": f.dst,
        "size_bytes": f.size_bytes,
        "bytes_delivered": delivered,
        "start_s": start_s,
        "finish_s": finish_s,
        "fct_s": (finish_s - start_s) if finish_s is not None and start_s is not None else None,
        "completed": finish_s is not None,
        "protocol": f.protocol,
        "retransmits": retransmits,
        "timeouts": timeouts,
        "packets_sent": packets_sent,
        "tag": f.tag,
        "group": f.group,
    }


def port_rows(plan: Plan, counters: dict, end_s: float) -> list:
    """A links row per port of the plan (in its order) from `counters`: port index ->
    (packets sent, bytes sent, drops, ECN marks, the integral of the queue in packets x
    seconds); a port without counters sent nothing."""
    rows = []
    for i, p in enumerate(plan.ports):
        pkts, nbytes, drops, marks, q_int = counters.get(i, (0, 0, 0, 0, 0.0))
        rows.append(
            {
                "link_id": i,
                "src": p.src,
                "dst": p.dst,
                "level": p.level,
                "rate_bps": p.rate_bps,
                "delay_s": p.delay_s,
                "tx_packets": int(pkts),
                "tx_bytes": int(nbytes),
                "drops": int(drops),
                "ecn_marks": int(marks),
                "utilization": (nbytes * 8 / p.rate_bps / end_s) if end_s > 0 else None,
                "mean_queue_pkts": (q_int / end_s) if end_s > 0 else None,
            }
        )
    return rows


def summary(
    plan: Plan, seed: int, end_s: float, wall_s: float, started: int, completed: int, link_rows: list, marks_at: str
) -> dict:
    """The summary of a run; `marks_at` says where a marked packet is counted: "last hop" (once
    per packet, at the port toward its host) or "every port" (where each marking happens)."""
    hosts = set(plan.hosts)
    marks = (r["ecn_marks"] for r in link_rows if marks_at == "every port" or r["dst"] in hosts)
    return {
        "scenario_name": plan.name,
        "seed": seed,
        "sim_time_s": end_s,
        "wall_time_s": wall_s,
        "flows_total": len(plan.flows),
        "flows_started": started,
        "flows_completed": completed,
        "drops": int(sum(r["drops"] for r in link_rows)),
        "ecn_marks": int(sum(marks)),
    }
