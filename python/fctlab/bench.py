"""``fctlab bench``: fixed benchmark scenarios, each run in a fresh process.

Prints, per benchmark, the simulated time, the wall time of the event loop alone, events per
wall-second, data packets delivered per wall-second and the peak resident memory of the
process. Benchmarks:

- ``dumbbell8_10g``: 8 long-lived flows over a 10 Gbps dumbbell for 1 simulated second;
- ``fattree_k8``: a permutation of 128 long-lived flows in a k=8 fat-tree, 0.2 s;
- ``fattree_k16_dctcp``: a permutation of 1024 long-lived DCTCP flows in a k=16 fat-tree
  (10 Gbps, 9000-byte packets, ECN at 15 packets), 0.21 s;
- ``flows_100k``: 100,000 finite flows (heavy-tailed sizes, Poisson arrivals at 50% load)
  on a 64-host leaf-spine, to check that finished flows release their state.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from importlib import resources
from typing import Optional, Sequence

BENCHMARKS = ("dumbbell8_10g", "fattree_k8", "fattree_k16_dctcp", "flows_100k")


def _scenario_text(name: str) -> str:
    return resources.files("fctlab.benchmarks").joinpath(f"{name}.toml").read_text(encoding="utf-8")


def _load_toml(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore
    return tomllib.loads(text)


def scenario(name: str, quick: bool) -> dict:
    """The scenario of benchmark ``name`` as a dict."""
    if name == "dumbbell8_10g":
        sc = _load_toml(_scenario_text(name))
        if quick:
            sc["stop_time"] = "200ms"
        return sc
    if name in ("fattree_k8", "fattree_k16_dctcp"):
        sc = _load_toml(_scenario_text(name))
        k = sc["network"]["k"]
        rng = random.Random(1)
        hosts = list(range(k ** 3 // 4))
        perm = hosts[:]
        while any(a == b for a, b in zip(hosts, perm)):
            rng.shuffle(perm)
        sc["flows"] = [{"src": f"h{a}", "dst": f"h{b}", "start": f"{rng.randrange(0, 100)}us"} for a, b in zip(hosts, perm)]
        if quick:
            sc["stop_time"] = "50ms" if k == 8 else "10ms"
        return sc
    if name == "flows_100k":
        n = 20_000 if quick else 100_000
        rng = random.Random(7)
        hosts = 64
        rate_bps = 10e9
        # Bounded Pareto-like sizes: 80% small (1-100 KB), 20% medium/large (100 KB-2 MB).
        sizes = [
            rng.randint(1_000, 100_000) if rng.random() < 0.8 else rng.randint(100_000, 2_000_000) for _ in range(n)
        ]
        mean = sum(sizes) / n
        load = 0.5
        lam = load * rate_bps * hosts / (8 * mean)  # flows per second over all hosts
        t = 0.0
        flows = []
        for s in sizes:
            t += rng.expovariate(lam)
            a = rng.randrange(hosts)
            b = rng.randrange(hosts - 1)
            b = b + 1 if b >= a else b
            flows.append({"src": f"h{a}", "dst": f"h{b}", "size": s, "start": f"{t * 1e9:.0f}ns"})
        return {
            "name": "flows_100k" if not quick else "flows_20k",
            "seed": 1,
            "network": {
                "topology": "leafspine",
                "leaves": 8,
                "spines": 4,
                "hosts_per_leaf": 8,
                "link_rate": "10Gbps",
                "fabric_link_rate": "40Gbps",
                "link_delay": "1us",
                "buffer": "200pkt",
            },
            "transport": {"min_rto": "1ms"},
            "flows": flows,
        }
    raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})")


def run_one(name: str, quick: bool) -> dict:
    from .api import run

    res = run(scenario(name, quick))
    s = res.summary
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "benchmark": name,
        "sim_time_s": s["sim_time_s"],
        "loop_wall_s": s["wall_time_s"],
        "events": s["events"],
        "events_per_s": s["events_per_s"],
        "data_packets_delivered": s["data_packets_delivered"],
        "data_packets_per_wall_s": s["data_packets_delivered_per_wall_s"],
        "flows_total": s["flows_total"],
        "flows_completed": s["flows_completed"],
        "peak_rss_mb": peak_kb / 1024.0,
    }


#: Start-up targets, whole process: the demo run (including writing its result files) and
#: `fctlab validate` of the same scenario.
STARTUP_TARGETS_S = {"run demo": 0.3, "validate demo": 0.15}


def startup(repeats: int) -> dict:
    """Median wall time, over ``repeats`` runs each, of ``fctlab run`` and ``fctlab validate``
    of scenarios/examples/demo.toml as whole processes (the interpreter that runs this)."""
    import statistics
    import tempfile

    demo = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "demo.toml"
    if not demo.is_file():
        demo = Path(__file__).resolve().parent / "benchmarks" / "dumbbell8_10g.toml"
    out = {}
    with tempfile.TemporaryDirectory(prefix="fctlab-bench-") as td:
        cmds = {
            "run demo": [sys.executable, "-m", "fctlab.cli", "run", str(demo), "--out", td, "-q"],
            "validate demo": [sys.executable, "-m", "fctlab.cli", "validate", str(demo)],
        }
        for name, cmd in cmds.items():
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True)
                times.append(time.perf_counter() - t0)
                if p.returncode != 0:
                    raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
            out[name] = statistics.median(times)
    return out


def configure(p) -> None:
    """The arguments of ``fctlab bench [NAME ...] [--quick] [--json]``."""
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    p.add_argument("--quick", action="store_true", help="shorter runs (for CI)")
    p.add_argument("--json", action="store_true", help="print one JSON object per benchmark")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")


def main_bench(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab bench`` with the arguments after ``bench``; returns the exit status."""
    from .cli import main

    return main(["bench", *(sys.argv[1:] if argv is None else argv)])


