#!/usr/bin/env python3
"""Repeats the ATCP kernel experiments on the namespace testbed and prints their Markdown
tables, with the simulator's figures for the same scenario files (the Theorem 1 and
100 MB + 10 MB figures of docs/testbed.md come from this script). Needs root; takes a few
minutes.

    sudo .venv/bin/python scripts/kernel_experiments.py [--runs 5] [--out out/kernel-experiments]

Theorem 1 (scenarios/papers/atcp/kernel_theorem1.toml): the throughput ratio of the weight-2
flow over the weight-1 flow after a 2 s warm-up, under ECN threshold marking and under a
drop-tail queue, with ATCP halving once per congestion episode (the default) and once per
window (as Linux's reno), beside the simulator's ratio for the same scenario and halving rule.

Theorem 1 with three weights (scenarios/papers/atcp/kernel_theorem1_three.toml, weights 1, 2
and 4, ECN threshold marking): each flow's share of the throughput after the warm-up, kernel
runs and their mean, beside the simulator's shares with Linux's CWR round (`cwr = true`, the
`linux` profile) and without it, for each halving rule, and the largest relative difference
between the simulator (CWR on) and the kernel's mean.

Theorem 2 (scenarios/papers/atcp/kernel_big_small.toml): completion times of the large and
the small flow under Reno and under ATCP.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pandas as pd

import fctlab
from fctlab.testbed import run_testbed

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "scenarios" / "papers" / "atcp"
WARMUP_S = 2.0

QUEUES = ("ECN threshold 60 pkt", "drop-tail")


def scenario(queue: str, out: Path) -> Path:
    """kernel_theorem1.toml, or a copy without ECN marking for the drop-tail runs."""
    src = PAPER / "kernel_theorem1.toml"
    if queue != "drop-tail":
        return src
    lines = [l for l in src.read_text().splitlines() if not l.startswith(("queue =", "ecn_threshold =", "ecn ="))]
    out.mkdir(parents=True, exist_ok=True)
    dst = out / "kernel_theorem1_droptail.toml"
    dst.write_text("\n".join(lines) + "\n")
    return dst


def steady_ratio(cwnd: pd.DataFrame) -> float:
    rate = cwnd[cwnd["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean()
    return float(rate[1] / rate[0])


def steady_shares(cwnd: pd.DataFrame) -> list[float]:
    """Each flow's share of the throughput after the warm-up (mean traced rate)."""
    rate = cwnd[cwnd["time_s"] >= WARMUP_S].groupby("flow_id")["rate_bps"].mean().sort_index()
    return (rate / rate.sum()).tolist()


def pct(shares: list[float]) -> str:
    return " / ".join(f"{100 * x:.1f}" for x in shares)


def fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def theorem1(runs: int, out: Path) -> None:
    print("| queue | ATCP halving | kernel ratios (runs) | mean | spread | simulator |")
    print("|---|---|---|---|---|---|")
    for qname in QUEUES:
        path = scenario(qname, out)
        for halving in ("per-episode", "per-window"):
            sim_ratio = steady_ratio(fctlab.run(path, set=[f"transport.halving={halving}"]).cwnd)
            ratios = []
            for i in range(runs):
                d = out / f"thm1-{qname.split()[0].lower()}-{halving}-{i}"
                run_testbed(path, d, atcp_halving=halving)
                ratios.append(steady_ratio(pd.read_parquet(d / "cwnd.parquet")))
                print(f"  {qname}, {halving}, run {i}: {ratios[-1]:.3f}", file=sys.stderr)
            print(
                f"| {qname} | {halving} | {fmt(ratios)} | {statistics.mean(ratios):.2f} | "
                f"{max(ratios) - min(ratios):.2f} | {sim_ratio:.2f} |"
            )


def theorem1_three(runs: int, out: Path) -> None:
    path = PAPER / "kernel_theorem1_three.toml"
    print()
    print(
        "| ATCP halving | kernel shares, % (runs) | kernel mean | simulator, CWR on (`linux`) | "
        "simulator, CWR off | largest difference, CWR on |"
    )
    print("|---|---|---|---|---|---|")
    for halving in ("per-episode", "per-window"):
        sim = {
            cwr: steady_shares(fctlab.run(path, set=[f"transport.halving={halving}", f"transport.cwr={cwr}"]).cwnd)
            for cwr in ("true", "false")
        }
        runs_shares = []
        for i in range(runs):
            d = out / f"thm1three-{halving}-{i}"
            run_testbed(path, d, set=[f"transport.halving={halving}"])
            runs_shares.append(steady_shares(pd.read_parquet(d / "cwnd.parquet")))
            print(f"  three weights, {halving}, run {i}: {pct(runs_shares[-1])}", file=sys.stderr)
        mean = [statistics.mean(r[k] for r in runs_shares) for k in range(len(runs_shares[0]))]
        worst = max(abs(s - k) / k for s, k in zip(sim["true"], mean))
        print(
            f"| {halving} | {'; '.join(pct(r) for r in runs_shares)} | {pct(mean)} | {pct(sim['true'])} | "
            f"{pct(sim['false'])} | {100 * worst:.1f}% |"
        )


def theorem2(runs: int, out: Path) -> None:
    print()
    print("| protocol | large flow FCT, s (runs) | mean | small flow FCT, s (runs) | mean |")
    print("|---|---|---|---|---|")
    means = {}
    for proto in ("tcp", "atcp"):
        large, small = [], []
        for i in range(runs):
            d = out / f"bigsmall-{proto}-{i}"
            run_testbed(PAPER / "kernel_big_small.toml", d, set=[f'transport.protocol="{proto}"'])
            f = pd.read_parquet(d / "flows.parquet").set_index("tag")
            large.append(float(f.loc["large", "fct_s"]))
            small.append(float(f.loc["small", "fct_s"]))
            print(f"  {proto}, run {i}: large {large[-1]:.3f} s, small {small[-1]:.3f} s", file=sys.stderr)
        means[proto] = (statistics.mean(large), statistics.mean(small))
        name = "Reno" if proto == "tcp" else "ATCP"
        print(f"| {name} | {fmt(large)} | {means[proto][0]:.3f} | {fmt(small)} | {means[proto][1]:.3f} |")
    dl = (means["atcp"][0] - means["tcp"][0]) / means["tcp"][0]
    ds = (means["atcp"][1] - means["tcp"][1]) / means["tcp"][1]
    print(f"\nATCP vs Reno: large flow {dl:+.1%}, small flow {ds:+.1%}")
    for proto in ("tcp", "atcp"):
        f = fctlab.run(PAPER / "kernel_big_small.toml", set=[f'transport.protocol="{proto}"']).flows.set_index("tag")
        name = "Reno" if proto == "tcp" else "ATCP"
        print(
            f"simulator, {name}: large flow {f.loc['large', 'fct_s']:.3f} s, small flow {f.loc['small', 'fct_s']:.3f} s "
            f"(small flow timeouts: {int(f.loc['small', 'timeouts'])})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("out/kernel-experiments"))
    ap.add_argument("--only", choices=("theorem1", "theorem1-three", "theorem2"))
    a = ap.parse_args()
    if a.only in (None, "theorem1"):
        theorem1(a.runs, a.out)
    if a.only in (None, "theorem1-three"):
        theorem1_three(a.runs, a.out)
    if a.only in (None, "theorem2"):
        theorem2(a.runs, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
