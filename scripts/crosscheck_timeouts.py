"""The flows of a crosscheck that waited for a timeout, per size bucket and simulator.

    PYTHONPATH=python .venv/bin/python scripts/crosscheck_timeouts.py OUT_DIR [RTO_S] [INITIAL_RTO_S]

For each simulator of OUT_DIR (the `--out` of `fctlab crosscheck`): per size bucket, the completed
flows per seed whose FCT is at least RTO_S (default 0.25 s: they waited for a retransmission
timeout), of them those at least INITIAL_RTO_S (default 1.25 s: a lost SYN or SYN-ACK), and the
mean FCT of the other flows. A bucket's mean FCT is carried by the first two when they are few.
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
