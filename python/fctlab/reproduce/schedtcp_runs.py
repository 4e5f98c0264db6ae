"""Runs and statistics shared by the SCHED_TCP reproduction's items (:mod:`.schedtcp`,
:mod:`.schedtcp_claims`): its modes, the pair's runs under each policy, Table 2's flow-by-flow
comparison and its rows, and the number of flows in progress."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.sched import in_progress
from .common import Item, Runner, fmt_pct, fmt_time

POLICIES = ("srpt", "fair", "las")
LABEL = {"tcp": "tcp", "srpt": "SRPT", "fair": "FAIR", "las": "LAS", "ps": "PS", "fsp": "FSP"}
#: a flow is "equal" when its transfer time under the policy is within this of tcp's: a
#: tenth of the path's 10 ms round trip, below anything a policy changes by moving data
EQUAL_S = 1e-3


@dataclass
class Mode:
    quick: bool
    runs: int
    flows: int
    #: the kernel (testbed) items: runs, flows per run, the sizes' c (1/B), competing flow
    kernel_runs: int = 2
    kernel_flows: int = 30
    kernel_c: float = 1e-6
    competing: str = "8MB"

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


def _flows(r: Runner, mode: Mode, policy: str, send_buffer: str = "", protocol: str = "") -> list:
    """The pair's flows of every run (one DataFrame per seed), by flow id; with `protocol`,
    every connection runs that congestion control."""
    out = []
    for seed in range(1, mode.runs + 1):
        kw = {"seed": seed, "workloads__0__count": mode.flows}
        if policy != "tcp":
            kw["transport__scheduler"] = policy
        if send_buffer:
            kw["transport__send_buffer"] = send_buffer
        if protocol:
            kw["transport__protocol"] = protocol
        label = f"{policy}{'/' + send_buffer if send_buffer else ''}{'/' + protocol if protocol else ''} seed {seed}"
        res = r.run("pair.toml", label, **kw)
        out.append(res.flows.sort_values("flow_id").reset_index(drop=True))
    return out


def compare(tcp: list, other: list) -> dict:
    """Table 2's statistics of `other` against `tcp`, flow by flow, pooled over the runs."""
    d = np.concatenate([o["fct_s"].to_numpy() - t["fct_s"].to_numpy() for t, o in zip(tcp, other)])
    if np.any(np.isnan(d)):
        raise RuntimeError("a flow did not complete")
    faster, slower = d < -EQUAL_S, d > EQUAL_S
    return {
        "faster": float(faster.mean()),
        "slower": float(slower.mean()),
        "equal": float((~faster & ~slower).mean()),
        "gain_s": float(-d[faster].mean()) if faster.any() else float("nan"),
        "loss_s": float(d[slower].mean()) if slower.any() else float("nan"),
        "mean_fct_s": float(np.mean(np.concatenate([o["fct_s"].to_numpy() for o in other]))),
        "flows": int(d.size),
    }


def _table_rows(it: Item, ex, prefix: str, stats: dict, policies=POLICIES, runs: int = None) -> None:
    for p in policies:
        s = stats[p]
        for key in ("faster", "slower", "equal"):
            rid = f"{prefix}.{p}_{key}"
            if rid in ex.rows:
                it.rows.append(ex.row(rid, s[key], fmt_pct(s[key], False), samples=runs, unit="run"))
        for key, sign in (("gain", "-"), ("loss", "+")):
            rid = f"{prefix}.{p}_{key}"
            if rid in ex.rows:
                v = s[f"{key}_s"]
                it.rows.append(
                    ex.row(rid, v, f"{sign}{fmt_time(v)}" if np.isfinite(v) else "none", samples=runs, unit="run")
                )


def _time_weighted_active(flows: list, step_s: float = 0.01) -> np.ndarray:
    """Flows in progress at every `step_s` of every run, pooled."""
    counts = []
    for f in flows:
        t = np.arange(f["start_s"].min(), f["finish_s"].max(), step_s)
        counts.append(in_progress(f["start_s"], f["finish_s"], t))
    return np.concatenate(counts)
