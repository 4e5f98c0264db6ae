"""Runs and statistics shared by the ATCP reproduction's items (:mod:`.atcp`, :mod:`.atcp_claims`):
its modes, the synthetic campus workload's description, the chain runs under TCP and ATCP, the
medians of small and medium flows, and window decreases in a congestion-window trace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .common import Runner, bucket_median

SYNTHETIC_WORKLOAD = (
    "The paper's campus data-center trace is not public. Items 3 to 6 use a synthetic trace "
    "built from what the paper states about it (80% of the flows are smaller than 10 KB; 80% "
    "of the bytes are in flows larger than 10 MB): non-large flows drawn from "
    "`campus_nonlarge.cdf` (100 B to 10 MB; 80% under 10 KB, 90% under 100 KB, 95% under 1 MB "
    "of all flows) and large flows uniform between 10 MB and 100 MB making up 2% of the flows. "
    "The mix has a mean of 1.30 MB per flow and 84.5% of its bytes in flows of 10 MB or more. "
    "Arrivals are Poisson. The paper's per-flow numbers (medians of 0.5 to 3 s) cannot be "
    "expected from a trace that only matches these two statistics; the comparison is about the "
    "direction and size of ATCP's effect."
)


@dataclass
class Mode:
    quick: bool
    seeds: list
    chain_until: str
    ratios: list
    sums: list
    web_until: str
    web_backup: str
    fat_jobs: int
    fat_stop: str
    mr_jobs: int
    mr_stop: str

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


def _small(f: pd.DataFrame) -> float:
    return bucket_median(f, "small")


def _medium(f: pd.DataFrame) -> float:
    return bucket_median(f, "medium")


def _drop_events(c: pd.DataFrame, flow: int) -> np.ndarray:
    s = c[c["flow_id"] == flow].sort_values("time_s")
    w = s["cwnd_bytes"].to_numpy(dtype=float)
    t = s["time_s"].to_numpy()
    idx = np.nonzero(w[1:] < 0.75 * w[:-1])[0] + 1
    ev = t[idx]
    # merge decreases within 10 ms into one congestion event
    out = []
    for x in ev:
        if not out or x - out[-1] > 0.010:
            out.append(x)
    return np.array(out)


def _chain_ov(mode: Mode) -> dict:
    return {"workloads__0__until": mode.chain_until, "workloads__1__until": mode.chain_until}


def _atcp_flows(rn: Runner, mode: Mode, file: str, wh: float, wl: float, extra: dict = None) -> pd.DataFrame:
    ov = dict(_chain_ov(mode) if file.startswith("chain") else {})
    ov.update(extra or {})
    return rn.run_seeds(
        file,
        f"ATCP W_H={wh:g} W_L={wl:g}",
        mode.seeds,
        transport__protocol="atcp",
        transport__atcp__w_high=float(wh),
        transport__atcp__w_low=float(wl),
        **ov,
    )


def _tcp_flows(rn: Runner, mode: Mode, file: str, extra: dict = None) -> pd.DataFrame:
    ov = dict(_chain_ov(mode) if file.startswith("chain") else {})
    ov.update(extra or {})
    return rn.run_seeds(file, "TCP", mode.seeds, transport__protocol="tcp", **ov)
