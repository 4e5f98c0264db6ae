"""The flows of a crosscheck that waited for a timeout, per size bucket and simulator.

    PYTHONPATH=python .venv/bin/python scripts/crosscheck_timeouts.py OUT_DIR [RTO_S] [INITIAL_RTO_S]

For each simulator of OUT_DIR (the `--out` of `fctlab crosscheck`): per size bucket, the completed
flows per seed whose FCT is at least RTO_S (default 0.25 s: they waited for a retransmission
timeout), of them those at least INITIAL_RTO_S (default 1.25 s: a lost SYN or SYN-ACK), and the
mean FCT of the other flows. A bucket's mean FCT is carried by the first two when they are few.

Where the runs list their drops (fctlab's `drops.parquet`, with `--set monitor.drops=true`;
htsim's `D` lines in `htsim.out`), a second table counts those flows by their first lost
packet: the SYN, data at the sending host's NIC, data elsewhere, or none listed (htsim does not
list ACKs, so a lost SYN-ACK shows there; fctlab lists it as `synack`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from fctlab.crosscheck.report import BUCKETS, _bucket


def main(argv: list) -> int:
    out = Path(argv[0])
    rto = float(argv[1]) if len(argv) > 1 else 0.25
    initial = float(argv[2]) if len(argv) > 2 else 1.25
    seeds = sorted(out.glob("seed-*"))
    sims = sorted(p.name for p in seeds[0].iterdir() if p.is_dir()) if seeds else []
    print(
        "| simulator | bucket | flows per seed | waited a timeout | of them the initial RTO | mean FCT of the others |"
    )
    print("|---|---|---|---|---|---|")
    for sim in sims:
        f = pd.concat([pd.read_parquet(s / sim / "flows.parquet") for s in seeds])
        f = f[f["completed"] & f["size_bytes"].notna()]
        f["bucket"] = f["size_bytes"].map(_bucket)
        for name, _, _ in BUCKETS:
            g = f[f["bucket"] == name]
            if g.empty:
                continue
            n = len(seeds)
            rest = g[g["fct_s"] < rto]["fct_s"].mean()
            print(
                f"| {sim} | {name} | {len(g) / n:.1f} | {(g['fct_s'] >= rto).sum() / n:.2f} | "
                f"{(g['fct_s'] >= initial).sum() / n:.2f} | {rest * 1e3:.3f} ms |"
            )
    kinds = _loss_kinds(out, seeds, sims, rto)
    if kinds:
        print()
        print("| simulator | first lost packet of a flow that waited a timeout | flows, all seeds |")
        print("|---|---|---|")
        for (sim, kind), n in sorted(kinds.items()):
            print(f"| {sim} | {kind} | {n} |")
    return 0


def _loss_kinds(out: Path, seeds: list, sims: list, rto: float) -> dict:
    """(simulator, kind of the first lost packet) -> flows that waited a timeout."""
    import json

    from fctlab.plan import load

    counts: dict = {}
    for s in seeds:
        for sim in sims:
            d = s / sim
            f = pd.read_parquet(d / "flows.parquet")
            waited = f[f["completed"] & (f["fct_s"] >= rto)]
            if (d / "drops.parquet").is_file():
                drops = pd.read_parquet(d / "drops.parquet").sort_values("time_s")
                first = {r.flow_id: (r.kind, r.link.split("->")[0]) for r in list(drops.itertuples())[::-1]}
            elif (d / "htsim.out").is_file():
                summ = json.loads((d / "summary.json").read_text())
                plan = load(summ["scenario_file"], summ["overrides"] or [])
                first = {}
                for line in reversed((d / "htsim.out").read_text().splitlines()):
                    if line.startswith("D "):
                        _, _, port, flow, pkt = line.split()
                        first[int(flow)] = ("syn" if int(pkt) < 0 else "data", plan.ports[int(port)].src)
            else:
                continue
            for r in waited.itertuples():
                kind, node = first.get(r.flow_id, ("none listed", ""))
                if kind == "data":
                    kind = "data at the sending host's NIC" if node == r.src else "data elsewhere"
                counts[(sim, kind)] = counts.get((sim, kind), 0) + 1
    return counts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