def run(args) -> int:
    """Runs ``fctlab bench``."""
    names = args.names or list(BENCHMARKS)
    for n in names:
        if n not in BENCHMARKS:
            print(f"fctlab bench: error: unknown benchmark {n!r} (known: {', '.join(BENCHMARKS)})", file=sys.stderr)
            return 2
    if args.child:
        print(json.dumps(run_one(names[0], args.quick)))
        return 0
    if not args.json:
        print(f"{'benchmark':<16}{'sim s':>8}{'loop wall s':>13}{'events/s':>12}{'data pkts':>12}{'data pkts/wall s':>18}{'flows done':>14}{'peak RSS MB':>13}")
    for n in names:
        cmd = [sys.executable, "-m", "fctlab.bench", "--child", n] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"fctlab bench: error: benchmark {n} failed:\n{proc.stderr.strip()}", file=sys.stderr)
            return 1
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        if args.json:
            print(json.dumps(r))
        else:
            print(
                f"{n:<16}{r['sim_time_s']:>8.3f}{r['loop_wall_s']:>13.3f}{r['events_per_s']:>12,.0f}"
                f"{r['data_packets_delivered']:>12,}{r['data_packets_per_wall_s']:>18,.0f}"
                f"{str(r['flows_completed']) + '/' + str(r['flows_total']):>14}{r['peak_rss_mb']:>13.0f}"
            )
    if not args.no_startup and not args.names:
        st = startup(3 if args.quick else 7)
        if args.json:
            print(json.dumps({"benchmark": "startup", **{k.replace(" ", "_") + "_s": v for k, v in st.items()}}))
        else:
            print()
            print(f"{'start-up (whole process, median)':<36}{'wall s':>8}{'target s':>10}")
            for k, v in st.items():
                target = STARTUP_TARGETS_S[k]
                print(f"{'fctlab ' + k:<36}{v:>8.3f}{target:>10.2f}{'' if v <= target else '  over target'}")
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
