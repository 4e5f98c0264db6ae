"""The parallel engine's scaling model, measured: window profiles of the DCTCP permutation on
k = 8, 16 and 32 fat-trees split by pod into 2 to 64 parts (`fctlab-sim --window-profile`).

    .venv/bin/python benches/window_profile.py            # runs them, stores the JSON (about 2 min)
    .venv/bin/python benches/window_profile.py --markdown # the table of docs/performance.md

The runs are stored in docs/results/window_profile.json; the table is rendered from it, and a
test checks that docs/performance.md holds the rendering.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "docs" / "results" / "window_profile.json"
#: (k, simulated time, parts): the k = 16 and 32 runs are cut short, past the flows' start
RUNS = [(8, "210ms", (2, 8)), (16, "50ms", (2, 8, 16, 64)), (32, "10ms", (8, 16, 32, 64))]
#: Barrier costs for machines with more cores than this one (nanoseconds per window)
BARRIERS_NS = (500, 1000, 2000)


def parse(out: str) -> dict:
    """fctlab-sim's `key=value` lines (numbers, lists, the predictions by barrier cost)."""
    got: dict = {"predicted_speedup": {}}
    for line in out.splitlines():
        words = line.replace(", ", ",").split()
        kv = dict(w.split("=", 1) for w in words if "=" in w)
        if "barrier_ns" in kv:
            got["predicted_speedup"][kv["barrier_ns"]] = float(kv["predicted_speedup"])
        elif "barrier_ns_measured" in kv:
            got["barrier_ns_measured"] = float(kv["barrier_ns_measured"])
            got["barrier_threads"] = int(words[1].strip("()").split("=")[1])
            got["predicted_speedup_measured"] = float(kv["predicted_speedup"])
        else:
            for k, v in kv.items():
                try:
                    got[k] = json.loads(v)
                except json.JSONDecodeError:  # "flows=0/128", "lookahead_ns=none"
                    got[k] = v
    return got


def run() -> list:
    from fctlab import bench

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "fctlab-sim"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "fctlab-sim"
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for k, stop, parts_list in RUNS:
            sc = bench.scenario("fattree_k16_dctcp", False, k)
            sc["stop_time"] = stop
            f = Path(td) / f"k{k}.toml"
            f.write_text(bench.to_toml(sc))
            for parts in parts_list:
                cmd = [str(binary), str(f), "--window-profile", str(parts)]
                cmd += ["--barrier-ns", ",".join(map(str, BARRIERS_NS))]
                print(f"k={k} parts={parts} ...", file=sys.stderr, flush=True)
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                rows.append({"k": k, "stop_time": stop, **parse(out)})
    return rows


def markdown(rows: list) -> str:
    head = (
        "| fat-tree, simulated time | parts | lookahead | events | cut packets / events | busiest part / mean part (work) "
        "| busy windows | events per busy window | predicted speed-up: barrier measured here | "
        + " | ".join(f"{b / 1000:g} us barrier" for b in BARRIERS_NS)
        + " |\n|"
        + "---|" * (9 + len(BARRIERS_NS))
        + "\n"
    )
    lines = []
    for r in rows:
        in_parts = r["events"] - r["events_global"]
        balance = r["sum_of_max"] / (in_parts / r["parts"])
        measured = (  # only where this machine has a core per part
            f"{r['predicted_speedup_measured']:.2f} ({r['barrier_ns_measured']:.0f} ns)"
            if r["parts"] <= r["barrier_threads"]
            else "-"
        )
        lines.append(
            f"| k = {r['k']}, {r['stop_time']} | {r['parts']} | {r['lookahead_ns']} ns | {r['events']:,} "
            f"| {r['cut_packets'] / r['events']:.3f} | {balance:.2f} | {r['windows_busy']:,} "
            f"| {r['events'] / r['windows_busy']:.0f} | {measured} | "
            + " | ".join(f"{r['predicted_speedup'][str(b)]:.2f}" for b in BARRIERS_NS)
            + " |"
        )
    return head + "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--markdown", action="store_true", help="print the table from the stored runs")
    a = p.parse_args()
    if a.markdown:
        print(markdown(json.loads(STORE.read_text())), end="")
        return
    rows = run()
    STORE.write_text(json.dumps(rows, indent=1) + "\n")
    print(markdown(rows), end="")


if __name__ == "__main__":
    main()
