"""Items 9-11 of the ATCP reproduction: Theorems 1 and 2 on the real kernel.

The namespace testbed runs the scenario files `kernel_*.toml` of scenarios/papers/atcp/ with
the kernel's ATCP (a BPF congestion control, docs/kernel.md) and the kernel's Reno, and the
simulator runs the same files (their own settings: the `linux` profile) beside them
(docs/testbed.md):

- item 9, `kernel_theorem1.toml`: the throughput ratio of the weight-2 flow over the weight-1
  flow after a warm-up, under ECN threshold marking and under a drop-tail queue, with ATCP
  halving once per congestion episode (the default) and once per window (as Linux's reno);
- item 10, `kernel_theorem1_three.toml`: each flow's share of the throughput with weights 1, 2
  and 4 (ECN threshold marking), beside the simulator's with Linux's CWR round and without it;
- item 11, `kernel_big_small.toml`: completion times of a large and a small flow under Reno
  and under ATCP (Theorem 2, scaled).

Each set-up runs several times (once with ``--quick``); a graded row's number is the mean over
the runs with the half-width of its 95% interval, shown but not graded over fewer than five.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path

import pandas as pd

from ..stats import interval
from ..testbed import run_testbed
from .common import NO_STATEMENT, Item, Runner, fmt_pct, fmt_time, rel_change
from .thesis_kernel import kernel_problem

#: Runs of each set-up, run length and warm-up left out of the rates, quick and full.
RUNS = {True: 1, False: 5}
STOP = {True: "2.5s", False: "8s"}
WARMUP_S = {True: 1.0, False: 2.0}
HALVINGS = ("per-episode", "per-window")
#: Item 9's queues: the file's ECN threshold marking, and a drop-tail copy of the file.
QUEUES = {"ecn": "ECN threshold 60 pkt", "droptail": "drop-tail"}
THEOREM1 = "kernel_theorem1.toml"
THREE = "kernel_theorem1_three.toml"
BIG_SMALL = "kernel_big_small.toml"
#: The weights of kernel_theorem1_three.toml, and the shares Theorem 1's rule a : b gives them.
WEIGHTS = (1, 2, 4)
RULE_SHARES = [w / sum(WEIGHTS) for w in WEIGHTS]


def _set_args(sets: dict) -> list:
    """``--set`` arguments of the testbed from overrides."""
    return [f"{k}={str(v).lower() if isinstance(v, bool) else repr(v)}".replace("'", '"') for k, v in sets.items()]


def _kernel(r: Runner, scenario: str, name: str, sets: dict, out: Path, halving=None) -> tuple:
    """One testbed run of `scenario` with overrides `sets`: its flows and cwnd trace."""
    d = Path(out) / name
    t0 = time.perf_counter()
    run_testbed(r.path(scenario), d, set=_set_args(sets), atcp_halving=halving)
    flows = pd.read_parquet(d / "flows.parquet")
    cwnd = pd.read_parquet(d / "cwnd.parquet") if (d / "cwnd.parquet").exists() else None
    shutil.rmtree(d, ignore_errors=True)
    r.log(f"    testbed {name}: {' '.join(_set_args(sets))}, {time.perf_counter() - t0:.1f} s wall")
    return flows, cwnd


def _simulated(r: Runner, scenario: str, label: str, sets: dict):
    """The simulator's run of `scenario` with overrides `sets` (dotted keys)."""
    return r.run(scenario, label, **{k.replace(".", "__"): v for k, v in sets.items()})


def steady_rates(cwnd: pd.DataFrame, warmup_s: float) -> pd.Series:
    """Each flow's mean traced rate after the warm-up, by flow id."""
    return cwnd[cwnd["time_s"] >= warmup_s].groupby("flow_id")["rate_bps"].mean().sort_index()


def steady_shares(cwnd: pd.DataFrame, warmup_s: float) -> list:
    """Each flow's share of the throughput after the warm-up."""
    rate = steady_rates(cwnd, warmup_s)
    return (rate / rate.sum()).tolist()


def _stat(values: list) -> dict:
    m, h = interval(values)
    return {"runs": list(values), "mean": m, "half_width": h}


