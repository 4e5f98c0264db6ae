"""Shared pieces of the paper reproductions: running scenarios, judging numbers, flow
statistics. The paper's numbers are data (:mod:`.expected`); the runner and the report are in
:mod:`.runner`.

A reproduction is a list of *items*, one per table or figure of a paper. Each item runs
scenario files with overrides and produces :class:`Row` objects: a quantity, the paper's
number, fctlab's number and a verdict. The verdict rules are fixed (in :mod:`.verdicts`), so that every
item judges the same way:

* a **change** (relative to the paper's baseline, e.g. ATCP against TCP) *matches* when
  fctlab's change has the same sign as the paper's and is within a factor of two of it
  (or within 5 percentage points); it is *direction matches, size differs* when only the
  sign agrees; changes smaller than 2% count as "no change";
* a **value** (e.g. a window ratio) *matches* within a relative tolerance (10% unless the
  item says otherwise), and is judged on its side of a reference otherwise.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

import fctlab

from .._extras import extra
from ..api import overrides_from_kwargs
from ..crosscheck import run_other
from ..crosscheck.ns2 import PROTOCOLS
from ..metrics import deadline_meet_ratio, fct_stats
from ..stats import interval
from .expected import Expected
from .verdicts import (  # noqa: F401 (re-exported: the items import them from here)
    DIRECTION,
    INCONCLUSIVE,
    MATCH,
    MIN_SAMPLES,
    NO_CHANGE,
    NO_MATCH,
    NO_STATEMENT,
    NOT_GRADED,
    NOT_MEASURED,
    Row,
    fmt_num,
    fmt_pct,
    fmt_time,
    judge_change,
    judge_value,
    rel_change,
    worst,
)


@dataclass
class Item:
    number: int
    title: str
    source: str  # table or figure of the paper
    paper_did: str
    setup: str
    rows: list = field(default_factory=list)
    explanation: list = field(default_factory=list)
    figures: list = field(default_factory=list)  # (file name, caption)
    status: str = "not run"
    reason: str = ""
    wall_s: float = 0.0
    numbers: dict = field(default_factory=dict)  # machine-readable results
    #: profile name -> the item as run under it (set when a paper has several profiles)
    profiles: dict = field(default_factory=dict)
    #: the scenario files (of the paper's directory) the item read
    scenario_files: list = field(default_factory=list)

    def add(self, quantity: str, paper: str, fctlab: str, verdict: str) -> None:
        self.rows.append(Row(quantity, paper, fctlab, verdict))

    @property
    def summary_verdict(self) -> str:
        if self.status != "done":
            return self.status
        return worst([r.verdict for r in self.rows])


# --------------------------------------------------------------------------- running


class Runner:
    """Runs scenario files through :func:`fctlab.run`, caching identical runs and logging
    progress to stderr."""

    #: whether runs are made in ns-2.35 (:class:`Ns2Runner`)
    is_ns2 = False

    def __init__(self, scenario_dir: Path, out_dir: Path, log: Callable[[str], None]):

        self.scenario_dir = Path(scenario_dir)
        self.out_dir = Path(out_dir)
        self.log = log
        self._cache: dict = {}
        #: overrides applied to every run (the current profile's), and its label in the log
        self.overrides: dict = {}
        self.label = ""
        #: the current profile's name (None: the scenario files as they are)
        self.profile = None
        self.runs = 0
        self.wall_s = 0.0
        #: the scenario files read through :meth:`path` (the runner resets it per item)
        self.used: set = set()
        #: the paper's published numbers (scenarios/papers/<paper>/expected.toml)
        self.expected = Expected(self.scenario_dir / "expected.toml")

    def new_item(self, n: int, setup: str) -> Item:
        """Item `n` with the paper's title, source and description from expected.toml."""
        meta = self.expected.items[n]
        return Item(n, meta["title"], meta["source"], meta["did"], setup)

    def placeholder(self, n: int, reason: str) -> Item:
        """Item `n` that was not run, with the paper's numbers it would have been set beside."""
        meta = self.expected.items[n]
        numbers = self.expected.summary(n)
        return Item(
            n,
            meta["title"],
            meta["source"],
            meta["did"] + (f" The paper's numbers: {numbers}." if numbers else ""),
            "-",
            status="not run",
            reason=reason,
        )

    def path(self, name: str) -> Path:
        """A scenario file of the paper, counted as an input of the current item."""
        self.used.add(str(name))
        return self.scenario_dir / name

    def run(self, name: str, label: str, **overrides: Any):
        overrides = {**self.overrides, **overrides}
        label = self.label + label
        key = (name, tuple(sorted((k, repr(v)) for k, v in overrides.items())))
        if key in self._cache:
            return self._cache[key]
        t0 = time.perf_counter()
        res = fctlab.run(str(self.path(name)), **overrides)
        wall = time.perf_counter() - t0
        self.runs += 1
        self.wall_s += wall
        flows = res.flows
        done = int(flows["completed"].sum())
        self.log(
            f"    run {label}: {name} {' '.join(f'{k}={v}' for k, v in overrides.items())}"
            f" -> {done}/{len(flows)} flows completed, {res.summary['sim_time_s']:.2f} s simulated, {wall:.1f} s wall"
        )
        self._cache[key] = res
        return res

    def run_seeds(self, name: str, label: str, seeds: Sequence[int], **overrides: Any) -> pd.DataFrame:
        """Run once per seed and return the flows of all runs, with a `seed` column."""
        frames = []
        for s in seeds:
            res = self.run(name, f"{label} seed {s}", seed=int(s), **overrides)
            f = res.flows.copy()
            f["seed"] = int(s)
            frames.append(f)
        return pd.concat(frames, ignore_index=True)


