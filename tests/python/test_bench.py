"""`fctlab bench --quick` runs every benchmark and reports sane, non-zero figures. Not timed:
the figures are only checked to be measured (speed targets are read from the benchmark's
output by people, not asserted here)."""

import json
import subprocess
import sys

import pytest

from fctlab.bench import BENCHMARKS


@pytest.mark.benchmark
def test_bench_quick_runs_and_reports_every_benchmark():
    p = subprocess.run([sys.executable, "-m", "fctlab.cli", "bench", "--quick", "--json"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    by_name = {r["benchmark"]: r for r in rows}
    startup = by_name.pop("startup")
    assert startup["run_demo_s"] > 0 and startup["validate_demo_s"] > 0
    sw = by_name.pop("sweep")
    assert sw["identical"] is True and sw["runs"] == 12
    assert sw["workers_1_s"] > 0 and sw["workers_2_s"] > 0 and sw["parallel_share"] > 0
    assert sw["query_runs"] == 20 and sw["query_flows"] > 0 and sw["query_s"] > 0
    assert sorted(by_name) == sorted(BENCHMARKS)
    for name, r in by_name.items():
        assert r["events"] > 0 and r["events_per_s"] > 0, name
        assert r["data_packets_delivered"] > 0 and r["data_packets_per_wall_s"] > 0, name
        assert r["loop_wall_s"] > 0 and r["peak_rss_mb"] > 0, name
        # events/s is events over the loop's wall time
        assert r["events_per_s"] == pytest.approx(r["events"] / r["loop_wall_s"], rel=1e-6), name
    # the quick runs simulate what they say
    assert by_name["dumbbell8_10g"]["sim_time_s"] == pytest.approx(0.2)
    assert by_name["fattree_k8"]["sim_time_s"] == pytest.approx(0.05)
    assert by_name["flows_100k"]["flows_completed"] == by_name["flows_100k"]["flows_total"] == 20_000
