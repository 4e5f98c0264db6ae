"""``fctlab bench``: fixed benchmark scenarios, each run in a fresh process.

Prints, per benchmark, the simulated time, the wall time of the event loop alone, events per
wall-second, data packets delivered per wall-second and the peak resident memory of the
process. Benchmarks:

- ``dumbbell8_10g``: 8 long-lived flows over a 10 Gbps dumbbell for 1 simulated second;
- ``fattree_k8``: a permutation of 128 long-lived flows in a k=8 fat-tree, 0.2 s;
- ``fattree_k8_dctcp`` and ``fattree_k16_dctcp``: a permutation of long-lived DCTCP flows
  in a k=8 (128 hosts) and a k=16 (1024 hosts) fat-tree (10 Gbps, 9000-byte packets, ECN at
  15 packets), 0.21 s; the same set-up at two sizes, so that the cost per packet as the
  topology grows is their ratio (printed, with its target);
- ``fattree_k8_hpcc``: fattree_k8_dctcp's permutation under HPCC (every port stamps its
  telemetry into every data packet, every sender paces at its rate within its window; HPCC
  keeps the queues short enough that no packet is lost): what HPCC costs per packet, as its
  wall time per data packet over DCTCP's (printed, with its target);
- ``fattree_k8_ndp``: fattree_k8_dctcp's permutation under NDP, sprayed packet by packet over
  trimming switches (every switch draws a next hop per packet, the receivers' pacers pull):
  what per-packet path choice, trimming and pulls cost, as NDP's wall time per data packet over
  DCTCP's (printed, with its target);
- ``fattree_k8_lossless``: fattree_k8_dctcp on lossless ports (PFC): what priority flow control
  costs per packet, as the wall time per data packet over fattree_k8_dctcp's (printed, with
  its target);
- ``rcp_dumbbell``: dumbbell8_10g's network under RCP (every port runs its rate control,
  senders pace, every packet carries the router header): 8 long-lived flows, 1 s;
- ``homa_websearch``: 600 web-search messages (Poisson at 60% load) on a 16-host leaf-spine
  under Homa (receivers' grants, strict-priority ports, shortest-first NICs);
- ``flows_100k``: 100,000 finite flows (heavy-tailed sizes, Poisson arrivals at 50% load)
  on a 64-host leaf-spine, to check that finished flows release their state;
- ``flows_1m``: 1,000,000 finite flows (Pareto sizes, shape 1.2, mean 25 KB, Poisson at 50%
  load) on the same leaf-spine: memory and speed with a million flows;
- ``flows_4m`` (only with ``--full``, or by name): 4,000,000 flows of flows_1m's traffic on
  the same leaf-spine; the state a run holds follows the flows alive at once, not the flows of
  the run, so its peak memory is flows_1m's (the ratio is printed, with its target);
- ``flows_10m`` (only with ``--full``, or by name): 10,000,000 flows of the same traffic on a
  128-host leaf-spine;
- ``rdma_1m`` (only with ``--full``, or by name): flows_1m's traffic as 1,000,000 RDMA messages
  under DCQCN on lossless ports; its peak memory over flows_1m's is printed, with its target;
- ``websearch_k8_dctcp`` and ``websearch_k8_pfabric`` (only with ``--full``, or by name): 6,000
  web-search flows (Poisson at 60% load) in a k=8 fat-tree under DCTCP (ECN at 65 packets, 250-packet
  buffers, marking NICs) and under pFabric (its ports and NICs, 36 KB buffers): what scheduling
  every packet by its rank costs, as pFabric's wall time per data packet over DCTCP's (printed,
  with its target).

Each benchmark runs as ``fctlab run --out`` does (flows written to ``flows.parquet`` as they
finish, into a temporary directory); "whole s" is the run and the writing of its results.

``--against FCTLAB_SIM`` runs the packet-level benchmarks also with another build's
``fctlab-sim`` binary (``benches/baseline.sh REV`` builds one from any revision),
alternating the two ``--repeats`` times, and prints both medians and their ratio: a before
and after in one run, on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from importlib import resources
from typing import Optional, Sequence

from . import api
from .cli import main

BENCHMARKS = (
    "dumbbell8_10g",
    "fattree_k8",
    "fattree_k8_dctcp",
    "fattree_k16_dctcp",
    "fattree_k8_hpcc",
    "fattree_k8_ndp",
    "fattree_k8_lossless",
    "rcp_dumbbell",
    "homa_websearch",
    "flows_100k",
    "flows_1m",
    "flows_4m",
    "flows_10m",
    "rdma_1m",
    "websearch_k8_dctcp",
    "websearch_k8_pfabric",
)

#: Benchmarks run only with ``--full`` (or when named).
FULL_ONLY = ("flows_4m", "flows_10m", "rdma_1m", "websearch_k8_dctcp", "websearch_k8_pfabric")

#: The peak memory of flows_4m is at most this multiple of flows_1m's.
MEMORY_GROWTH_TARGET = 1.15
#: pFabric's wall time per data packet is at most this multiple of DCTCP's on the same flows.
PFABRIC_COST_TARGET = 1.5
#: HPCC's wall time per data packet is at most this multiple of DCTCP's on the same permutation.
HPCC_COST_TARGET = 1.5
#: NDP's wall time per data packet (sprayed, trimmed, pulled) is at most this multiple of
#: DCTCP's over ECMP on the same permutation.
NDP_COST_TARGET = 1.5
#: Lossless ports' wall time per data packet is at most this multiple of lossy ones'.
LOSSLESS_COST_TARGET = 1.5
#: The peak memory of a million RDMA messages is at most this multiple of flows_1m's: the same
#: figure, within the run-to-run spread of flows_1m's own peak on one machine (173 to 179 MB).
RDMA_MEMORY_TARGET = 1.05

#: The data packets per wall-second of the k=16 permutation are at least this share of the
#: k=8 one's (the same set-up at two sizes).
SCALE_TARGET = 0.5


def _scenario_text(name: str) -> str:
    return resources.files("fctlab.benchmarks").joinpath(f"{name}.toml").read_text(encoding="utf-8")


def _load_toml(text: str) -> dict:
    try:
        import tomllib  # lazy: optional: Python < 3.11 has no tomllib and needs tomli
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore  # lazy: optional, see above
    return tomllib.loads(text)


#: The network of the finite-flow benchmarks: 64 hosts on 8 leaves and 4 spines, 10 Gbps
#: hosts, 40 Gbps fabric.
LEAFSPINE_64 = {
    "topology": "leafspine",
    "leaves": 8,
    "spines": 4,
    "hosts_per_leaf": 8,
    "link_rate": "10Gbps",
    "fabric_link_rate": "40Gbps",
    "link_delay": "1us",
    "buffer": "200pkt",
}


def scenario(name: str, quick: bool, k: Optional[int] = None) -> dict:
    """The scenario of benchmark ``name`` as a dict; ``k`` resizes a fat-tree benchmark (the
    side-by-side runs against htsim use the k=16 DCTCP set-up at k=8, peers/htsim/run.sh)."""
    if name in ("dumbbell8_10g", "rcp_dumbbell"):
        sc = _load_toml(_scenario_text(name))
        if quick:
            sc["stop_time"] = "200ms"
        return sc
    if name == "homa_websearch":
        sc = _load_toml(_scenario_text(name))
        if quick:
            sc["workloads"][0]["count"] = 150
        return sc
    if name == "fattree_k8_hpcc":
        sc = scenario("fattree_k8_dctcp", quick, k)
        sc["name"] = "fattree_k8_hpcc" if k in (None, 8) else f"fattree_k{k}_hpcc"
        sc["network"].update(queue="droptail")
        del sc["network"]["ecn_threshold"]
        sc["transport"]["protocol"] = "hpcc"
        return sc
    if name == "fattree_k8_ndp":
        sc = scenario("fattree_k8_dctcp", quick, k)
        sc["name"] = "fattree_k8_ndp" if k in (None, 8) else f"fattree_k{k}_ndp"
        del sc["network"]["ecn_threshold"]
        # the same 9000-byte packets on the wire, with NDP's 64-byte header; a first window
        # above the pull loop's round trip (about 8 packets at 10 Gbps over six hops)
        sc["network"].update(queue="trim", trim_threshold="8pkt", nic_queue="trim", load_balancing="permutation")
        sc["transport"] = {"protocol": "ndp", "mss": "8936B", "header_bytes": "64B", "ndp": {"ndp_initial_window": 30}}
        return sc
    if name == "fattree_k8_lossless":
        sc = scenario("fattree_k8_dctcp", quick, k)
        sc["name"] = "fattree_k8_lossless" if k in (None, 8) else f"fattree_k{k}_lossless"
        sc["network"]["pfc"] = True
        return sc
    if name == "rdma_1m":
        sc = _pareto_flows("rdma_50k" if quick else "rdma_1m", 8, 50_000 if quick else 1_000_000)
        sc["network"].update(pfc=True, queue="red", red_min_threshold="5KB", red_max_threshold="200KB")
        sc["network"].update(red_max_p=0.01, red_weight=1.0, red_gentle=False, red_ecn=True)
        sc["transport"]["protocol"] = "dcqcn"
        return sc
    if name in ("fattree_k8", "fattree_k8_dctcp", "fattree_k16_dctcp"):
        requested = name
        if name == "fattree_k8_dctcp":
            name, k = "fattree_k16_dctcp", 8 if k is None else k
        sc = _load_toml(_scenario_text(name))
        if k is not None:
            sc["network"]["k"] = k
        k = sc["network"]["k"]
        sc["name"] = requested if requested == "fattree_k8" else f"fattree_k{k}_dctcp"
        rng = random.Random(1)
        hosts = list(range(k**3 // 4))
        perm = hosts[:]
        while any(a == b for a, b in zip(hosts, perm)):
            rng.shuffle(perm)
        sc["flows"] = [
            {"src": f"h{a}", "dst": f"h{b}", "start": f"{rng.randrange(0, 100)}us"} for a, b in zip(hosts, perm)
        ]
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
            "network": dict(LEAFSPINE_64),
            "transport": {"min_rto": "1ms"},
            "flows": flows,
        }
    if name == "flows_10m":
        # Pareto sizes as flows_1m's: the web search distribution (1.7 MB mean) would make ten
        # million flows 17 TB, some 11 billion packets and hours of wall time.
        return _pareto_flows("flows_100k_of_10m" if quick else "flows_10m", 16, 100_000 if quick else 10_000_000)
    if name == "flows_1m":
        return _pareto_flows("flows_50k" if quick else "flows_1m", 8, 50_000 if quick else 1_000_000)
    if name == "flows_4m":
        return _pareto_flows("flows_200k" if quick else "flows_4m", 8, 200_000 if quick else 4_000_000)
    if name in ("websearch_k8_dctcp", "websearch_k8_pfabric"):
        return _websearch_k8(name, 600 if quick else 6_000)
    raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})")


def _pareto_flows(name: str, hosts_per_leaf: int, count: int) -> dict:
    """``count`` flows with Pareto sizes (shape 1.2, mean 25 KB), Poisson arrivals at 50% load,
    all to all on the 8-leaf, 4-spine leaf-spine with ``hosts_per_leaf`` hosts on each leaf."""
    return {
        "name": name,
        "seed": 1,
        "network": {**LEAFSPINE_64, "hosts_per_leaf": hosts_per_leaf},
        "transport": {"min_rto": "1ms"},
        "workloads": [
            {
                "kind": "poisson",
                "senders": "h*",
                "receivers": "h*",
                "pattern": "all_to_all",
                "sizes": {"dist": "pareto", "shape": 1.2, "mean": "25KB"},
                "load": 0.5,
                "count": count,
            }
        ],
    }


def _websearch_k8(name: str, count: int) -> dict:
    """``count`` web-search flows, Poisson at 60% load, all to all in a k=8 fat-tree (10 Gbps,
    1 us links) under DCTCP or pFabric, each with its switches as its paper sets them."""
    net = {"topology": "fattree", "k": 8, "link_rate": "10Gbps", "link_delay": "1us"}
    if name.endswith("pfabric"):
        net["queue"] = "pfabric"
        transport = {"protocol": "pfabric"}
    else:
        net.update(queue="ecn", ecn_threshold="65pkt", buffer="250pkt", nic_queue="switch")
        transport = {"protocol": "dctcp", "min_rto": "1ms"}
    load = {"kind": "poisson", "senders": "h*", "receivers": "h*", "sizes": "websearch", "load": 0.6, "count": count}
    return {"name": name, "seed": 1, "network": net, "transport": transport, "workloads": [load]}


def run_one(name: str, quick: bool) -> dict:
    """Benchmark ``name`` run as ``fctlab run --out`` runs it, into a temporary directory."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fctlab-bench-") as td:
        out = Path(td) / "run"
        stream = api._flows_stream(out)
        try:
            res = api._run(scenario(name, quick), [], None, 0.5, [], flows_stream=stream)
            res.write(out)
        finally:
            stream.discard()
    whole = time.perf_counter() - t0
    s = res.summary
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "benchmark": name,
        "sim_time_s": s["sim_time_s"],
        "loop_wall_s": s["wall_time_s"],
        "whole_wall_s": whole,
        "events": s["events"],
        "events_per_s": s["events_per_s"],
        "data_packets_delivered": s["data_packets_delivered"],
        "data_packets_per_wall_s": s["data_packets_delivered_per_wall_s"],
        # every packet the run made (data, ACKs, control), per second of the event loop
        "packets_per_wall_s": s["packets_created"] / s["wall_time_s"] if s["wall_time_s"] > 0 else 0.0,
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