class Ns2Runner(Runner):
    """An item's runs made again in ns-2.35, on the flow lists fctlab ran (`base`'s runs):
    each run goes through :func:`fctlab.crosscheck.run_other` and is written under
    ``OUT/ns2-runs/``. A run of a protocol ns-2.35 does not have (DCTCP, RCP, RACS, SDC) is
    `base`'s fctlab run, and its protocol is recorded in `stand_ins`, so that an item comparing
    TCP with such a protocol compares ns-2's TCP with fctlab's other protocol."""

    is_ns2 = True

    def fctlab(self) -> Runner:
        """A runner of fctlab's runs under the pass's settings (to set beside ns-2's)."""
        r = Runner.__new__(Runner)
        r.__dict__.update(self.base.__dict__)
        r.overrides = {**self.base.overrides, **self.settings}
        return r

    def __init__(self, base: Runner, settings: Optional[dict] = None):
        self.__dict__.update(base.__dict__)
        self.base = base
        #: overrides under which both simulators run the pass (settings ns-2.35 can run)
        self.settings = dict(settings or {})
        self._cache = {}
        self.label = base.label + "[ns-2.35] "
        self.stand_ins: set = set()
        self.runs = 0
        self.wall_s = 0.0

    def run(self, name: str, label: str, **overrides: Any):
        overrides = {**self.settings, **overrides}
        merged = {**self.overrides, **overrides}
        key = (name, tuple(sorted((k, repr(v)) for k, v in merged.items())))
        if key in self._cache:
            return self._cache[key]
        fct = self.base.run(name, label, **overrides)
        missing = set(fct.flows["protocol"]) - set(PROTOCOLS)
        missing |= {f"{s} scheduling" for s in set(fct.flows["scheduler"]) if s not in ("none", None)}
        if missing:
            self.stand_ins |= missing
            self._cache[key] = fct
            return fct
        tag = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
        t0 = time.perf_counter()
        res = run_other(
            self.path(name),
            fct,
            out=self.out_dir / "ns2-runs" / f"{Path(name).stem}-{tag}",
            set=overrides_from_kwargs(merged),
        )
        wall = time.perf_counter() - t0
        self.runs += 1
        self.wall_s += wall
        f = res.flows
        self.log(
            f"    run {self.label}{label}: {name} -> {int(f['completed'].sum())}/{len(f)} flows completed, "
            f"{res.summary['sim_time_s']:.2f} s simulated, {wall:.1f} s wall"
        )
        self._cache[key] = res
        return res


# --------------------------------------------------------------------------- flow statistics

#: Small flows split by size, to show where a gain comes from.
SIZE_SPLIT = (("< 10 KB", 0, 10_000), ("10-100 KB", 10_000, 100_000), ("100 KB-1 MB", 100_000, 1_000_000))


