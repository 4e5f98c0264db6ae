"""`fctlab bench --quick` runs every benchmark and reports sane, non-zero figures. Not timed:
the figures are only checked to be measured (speed targets are read from the benchmark's
output by people, not asserted here). One memory target is asserted, being no timing: four
times the flows at one load peak at no more than 1.15 times the memory."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fctlab.bench import (
    BENCHMARKS,
    FULL_ONLY,
    HPCC_COST_TARGET,
    NDP_COST_TARGET,
    LOSSLESS_COST_TARGET,
    RDMA_MEMORY_TARGET,
    SCALE_TARGET,
    scenario,
    to_toml,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.benchmark
def test_bench_quick_runs_and_reports_every_benchmark():
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "bench", "--quick", "--json"], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    by_name = {r["benchmark"]: r for r in rows}
    startup = by_name.pop("startup")
    assert startup["run_demo_s"] > 0 and startup["validate_demo_s"] > 0
    scale = by_name.pop("scale")
    assert scale["target"] == SCALE_TARGET
    assert scale["k16_over_k8"] == pytest.approx(
        by_name["fattree_k16_dctcp"]["data_packets_per_wall_s"] / by_name["fattree_k8_dctcp"]["data_packets_per_wall_s"]
    )
    # HPCC's and lossless ports' cost per packet against DCTCP's on the k=8 permutation
    # (figures, not timed here)
    dctcp = by_name["fattree_k8_dctcp"]["data_packets_per_wall_s"]
    hpcc = by_name.pop("hpcc_cost")
    assert hpcc["target"] == HPCC_COST_TARGET
    assert hpcc["hpcc_over_dctcp"] == pytest.approx(dctcp / by_name["fattree_k8_hpcc"]["data_packets_per_wall_s"])
    ndp = by_name.pop("ndp_cost")
    assert ndp["target"] == NDP_COST_TARGET
    assert ndp["ndp_over_dctcp"] == pytest.approx(
        by_name["fattree_k8_dctcp"]["packets_per_wall_s"] / by_name["fattree_k8_ndp"]["packets_per_wall_s"]
    )
    assert ndp["per_data_packet"] == pytest.approx(dctcp / by_name["fattree_k8_ndp"]["data_packets_per_wall_s"])
    lossless = by_name.pop("lossless_cost")
    assert lossless["target"] == LOSSLESS_COST_TARGET
    assert lossless["lossless_over_lossy"] == pytest.approx(
        dctcp / by_name["fattree_k8_lossless"]["data_packets_per_wall_s"]
    )
    sw = by_name.pop("sweep")
    assert sw["identical"] is True and sw["runs"] == 12
    assert sw["workers_1_s"] > 0 and sw["workers_2_s"] > 0 and sw["parallel_share"] > 0
    assert sw["query_runs"] == 20 and sw["query_flows"] > 0 and sw["query_s"] > 0
    assert sorted(by_name) == sorted(b for b in BENCHMARKS if b not in FULL_ONLY)
    # the long benchmarks run when named (here their quick versions: 100,000 of ten million
    # flows, 200,000 flows beside flows_1m's 50,000 at one load, 600 of the web-search flows)
    web = ("websearch_k8_dctcp", "websearch_k8_pfabric")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fctlab.cli",
            "bench",
            "--quick",
            "--json",
            "flows_1m",
            "flows_4m",
            "flows_10m",
            "rdma_1m",
            *web,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    long = {r["benchmark"]: r for r in map(json.loads, p.stdout.splitlines())}
    by_name.update((n, long[n]) for n in ("flows_4m", "flows_10m", "rdma_1m", *web))
    # the RDMA messages' peak memory against flows_1m's (a figure: the target is for the full
    # million, and quick runs sit near the process's own floor)
    rdma = long["rdma_memory"]
    assert rdma["target"] == RDMA_MEMORY_TARGET
    assert rdma["rdma_1m_over_flows_1m"] == pytest.approx(
        long["rdma_1m"]["peak_rss_mb"] / long["flows_1m"]["peak_rss_mb"]
    )
    assert long["rdma_1m"]["flows_completed"] == long["rdma_1m"]["flows_total"] == 50_000
    assert all(by_name[n]["flows_completed"] == by_name[n]["flows_total"] == 600 for n in web)
    # pFabric's cost per packet against DCTCP's on the same flows (a figure, not timed here)
    cost = long["pfabric_cost"]
    assert cost["pfabric_over_dctcp"] == pytest.approx(
        long[web[0]]["data_packets_per_wall_s"] / long[web[1]]["data_packets_per_wall_s"]
    )
    assert cost["target"] == 1.5
    assert by_name["flows_10m"]["flows_completed"] == by_name["flows_10m"]["flows_total"] == 100_000
    assert by_name["flows_4m"]["flows_completed"] == by_name["flows_4m"]["flows_total"] == 200_000
    # four times the flows at one load hold no more memory (the state follows the flows alive)
    growth = long["memory_growth"]
    assert growth["flows_4m_over_1m"] == pytest.approx(
        long["flows_4m"]["peak_rss_mb"] / long["flows_1m"]["peak_rss_mb"]
    )
    assert growth["flows_4m_over_1m"] <= growth["target"] == 1.15
    for name, r in by_name.items():
        assert r["events"] > 0 and r["events_per_s"] > 0, name
        assert r["data_packets_delivered"] > 0 and r["data_packets_per_wall_s"] > 0, name
        assert r["loop_wall_s"] > 0 and r["peak_rss_mb"] > 0, name
        assert r["whole_wall_s"] > r["loop_wall_s"], name
        # events/s is events over the loop's wall time
        assert r["events_per_s"] == pytest.approx(r["events"] / r["loop_wall_s"], rel=1e-6), name
    # the quick runs simulate what they say
    assert by_name["dumbbell8_10g"]["sim_time_s"] == pytest.approx(0.2)
    assert by_name["fattree_k8"]["sim_time_s"] == pytest.approx(0.05)
    assert by_name["flows_100k"]["flows_completed"] == by_name["flows_100k"]["flows_total"] == 20_000
    assert by_name["flows_1m"]["flows_completed"] == by_name["flows_1m"]["flows_total"] == 50_000
    assert by_name["fattree_k8_dctcp"]["sim_time_s"] == pytest.approx(0.05)
    assert by_name["fattree_k8_dctcp"]["flows_total"] == 128 and by_name["fattree_k16_dctcp"]["flows_total"] == 1024
    assert by_name["rcp_dumbbell"]["sim_time_s"] == pytest.approx(0.2)
    assert by_name["homa_websearch"]["flows_completed"] == by_name["homa_websearch"]["flows_total"] == 150


def _fctlab_sim():
    """This checkout's fctlab-sim binary (built by the Rust tests), or None."""
    for p in (ROOT / "target" / "release" / "fctlab-sim", ROOT / "target" / "debug" / "fctlab-sim"):
        if p.is_file():
            return p
    return None