def _pm(s: dict, fmt=lambda x: f"{x:.2f}") -> str:
    """'mean ± half-width' of a _stat (the mean alone over one run)."""
    return fmt(s["mean"]) + (f" ± {fmt(s['half_width'])}" if math.isfinite(s["half_width"]) else "")


def _runs_note(s: dict, fmt=lambda x: f"{x:.2f}") -> str:
    return f"runs {', '.join(fmt(x) for x in s['runs'])}" if len(s["runs"]) > 1 else ""


def _droptail_copy(r: Runner, out) -> str:
    """kernel_theorem1.toml without its ECN lines (a drop-tail queue), written into `out`: its
    absolute path, which the runner and the testbed take as a scenario name."""
    src = r.path(THEOREM1).read_text().splitlines()
    dst = Path(out) / "kernel_theorem1_droptail.toml"
    dst.write_text("\n".join(x for x in src if not x.startswith(("queue =", "ecn_threshold =", "ecn ="))) + "\n")
    return str(dst.resolve())


def _mode_sets(quick: bool) -> dict:
    return {"stop_time": STOP[quick]}


# --------------------------------------------------------------------------- item 9


def item9(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(9, why)
    runs, warm = RUNS[mode.quick], WARMUP_S[mode.quick]
    it = r.new_item(
        9,
        f"scenario `{THEOREM1}` on the kernel (`fctlab testbed run`): two long-lived flows with the kernel's ATCP, "
        "fixed weights 1 and 2, through a 100 Mbps bottleneck (2 ms one-way delay, 100-packet buffers), "
        f"{STOP[mode.quick]} per run, under ECN threshold marking at 60 packets and under a drop-tail queue (a copy "
        "of the file without its ECN lines), with "
        f"ATCP halving once per congestion episode (the default) and once per window (as Linux's reno); {runs} "
        f"run{'s' if runs > 1 else ''} per set-up. The ratio is the weight-2 flow's throughput over the weight-1 "
        f"flow's after a {warm:g} s warm-up (the senders' acknowledged bytes in the cwnd trace), beside the "
        "simulator's on the same file and halving rule (the file's `linux` profile)",
    )
    numbers: dict = {}
    files = {"ecn": THEOREM1, "droptail": _droptail_copy(r, out)}
    for q in QUEUES:
        for halving in HALVINGS:
            sets = _mode_sets(mode.quick)
            sim = _simulated(r, files[q], f"simulator {q} {halving}", {**sets, "transport.atcp.halving": halving})
            ratios = []
            for i in range(runs):
                _, cwnd = _kernel(r, files[q], f"thm1_{q}_{halving}_{i}", sets, out, halving=halving)
                rate = steady_rates(cwnd, warm)
                ratios.append(float(rate.iloc[1] / rate.iloc[0]))
            rate = steady_rates(sim.cwnd, warm)
            numbers[f"{q}/{halving}"] = {**_stat(ratios), "simulator": float(rate.iloc[1] / rate.iloc[0])}
    Path(files["droptail"]).unlink()
    it.numbers = {"ratios": numbers, "runs": runs, "stop_time": STOP[mode.quick], "warmup_s": warm}
    for key, s in numbers.items():
        q, halving = key.split("/")
        rid = f"item9.ratio_{q}" + ("_per_window" if halving == "per-window" else "")
        shown = f"{_pm(s)} ({_runs_note(s) + '; ' if runs > 1 else ''}simulator {s['simulator']:.2f})"
        it.rows.append(r.expected.row(rid, s["mean"], shown, half_width=s["half_width"], samples=runs, unit="run"))
    _item9_notes(it, numbers)
    return it


def _item9_notes(it: Item, numbers: dict) -> None:
    it.explanation.append(
        "Theorem 1 assumes that both flows halve at every congestion event (its assumption (3): the router drops "
        "packets of both flows). ECN threshold marking provides it: while the queue holds 60 packets or more every "
        "arriving packet is marked, so both flows hear of the congestion within one round trip. A drop-tail queue "
        "drops only the packets that find it full, often of one flow alone, so the flows' halvings are not "
        "synchronized; with independent losses weighted AIMD gives sqrt(a/b) = 1.41, with synchronized ones "
        f"a/b = 2. Kernel drop-tail ratios here: {_pm(numbers['droptail/per-episode'])} (per-episode) and "
        f"{_pm(numbers['droptail/per-window'])} (per-window); the simulator's drop-tail queue, with perfectly "
        "regular senders, drops from both flows at nearly every overflow "
        f"({numbers['droptail/per-episode']['simulator']:.2f})."
    )
    it.explanation.append(
        "Linux reduces its window over the round trip after a mark (PRR) while still sending; those packets meet the "
        "same long queue and would cause a second halving a round trip later, more often for the larger flow. The "
        "kernel's ATCP therefore halves once per congestion episode by default (docs/kernel.md); the per-window rows "
        "show the kernel's usual rule, and the simulator takes the same rule from the file's `halving` key."
    )


# --------------------------------------------------------------------------- item 10


def _pct(shares: list) -> str:
    return " / ".join(f"{100 * x:.1f}" for x in shares)


def item10(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(10, why)
    runs, warm = RUNS[mode.quick], WARMUP_S[mode.quick]
    it = r.new_item(
        10,
        f"scenario `{THREE}` on the kernel (`fctlab testbed run`): the network and marking of item 9 with three "
        "long-lived flows of fixed weights 1, 2 and 4 (the kernel's `atcp_w1`, `atcp_w2`, `atcp_w3`), "
        f"{STOP[mode.quick]} per run, {runs} run{'s' if runs > 1 else ''} per halving rule. Each flow's share is its "
        f"mean traced rate after a {warm:g} s warm-up over the sum of the three, beside the simulator's on the same "
        "file with Linux's CWR round (`cwr = true`, the `linux` profile) and without it",
    )
    numbers: dict = {}
    for halving in HALVINGS:
        sets = {**_mode_sets(mode.quick), "transport.atcp.halving": halving}
        sim = {
            cwr: steady_shares(
                _simulated(r, THREE, f"simulator {halving} cwr={cwr}", {**sets, "transport.cwr": cwr}).cwnd, warm
            )
            for cwr in (True, False)
        }
        kern = [
            steady_shares(_kernel(r, THREE, f"thm1three_{halving}_{i}", _mode_sets(mode.quick), out, halving)[1], warm)
            for i in range(runs)
        ]
        mean = [sum(k[j] for k in kern) / runs for j in range(len(WEIGHTS))]
        worst = max(abs(s - k) / k for s, k in zip(sim[True], mean))
        numbers[halving] = {
            "kernel": kern,
            "kernel_mean": mean,
            "simulator_cwr": sim[True],
            "simulator_no_cwr": sim[False],
            "largest_difference_cwr": worst,
        }
        it.add(
            f"Throughput shares of weights 1 / 2 / 4 on the kernel, {halving} halving (%)",
            f"no statement: Theorem 1 is stated for two flows (its rule a : b gives {_pct(RULE_SHARES)})",
            f"{_pct(mean)}"
            + (f" (mean of {runs} runs: {'; '.join(_pct(k) for k in kern)})" if runs > 1 else " (1 run)")
            + f"; simulator {_pct(sim[True])} with the CWR round, {_pct(sim[False])} without; largest difference "
            f"from the kernel with the CWR round {fmt_pct(worst, False)}",
            NO_STATEMENT,
        )
    it.numbers = {"shares": numbers, "runs": runs, "stop_time": STOP[mode.quick], "warmup_s": warm}
    it.explanation.append(
        "The paper states Theorem 1 for two flows; the rows set the kernel's three shares beside the shares its rule "
        "would give three flows, and beside the simulator's, without grading them. Marks during the kernel's CWR "
        "round do not cut again (Linux enters CWR only from the Open state), and the echoes of the packets sent "
        "during the reduction, arriving just after it, meet the per-episode rule and keep the window; with "
        "per-window they halve it again at once, mostly the heaviest flow's (docs/testbed.md, \"Theorem 1, three "
        "weights\"). Without its CWR round the simulator's window falls at once and no packet of the reduced round "
        "is marked."
    )
    return it


# --------------------------------------------------------------------------- item 11

BIG_SMALL_LABEL = {"tcp": "Reno", "atcp": "ATCP"}


def _ratio_interval(base: dict, new: dict) -> float:
    """Half-width of the relative change between two means over independent runs (their
    intervals combined in quadrature, relative to the base)."""
    a, b = base["mean"], new["mean"]
    if not (math.isfinite(base["half_width"]) and math.isfinite(new["half_width"])):
        return math.nan
    return (b / a) * math.hypot(base["half_width"] / a, new["half_width"] / b)


def item11(r: Runner, mode, out) -> Item:
    why = kernel_problem()
    if why:
        return r.placeholder(11, why)
    runs = RUNS[mode.quick]
    it = r.new_item(
        11,
        f"scenario `{BIG_SMALL}` on the kernel (`fctlab testbed run`): the paper's experiment scaled to a 100 Mbps "
        "drop-tail bottleneck (2 ms one-way delay, 100-packet buffers): a 20 MB flow, and a 5 MB flow joining 0.6 s "
        "later (when the large flow has passed the threshold), under the kernel's Reno and its ATCP (`step`, W_H = 3, "
        f"W_L = 1, T = 5 MB); {runs} run{'s' if runs > 1 else ''} each, beside the simulator's on the same file",
    )
    kern, sim = {}, {}
    for proto in ("tcp", "atcp"):
        sets = {"transport.protocol": proto}
        fl = [_kernel(r, BIG_SMALL, f"bigsmall_{proto}_{i}", sets, out)[0].set_index("tag") for i in range(runs)]
        kern[proto] = {k: _stat([float(f.loc[k, "fct_s"]) for f in fl]) for k in ("large", "small")}
        f = _simulated(r, BIG_SMALL, f"simulator {proto}", sets).flows.set_index("tag")
        sim[proto] = {k: float(f.loc[k, "fct_s"]) for k in ("large", "small")}
        sim[proto]["small_timeouts"] = int(f.loc["small", "timeouts"])
    change = {k: rel_change(kern["atcp"][k]["mean"], kern["tcp"][k]["mean"]) for k in ("large", "small")}
    hw = {k: _ratio_interval(kern["tcp"][k], kern["atcp"][k]) for k in ("large", "small")}
    it.numbers = {"kernel": kern, "simulator": sim, "change": change, "change_half_width": hw, "runs": runs}
    for k, rid in (("small", "item11.small_fct_change"), ("large", "item11.large_fct_change")):
        t, a = kern["tcp"][k], kern["atcp"][k]
        shown = (
            f"{fmt_time(t['mean'])} -> {fmt_time(a['mean'])} ({fmt_pct(change[k])}"
            + (f" ± {fmt_pct(hw[k], False)}" if math.isfinite(hw[k]) else "")
            + f"); simulator {fmt_time(sim['tcp'][k])} -> {fmt_time(sim['atcp'][k])} "
            f"({fmt_pct(rel_change(sim['atcp'][k], sim['tcp'][k]))})"
        )
        it.rows.append(r.expected.row(rid, change[k], shown, half_width=hw[k], samples=runs, unit="run"))
    it.explanation.append(
        "Completion times on the kernel, Reno against ATCP: "
        + "; ".join(
            f"{k} flow {_pm(kern['tcp'][k], fmt_time)} ({_runs_note(kern['tcp'][k]) or '1 run'}) against "
            f"{_pm(kern['atcp'][k], fmt_time)} ({_runs_note(kern['atcp'][k]) or '1 run'})"
            for k in ("large", "small")
        )
        + ". The change's interval combines the two sets of runs' intervals (the runs are not paired)."
    )
    it.explanation.append(
        "The large flow finishes when the link has carried both flows' bytes, whatever the order, so it is not "
        "delayed (Theorem 2). The paper's -33% is for a 10 MB flow beside a 100 MB one at 100 Mbps; the file scales "
        "the sizes to 5 and 20 MB and the threshold to 5 MB."
    )
    if abs(rel_change(sim["atcp"]["small"], sim["tcp"]["small"])) < abs(change["small"]):
        it.explanation.append(
            "The simulator's gain for the small flow is smaller than the kernel's: its small ATCP flow loses its last "
            "segment near its end, alone in flight, and the loss probe for one segment in flight is due at the RTO, "
            "as in Linux; the kernel's runs do not lose that segment (docs/testbed.md)."
        )
    return it