#: The sweep benchmark's base scenario: a short Poisson run on a dumbbell.
SWEEP_BASE = """name = "sweep_bench"
seed = 1
stop_time = "60ms"
[network]
topology = "dumbbell"
senders = 4
receivers = 4
link_rate = "1Gbps"
link_delay = "10us"
buffer = "100pkt"
[transport]
min_rto = "1ms"
[[workloads]]
kind = "poisson"
senders = "s*"
receivers = "r*"
pattern = "pairs"
sizes = "websearch"
load = 0.5
until = "50ms"
"""

#: Sweep targets: 2 local workers take at most this share of the sequential wall time; a
#: group-by over all flows of the query store takes at most this long.
SWEEP_TARGETS = {"parallel_share": 0.6, "query_s": 2.0}


def sweeps(quick: bool) -> dict:
    """Wall time of one sweep (40 runs; 12 with ``quick``) on 1 and on 2 local workers, whether
    both stored the same flows byte for byte, and the time of a group-by query over a store of
    100 runs of about 1,300 flows each (20 runs with ``quick``)."""
    import pyarrow.parquet as pq  # lazy: pyarrow and fctlab.sweeps (pyarrow) cost 80 ms of start-up

    from .sweeps import query, sweep

    n = 12 if quick else 40
    out = {}
    with tempfile.TemporaryDirectory(prefix="fctlab-bench-sweep-") as td:
        d = Path(td)
        (d / "base.toml").write_text(SWEEP_BASE)
        (d / "sweep.toml").write_text(
            f'base = "base.toml"\nseeds = {n // 2}\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n'
        )
        quiet = lambda m: None  # noqa: E731
        for w in (1, 2):
            t0 = time.perf_counter()
            sweep(d / "sweep.toml", d / f"w{w}", workers=w, log=quiet)
            out[f"workers_{w}_s"] = time.perf_counter() - t0
        runs = sorted(p.name for p in (d / "w1" / "flows").glob("run_id=*"))
        out["identical"] = runs == sorted(p.name for p in (d / "w2" / "flows").glob("run_id=*")) and all(
            pq.read_table(d / "w1" / "flows" / r / "flows.parquet").equals(
                pq.read_table(d / "w2" / "flows" / r / "flows.parquet")
            )
            for r in runs
        )
        out["runs"] = n
        m = 20 if quick else 100
        # many small flows per run, so that the query reads a store of some size
        (d / "q.toml").write_text(
            f'base = "base.toml"\nseeds = {m // 2}\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n'
            '"workloads.0.sizes" = ["10KB"]\n'
        )
        sweep(d / "q.toml", d / "q", log=quiet)
        t0 = time.perf_counter()
        df = query(
            d / "q",
            'SELECT "transport.protocol", seed, count(*) AS flows, quantile_cont(fct_s, 0.99) AS p99 '
            "FROM flows GROUP BY ALL ORDER BY ALL",
        )
        out["query_s"] = time.perf_counter() - t0
        out["query_runs"], out["query_flows"] = m, int(df["flows"].sum())
    return out