def test_bench_scenarios_written_as_toml_read_back_the_same():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    for name in BENCHMARKS:
        sc = scenario(name, True)
        assert tomllib.loads(to_toml(sc)) == sc, name


@pytest.mark.benchmark
def test_against_another_build_runs_both_and_the_same_build_gives_the_same_packets(tmp_path):
    sim = _fctlab_sim()
    if sim is None:
        pytest.skip("no fctlab-sim binary under target/ (cargo build --release -p fctlab-sim builds it)")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "fctlab.cli",
            "bench",
            "fattree_k8_dctcp",
            "--quick",
            "--json",
            "--against",
            str(sim),
            "--repeats",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.splitlines()[0])
    assert r["repeats"] == 2 and len(r["data_packets_per_wall_s_runs"]) == 2
    other = r["against"]
    assert other["binary"] == str(sim.resolve()) and len(other["data_packets_per_wall_s_runs"]) == 2
    assert other["ratio"] == pytest.approx(r["data_packets_per_wall_s"] / other["data_packets_per_wall_s"])
    assert other["peak_rss_mb"] > 0
    # The binary runs the scenario fctlab.bench wrote as TOML: a build of this source simulates
    # exactly what the in-process run did (measured speed aside).
    toml = tmp_path / "fattree_k8_dctcp.toml"
    toml.write_text(to_toml(scenario("fattree_k8_dctcp", True)))
    run = subprocess.run([str(sim), str(toml)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"data_packets_delivered={r['data_packets_delivered']} " in run.stdout


def test_against_a_missing_binary_is_a_clear_error():
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "bench", "fattree_k8", "--quick", "--against", "/nonexistent/fctlab-sim"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2
    assert "--against /nonexistent/fctlab-sim: no such fctlab-sim binary" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "bench", "fattree_k8", "--quick", "--repeats", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "--repeats 0: must be at least 1" in p.stderr