def per_seed(flows: pd.DataFrame, fn: Callable[[pd.DataFrame], float]) -> dict:
    """fn of each seed's flows (the `seed` column of :meth:`Runner.run_seeds`), by seed."""
    return {int(s): float(fn(f)) for s, f in flows.groupby("seed")}


def seed_change(
    base: pd.DataFrame, new: pd.DataFrame, fn: Callable[[pd.DataFrame], float], points: bool = False
) -> dict:
    """A statistic `fn` of two sets of runs on the same seeds (same arrivals): its mean over the
    seeds under each, and the change from `base` to `new` (relative, or the difference with
    `points`) per seed, as the mean and 95% half-width over the seeds."""
    a, b = per_seed(base, fn), per_seed(new, fn)
    seeds = sorted(set(a) & set(b))
    ch = [(b[s] - a[s]) if points else rel_change(b[s], a[s]) for s in seeds]
    m, h = interval(ch)
    return {
        "base": interval([a[s] for s in seeds])[0],
        "new": interval([b[s] for s in seeds])[0],
        "change": m,
        "half_width": h,
        "seeds": len(seeds),
        "per_seed": ch,
    }


def fmt_change(c: dict, points: bool = False) -> str:
    """A seed_change as 'change ± half-width' (or the change alone without an interval)."""
    if points:
        m = f"{c['change'] * 100:+.1f}"
        return f"{m} ± {c['half_width'] * 100:.1f} points" if math.isfinite(c["half_width"]) else f"{m} points"
    m = fmt_pct(c["change"])
    return f"{m} ± {fmt_pct(c['half_width'], False)}" if math.isfinite(c["half_width"]) else m


def timeout_causes(flows: pd.DataFrame) -> Optional[dict]:
    """The retransmission timeouts of `flows` by cause: ``first`` (of the SYN, or before any
    data was acknowledged), ``ecn`` (after the window was last cut by an ECN echo), ``data``
    (the rest) and ``total``. None where the flows carry no causes (ns-2.35's runs, the
    testbed)."""
    cols = ("timeouts", "first_timeouts", "ecn_timeouts")
    if any(c not in flows.columns or flows[c].isna().any() for c in cols):
        return None
    total, first, ecn = (int(flows[c].sum()) for c in cols)
    return {"total": total, "first": first, "ecn": ecn, "data": total - first - ecn}


def add_causes(parts: Sequence[Optional[dict]]) -> Optional[dict]:
    """timeout_causes of several runs added up (None if any is None or there are none)."""
    if not parts or any(c is None for c in parts):
        return None
    return {k: sum(c[k] for c in parts) for k in ("total", "first", "ecn", "data")}


def fmt_causes(c: Optional[dict]) -> str:
    """'12 (3 of the SYN or first window, 0 after an ECN cut, 9 of data)'."""
    if c is None:
        return "not counted by cause"
    if c["total"] == 0:
        return "0"
    return f"{c['total']} ({c['first']} of the SYN or first window, {c['ecn']} after an ECN cut, {c['data']} of data)"


def size_split(flows: pd.DataFrame) -> dict:
    """Per class of SIZE_SPLIT: flows, median FCT of the completed ones, retransmission
    timeouts per flow and the share of flows whose window left slow start."""
    out = {}
    size = flows["size_bytes"].astype(float)
    for label, lo, hi in SIZE_SPLIT:
        f = flows[(size >= lo) & (size < hi)]
        done = f[f["completed"].astype(bool)]
        n = len(f)
        out[label] = {
            "flows": n,
            "median_fct_s": float(done["fct_s"].median()) if len(done) else float("nan"),
            "timeouts_per_flow": float(f["timeouts"].sum()) / n if n else float("nan"),
            "left_slow_start": float(f["left_slow_start"].astype(bool).mean()) if n else float("nan"),
        }
    return out


def split_note(stats: dict) -> str:
    """One sentence comparing SIZE_SPLIT classes across runs ({label: size_split(flows)})."""
    names = list(stats)
    parts = []
    for label, _, _ in SIZE_SPLIT:
        s = [stats[k][label] for k in names]
        parts.append(
            f"{label} ({s[0]['flows']} flows): median "
            + " / ".join(fmt_time(x["median_fct_s"]) for x in s)
            + ", timeouts per flow "
            + " / ".join(f"{x['timeouts_per_flow']:.3f}" for x in s)
            + ", window left slow start "
            + " / ".join(fmt_pct(x["left_slow_start"], False) for x in s)
        )
    return f"Small flows by size ({' / '.join(names)}): " + "; ".join(parts) + "."