def configure(p) -> None:
    """The arguments of ``fctlab bench [NAME ...] [--quick] [--json]``."""
    p.description = __doc__
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    p.add_argument("--quick", action="store_true", help="shorter runs (for CI)")
    p.add_argument("--full", action="store_true", help=f"also the long benchmarks ({', '.join(FULL_ONLY)})")
    p.add_argument("--json", action="store_true", help="print one JSON object per benchmark")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")
    p.add_argument("--no-sweep", action="store_true", help="skip the sweep measurement")
    p.add_argument(
        "--against",
        metavar="FCTLAB_SIM",
        help="also run each benchmark with this fctlab-sim binary of another build "
        "(benches/baseline.sh REV builds one) and print both, with their ratio",
    )
    p.add_argument(
        "--repeats", type=int, metavar="N", help="runs of each benchmark, median reported (default 1; 3 with --against)"
    )


def main_bench(argv: Optional[Sequence[str]] = None) -> int:
    """``fctlab bench`` with the arguments after ``bench``; returns the exit status."""
    return main(["bench", *(sys.argv[1:] if argv is None else argv)])


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, dict):
        return "{ " + ", ".join(_toml_pairs(v)) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _toml_pairs(d: dict) -> list:
    return [f"{json.dumps(k)} = {_toml_value(x)}" for k, x in d.items()]


def to_toml(sc: dict) -> str:
    """A benchmark scenario as TOML (what ``fctlab-sim`` reads): top-level keys, tables, and
    arrays of tables for lists of dicts."""
    lines = [
        f"{k} = {_toml_value(v)}"
        for k, v in sc.items()
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not (v and isinstance(v[0], dict)))
    ]
    for k, v in sc.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"] + _toml_pairs(v)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                lines += ["", f"[[{k}]]"] + _toml_pairs(item)
    return "\n".join(lines) + "\n"


def run_sim(binary: str, name: str, quick: bool) -> dict:
    """Benchmark ``name`` run by a ``fctlab-sim`` binary (another build), as a record like
    :func:`run_one`'s; raises RuntimeError with the binary's message when it fails."""
    with tempfile.TemporaryDirectory(prefix="fctlab-bench-") as td:
        path = Path(td) / f"{name}.toml"
        path.write_text(to_toml(scenario(name, quick)), encoding="utf-8")
        with open(Path(td) / "out", "w+") as fo, open(Path(td) / "err", "w+") as fe:
            t0 = time.perf_counter()
            try:
                proc = subprocess.Popen([binary, str(path)], stdout=fo, stderr=fe)
            except OSError as e:
                raise RuntimeError(f"cannot run {binary}: {e.strerror}") from None
            # wait4 gives this child's own peak RSS
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            whole = time.perf_counter() - t0
            fo.seek(0)
            fe.seek(0)
            out, err = fo.read(), fe.read()
        peak_kb = usage.ru_maxrss
    if proc.returncode != 0:
        said = (err.strip() or out.strip()).splitlines()
        raise RuntimeError(said[-1] if said else f"exit status {proc.returncode}")
    fields = dict(tok.split("=", 1) for tok in out.split() if "=" in tok)
    done, total = fields["flows"].split("/")
    return {
        "benchmark": name,
        "sim_time_s": float(fields["sim_time_s"]),
        "loop_wall_s": float(fields["wall_time_s"]),
        "whole_wall_s": whole,
        "events": int(fields["events"]),
        "events_per_s": float(fields["events_per_s"]),
        "data_packets_delivered": int(fields["data_packets_delivered"]),
        "data_packets_per_wall_s": float(fields["data_pkts_per_wall_s"]),
        "flows_total": int(total),
        "flows_completed": int(done),
        "peak_rss_mb": peak_kb / 1024.0,
        "binary": binary,
    }