def bucket_median(flows: pd.DataFrame, bucket: str) -> float:
    st = fct_stats(flows, by="bucket")
    row = st[st["bucket"] == bucket]
    if row.empty:
        return float("nan")
    v = row["median_fct_s"].iloc[0]
    return float(v) if v is not None and pd.notna(v) else float("nan")


def bucket_counts(flows: pd.DataFrame, bucket: str) -> tuple:
    st = fct_stats(flows, by="bucket")
    row = st[st["bucket"] == bucket]
    if row.empty:
        return 0, 0
    return int(row["count"].iloc[0]), int(row["completed"].iloc[0])


def meet_ratio(flows: pd.DataFrame) -> float:
    d = deadline_meet_ratio(flows)
    v = d["meet_ratio"].iloc[0]
    return float(v) if v is not None and pd.notna(v) else float("nan")


def overshoot_mask(flows: pd.DataFrame, mss: int = 1460, min_segments: int = 100) -> pd.Series:
    """Flows of at least `min_segments` segments that sent more than twice their segments
    (retransmitted more than their own size): the trace of a window far above what the path
    holds. Short flows are left out: a few retransmissions already double them."""
    size = flows["size_bytes"].astype(float)
    segs = np.ceil(size / mss)
    return (flows["packets_sent"].astype(float) > 2 * segs) & (segs >= min_segments) & size.notna()


def overshoot_flows(flows: pd.DataFrame, mss: int = 1460, min_segments: int = 100) -> int:
    return int(overshoot_mask(flows, mss, min_segments).sum())


CWND_JUMP_NOTE = (
    "Sending more than twice its segments is the symptom of a "
    "congestion-window jump seen in fctlab's TCP: after a retransmission timeout, the go-back-N "
    "retransmission fills the hole below megabytes of out-of-order data held by the receiver, the "
    "cumulative ACK advances by megabytes at once, and the window grows by far more than the 2 MSS per "
    "ACK of slow start with appropriate byte counting (e.g. 2,920 B to 927,830 B in one ACK with ssthresh "
    "3,650 B). The sender then bursts into the 100-packet buffer, loses thousands of packets and waits for "
    "further timeouts. It affects TCP, ATCP and DCTCP alike when they time out (see "
    "docs/reproduce_atcp.md, 'Simulator behaviour')."
)


# --------------------------------------------------------------------------- plots


def new_figure(width: float = 8.0, height: float = 4.0, **kwargs):
    with extra("plot"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: matplotlib costs 300 ms of start-up
        from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path: Path) -> None:
    fig.savefig(str(path), format="png", dpi=110)


# --------------------------------------------------------------------------- report


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- runs over load


@dataclass
class LoadMode:
    """A reproduction whose items run schemes over loads: quick or full, the loads, the flows
    per run."""

    quick: bool
    loads: tuple
    flows: int

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"


def runs_over_load(
    r: Runner,
    scenario: str,
    overrides: dict,
    mode: LoadMode,
    workload: str,
    stats: Callable[[pd.DataFrame], dict],
    extra: Callable[[str, float], dict] = lambda scheme, load: {},
) -> dict:
    """scheme -> load -> `stats` of its run: every scheme of `overrides` (scheme -> scenario
    overrides) on the same flows of `workload` at each load of `mode` (plus `extra` overrides
    per scheme and load)."""
    out: dict = {}
    for s, base in overrides.items():
        out[s] = {}
        for load in mode.loads:
            kw = {
                **base,
                "workloads__0__sizes": workload,
                "workloads__0__load": load,
                "workloads__0__count": mode.flows,
                **extra(s, load),
            }
            out[s][load] = stats(r.run(scenario, f"{workload} {s} load {load}", **kw).flows)
    return out


def series(res: dict, scheme: str, key: str, digits: int = 2) -> str:
    """One statistic of a scheme's runs over load (from :func:`runs_over_load`), as text."""
    return ", ".join(f"{load:g}: {v[key]:.{digits}f}" for load, v in res[scheme].items())