def _median_run(rows: list) -> dict:
    """The run with the median data packets per wall-second (the lower middle one of an even
    count), with every run's figure beside it."""
    ordered = sorted(rows, key=lambda r: r["data_packets_per_wall_s"])
    r = dict(ordered[(len(ordered) - 1) // 2])
    r["repeats"] = len(rows)
    r["data_packets_per_wall_s_runs"] = [x["data_packets_per_wall_s"] for x in rows]
    return r


def _this_build(name: str, quick: bool) -> dict:
    cmd = [sys.executable, "-m", "fctlab.bench", "--child", name] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip())
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _print_scale(results: dict, others: dict, as_json: bool) -> None:
    """The k=16 over k=8 DCTCP ratio of data packets per wall-second, when both ran."""
    if "fattree_k8_dctcp" in results and "fattree_k16_dctcp" in results:

        def share(rs):
            return (
                rs["fattree_k16_dctcp"]["data_packets_per_wall_s"] / rs["fattree_k8_dctcp"]["data_packets_per_wall_s"]
            )

        scale = {"benchmark": "scale", "k16_over_k8": share(results), "target": SCALE_TARGET}
        if "fattree_k8_dctcp" in others and "fattree_k16_dctcp" in others:
            scale["other_build_k16_over_k8"] = share(others)
        if as_json:
            print(json.dumps(scale))
        else:
            print()
            line = (
                f"data packets per wall-second, k=16 over k=8 DCTCP permutation: {scale['k16_over_k8']:.2f} "
                f"(target at least {SCALE_TARGET}{'' if scale['k16_over_k8'] >= SCALE_TARGET else ', under target'})"
            )
            if "other_build_k16_over_k8" in scale:
                line += f"; other build {scale['other_build_k16_over_k8']:.2f}"
            print(line)


def _print_ratio(as_json: bool, name: str, key: str, ratio: float, target: float, what: str) -> None:
    """One ratio between two benchmarks against its upper target, as a line or as JSON."""
    if as_json:
        print(json.dumps({"benchmark": name, key: ratio, "target": target}))
        return
    print()
    print(f"{what}: {ratio:.2f} (target at most {target}{'' if ratio <= target else ', over target'})")


def _print_pfabric_cost(results: dict, as_json: bool) -> None:
    """pFabric's wall time per data packet over DCTCP's on the same flows, when both ran."""
    if "websearch_k8_dctcp" not in results or "websearch_k8_pfabric" not in results:
        return
    ratio = (
        results["websearch_k8_dctcp"]["data_packets_per_wall_s"]
        / results["websearch_k8_pfabric"]["data_packets_per_wall_s"]
    )
    what = "wall time per data packet, pFabric over DCTCP on the same web-search flows"
    _print_ratio(as_json, "pfabric_cost", "pfabric_over_dctcp", ratio, PFABRIC_COST_TARGET, what)


def _print_hpcc_cost(results: dict, as_json: bool) -> None:
    """HPCC's wall time per data packet over DCTCP's on the same permutation, when both ran."""
    if "fattree_k8_dctcp" not in results or "fattree_k8_hpcc" not in results:
        return
    ratio = (
        results["fattree_k8_dctcp"]["data_packets_per_wall_s"] / results["fattree_k8_hpcc"]["data_packets_per_wall_s"]
    )
    what = "wall time per data packet, HPCC over DCTCP on the k=8 permutation"
    _print_ratio(as_json, "hpcc_cost", "hpcc_over_dctcp", ratio, HPCC_COST_TARGET, what)


def _print_ndp_cost(results: dict, as_json: bool) -> None:
    """NDP's wall time per packet over DCTCP's on the same permutation, when both ran: per
    packet of any kind (the target; NDP sends a pull beside each ACK), and per data packet."""
    dctcp, ndp = results.get("fattree_k8_dctcp"), results.get("fattree_k8_ndp")
    if dctcp is None or ndp is None or not dctcp.get("packets_per_wall_s") or not ndp.get("packets_per_wall_s"):
        return
    ratio = dctcp["packets_per_wall_s"] / ndp["packets_per_wall_s"]
    per_data = dctcp["data_packets_per_wall_s"] / ndp["data_packets_per_wall_s"]
    if as_json:
        print(
            json.dumps(
                {
                    "benchmark": "ndp_cost",
                    "ndp_over_dctcp": ratio,
                    "per_data_packet": per_data,
                    "target": NDP_COST_TARGET,
                }
            )
        )
        return
    what = "wall time per packet, NDP (sprayed, trimmed, pulled) over DCTCP (ECMP) on the k=8 permutation"
    _print_ratio(False, "ndp_cost", "ndp_over_dctcp", ratio, NDP_COST_TARGET, what)
    print(f"  per data packet: {per_data:.2f} (NDP sends an ACK and a pull per data packet, DCTCP an ACK)")


def _print_lossless_cost(results: dict, as_json: bool) -> None:
    """Lossless ports' wall time per data packet over lossy ones', when both ran."""
    if "fattree_k8_dctcp" not in results or "fattree_k8_lossless" not in results:
        return
    base = results["fattree_k8_dctcp"]["data_packets_per_wall_s"]
    ratio = base / results["fattree_k8_lossless"]["data_packets_per_wall_s"]
    what = "wall time per data packet, lossless (PFC) over lossy ports, DCTCP on the k=8 permutation"
    _print_ratio(as_json, "lossless_cost", "lossless_over_lossy", ratio, LOSSLESS_COST_TARGET, what)


def _print_rdma_memory(results: dict, as_json: bool) -> None:
    """A million RDMA messages' peak memory over flows_1m's, when both ran."""
    if "flows_1m" not in results or "rdma_1m" not in results:
        return
    ratio = results["rdma_1m"]["peak_rss_mb"] / results["flows_1m"]["peak_rss_mb"]
    what = "peak memory, 1,000,000 RDMA messages (DCQCN) over 1,000,000 TCP flows of one load"
    _print_ratio(as_json, "rdma_memory", "rdma_1m_over_flows_1m", ratio, RDMA_MEMORY_TARGET, what)


def _print_memory_growth(results: dict, as_json: bool) -> None:
    """The flows_4m over flows_1m ratio of peak memory, when both ran."""
    if "flows_1m" not in results or "flows_4m" not in results:
        return
    ratio = results["flows_4m"]["peak_rss_mb"] / results["flows_1m"]["peak_rss_mb"]
    what = "peak memory, 4,000,000 over 1,000,000 flows of one load"
    _print_ratio(as_json, "memory_growth", "flows_4m_over_1m", ratio, MEMORY_GROWTH_TARGET, what)


def _print_startup(quick: bool, as_json: bool) -> None:
    """The whole-process start-up times of `fctlab run` and `fctlab validate`."""
    st = startup(3 if quick else 7)
    if as_json:
        print(json.dumps({"benchmark": "startup", **{k.replace(" ", "_") + "_s": v for k, v in st.items()}}))
    else:
        print()
        print(f"{'start-up (whole process, median)':<36}{'wall s':>8}{'target s':>10}")
        for k, v in st.items():
            target = STARTUP_TARGETS_S[k]
            print(f"{'fctlab ' + k:<36}{v:>8.3f}{target:>10.2f}{'' if v <= target else '  over target'}")


def _print_sweep(quick: bool, as_json: bool) -> int:
    """The sweep benchmark: 1 and 2 workers, the same flows, and a query's time."""
    sw = sweeps(quick)
    share = sw["workers_2_s"] / sw["workers_1_s"]
    if as_json:
        print(json.dumps({"benchmark": "sweep", **sw, "parallel_share": share}))
    else:
        print()
        print(
            f"sweep of {sw['runs']} runs: 1 worker {sw['workers_1_s']:.1f} s, 2 workers {sw['workers_2_s']:.1f} s "
            f"({share:.0%} of sequential, target {SWEEP_TARGETS['parallel_share']:.0%}"
            f"{'' if share <= SWEEP_TARGETS['parallel_share'] else ', over target'}); same flows: "
            f"{'yes' if sw['identical'] else 'NO'}"
        )
        print(
            f"query over {sw['query_runs']} runs ({sw['query_flows']:,} flows), p99 FCT by protocol and seed: "
            f"{sw['query_s']:.2f} s (target {SWEEP_TARGETS['query_s']:.0f} s"
            f"{'' if sw['query_s'] <= SWEEP_TARGETS['query_s'] else ', over target'})"
        )
    if not sw["identical"]:
        print("fctlab bench: error: the sweep on 2 workers stored other flows than on 1", file=sys.stderr)
        return 1
    return 0


def run(args) -> int:
    """Runs ``fctlab bench``."""
    names = args.names or [b for b in BENCHMARKS if args.full or b not in FULL_ONLY]
    for n in names:
        if n not in BENCHMARKS:
            print(f"fctlab bench: error: unknown benchmark {n!r} (known: {', '.join(BENCHMARKS)})", file=sys.stderr)
            return 2
    if args.child:
        print(json.dumps(run_one(names[0], args.quick)))
        return 0
    against = args.against
    if against is not None:
        found = shutil.which(against) if "/" not in against else (against if Path(against).is_file() else None)
        if found is None:
            print(
                f"fctlab bench: error: --against {against}: no such fctlab-sim binary "
                f"(benches/baseline.sh REV builds one from a revision)",
                file=sys.stderr,
            )
            return 2
        against = str(Path(found).resolve())
    repeats = args.repeats if args.repeats is not None else (3 if against else 1)
    if repeats < 1:
        print(f"fctlab bench: error: --repeats {repeats}: must be at least 1", file=sys.stderr)
        return 2
    if not args.json:
        print(
            f"{'benchmark':<22}{'sim s':>8}{'loop wall s':>13}{'whole s':>9}{'events/s':>12}{'data pkts':>12}{'data pkts/wall s':>18}{'flows done':>18}{'peak RSS MB':>13}"
        )
    results, others = {}, {}
    for n in names:
        mine, theirs, their_error = [], [], None
        for _ in range(repeats):
            try:
                mine.append(_this_build(n, args.quick))
            except RuntimeError as e:
                print(f"fctlab bench: error: benchmark {n} failed:\n{e}", file=sys.stderr)
                return 1
            if against and their_error is None:
                try:
                    theirs.append(run_sim(against, n, args.quick))
                except RuntimeError as e:
                    their_error = str(e)
        r = _median_run(mine)
        results[n] = r
        if theirs:
            others[n] = _median_run(theirs)
            r["against"] = {
                "binary": against,
                "data_packets_per_wall_s": others[n]["data_packets_per_wall_s"],
                "data_packets_per_wall_s_runs": others[n]["data_packets_per_wall_s_runs"],
                "peak_rss_mb": others[n]["peak_rss_mb"],
                "ratio": r["data_packets_per_wall_s"] / others[n]["data_packets_per_wall_s"],
            }
        elif their_error is not None:
            r["against"] = {"binary": against, "error": their_error}
        if args.json:
            print(json.dumps(r))
            continue
        print(
            f"{n:<22}{r['sim_time_s']:>8.3f}{r['loop_wall_s']:>13.3f}{r['whole_wall_s']:>9.2f}{r['events_per_s']:>12,.0f}"
            f"{r['data_packets_delivered']:>12,}{r['data_packets_per_wall_s']:>18,.0f}"
            f"{str(r['flows_completed']) + '/' + str(r['flows_total']):>18}{r['peak_rss_mb']:>13.0f}"
        )
        if n in others:
            o = others[n]
            print(
                f"{'  other build':<22}{o['sim_time_s']:>8.3f}{o['loop_wall_s']:>13.3f}{o['whole_wall_s']:>9.2f}{o['events_per_s']:>12,.0f}"
                f"{o['data_packets_delivered']:>12,}{o['data_packets_per_wall_s']:>18,.0f}"
                f"{str(o['flows_completed']) + '/' + str(o['flows_total']):>18}{o['peak_rss_mb']:>13.0f}"
                f"   this build {r['against']['ratio']:.2f}x"
            )
        elif their_error is not None:
            print(f"{'  other build':<22}failed: {their_error}")
    _print_scale(results, others, args.json)
    _print_memory_growth(results, args.json)
    _print_pfabric_cost(results, args.json)
    _print_hpcc_cost(results, args.json)
    _print_ndp_cost(results, args.json)
    _print_lossless_cost(results, args.json)
    _print_rdma_memory(results, args.json)
    if repeats > 1 and not args.json:
        print(f"(each figure: the median of {repeats} runs" + (", the two builds alternating)" if against else ")"))
    if others and not args.json:
        print("(other build: its fctlab-sim, the Rust core alone: its peak RSS has no Python interpreter in it)")
    if not args.no_startup and not args.names:
        _print_startup(args.quick, args.json)
    if not args.no_sweep and not args.names:
        return _print_sweep(args.quick, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
