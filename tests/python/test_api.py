"""The Python API and result files, on real runs of the simulator."""

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import fctlab

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scenarios" / "examples" / "demo.toml"

FLOW_COLUMNS = [
    "flow_id",
    "src",
    "dst",
    "size_bytes",
    "bytes_delivered",
    "start_s",
    "finish_s",
    "fct_s",
    "ideal_fct_s",
    "slowdown",
    "completed",
    "protocol",
    "retransmits",
    "timeouts",
]
SUMMARY_KEYS = [
    "sim_time_s",
    "wall_time_s",
    "events",
    "events_per_s",
    "data_packets_delivered",
    "flows_total",
    "flows_completed",
    "drops",
    "ecn_marks",
    "seed",
    "version",
    "scenario_sha256",
]


def small(**network):
    net = {"topology": "star", "hosts": 4, "link_rate": "1Gbps", "link_delay": "10us"}
    net.update(network)
    return {
        "name": "small",
        "network": net,
        "transport": {"min_rto": "5ms"},
        "flows": [
            {"src": "h1", "dst": "h0", "size": "300KB"},
            {"src": "h2", "dst": "h0", "size": "300KB", "start": "10us"},
            {"src": "h3", "dst": "h0", "size": "1MB", "start": "20us"},
        ],
    }


def test_run_returns_dataframes_with_documented_columns():
    res = fctlab.run(DEMO)
    assert isinstance(res.flows, pd.DataFrame)
    for c in FLOW_COLUMNS:
        assert c in res.flows.columns, c
    for k in SUMMARY_KEYS:
        assert k in res.summary, k
    assert len(res.flows) == res.summary["flows_total"] == 9
    assert res.queues is not None and len(res.queues) > 0


def test_unfinished_flows_have_null_finish_and_long_lived_goodput():
    res = fctlab.run(DEMO)
    ll = res.flows[res.flows["size_bytes"].isna()]
    assert len(ll) == 1
    row = ll.iloc[0]
    assert not row["completed"]
    assert pd.isna(row["finish_s"]) and pd.isna(row["fct_s"]) and pd.isna(row["slowdown"])
    assert row["bytes_delivered"] > 0


def test_completed_flows_conserve_bytes():
    res = fctlab.run(small())
    done = res.flows[res.flows["completed"]]
    assert len(done) == 3
    assert (done["bytes_delivered"] == done["size_bytes"]).all()
    assert (done["fct_s"] >= done["ideal_fct_s"]).all()
    assert (done["slowdown"] >= 1.0).all()


def test_keyword_overrides_change_the_run():
    slow = fctlab.run(small())
    fast = fctlab.run(small(), network__link_rate="10Gbps")
    assert fast.flows["fct_s"].max() < slow.flows["fct_s"].max()
    assert fctlab.run(small(), seed=9).summary["seed"] == 9
    assert fctlab.run(small(), set=["seed=4"]).summary["seed"] == 4


def test_write_is_deterministic(tmp_path):
    a = fctlab.run(DEMO).write(tmp_path / "a")
    b = fctlab.run(DEMO).write(tmp_path / "b")
    assert (a / "flows.parquet").read_bytes() == (b / "flows.parquet").read_bytes()
    assert (a / "links.parquet").read_bytes() == (b / "links.parquet").read_bytes()
    summary = json.loads((a / "summary.json").read_text())
    for k in SUMMARY_KEYS:
        assert k in summary
    t = pq.read_table(a / "flows.parquet")
    assert t.schema.field("size_bytes").type == "int64"


def test_different_seeds_can_differ_only_through_randomness():
    # DropTail and ECMP-free star with fixed flows: the seed does not enter, so results are
    # identical.
    a = fctlab.run(small(), seed=1).flows
    b = fctlab.run(small(), seed=2).flows
    pd.testing.assert_frame_equal(a, b)
    # With a random workload the seed draws the arrivals and sizes: other seeds, other flows;
    # the same seed, the same flows.
    sc = small()
    sc["flows"] = []
    sc["workloads"] = [
        {
            "kind": "poisson",
            "senders": "all",
            "receivers": "all",
            "sizes": "websearch",
            "arrival_rate": "2000/s",
            "count": 20,
        }
    ]
    r1, r2, r1b = (fctlab.run(sc, seed=s).flows for s in (1, 2, 1))
    pd.testing.assert_frame_equal(r1, r1b)
    assert list(r1["size_bytes"]) != list(r2["size_bytes"])
    assert list(r1["start_s"]) != list(r2["start_s"])


def test_scenario_error_names_key():
    with pytest.raises(fctlab.ScenarioError) as e:
        fctlab.run(small(), network__link_rate="fast")
    assert "network.link_rate" in str(e.value)
    with pytest.raises(fctlab.ScenarioError) as e:
        fctlab.run("/nonexistent/scenario.toml")
    assert "no such scenario file" in str(e.value)


def test_validate_describes():
    info = fctlab.validate(DEMO)
    assert info["topology"] == "dumbbell"
    assert "s0" in info["hosts"] and info["flows"] == 9


def test_progress_callback_is_called():
    calls = []
    sc = small()
    sc["stop_time"] = "2s"
    sc["flows"].append({"src": "h1", "dst": "h2"})
    # An interval of 0 reports after every slice of simulated time the core advances by, so a
    # 2 s run reports several times however fast the machine is.
    res = fctlab.run(sc, progress=lambda t, d, n: calls.append((t, d, n)), progress_interval_s=0)
    assert len(calls) >= 2, calls
    for t, d, n in calls:
        assert 0 < t <= 2.0 and 0 <= d <= n == 4
    assert [c[0] for c in calls] == sorted(c[0] for c in calls), "simulated time goes forward"
    assert calls[-1][1] <= res.summary["flows_completed"]


def test_cwnd_traces_and_report_render(tmp_path):
    from fctlab.report import write_report

    sc = small()
    sc["monitor"] = {"cwnd_interval": "100us", "cwnd_flows": [0, 2], "queue_interval": "50us"}
    res = fctlab.run(sc)
    cw = res.cwnd
    assert set(cw["flow_id"]) == {0, 2}
    assert (cw["cwnd_bytes"] > 0).all()
    out = res.write(tmp_path / "run")
    assert (out / "cwnd.parquet").exists()
    html = write_report([out], tmp_path / "report")
    text = Path(html).read_text()
    assert "<html" in text.lower()
    pngs = list((tmp_path / "report").glob("*.png"))
    assert pngs, "the report wrote no plots"
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p


def test_workloads_from_python_dict():
    sc = {
        "network": {"topology": "star", "hosts": 9, "link_rate": "1Gbps", "link_delay": "5us"},
        "transport": {"min_rto": "1ms"},
        "workloads": [
            {
                "kind": "incast",
                "client": "h0",
                "servers": "all" if False else [f"h{i}" for i in range(1, 9)],
                "response_size": "25KB",
                "rounds": 5,
            }
        ],
    }
    res = fctlab.run(sc)
    f = res.flows
    assert len(f) == 40 and f["completed"].all()
    assert sorted(f["group"].unique()) == [f"incast0:{r}" for r in range(5)]
    from fctlab.metrics import job_completion_times

    jct = job_completion_times(f)
    assert len(jct) == 5 and jct["completed"].all()


def test_partition_aggregate_jct_spans_requests_and_responses():
    sc = {
        "network": {"topology": "star", "hosts": 5, "link_rate": "1Gbps", "link_delay": "5us"},
        "workloads": [
            {
                "kind": "partition_aggregate",
                "aggregator": "h0",
                "workers": ["h1", "h2", "h3", "h4"],
                "request_size": "2KB",
                "response_size": "30KB",
                "jobs": 3,
                "job_interval": "5ms",
            }
        ],
    }
    from fctlab.metrics import job_completion_times

    f = fctlab.run(sc).flows
    jct = job_completion_times(f)
    assert list(jct["group"]) == ["pa0:0", "pa0:1", "pa0:2"]
    for _, job in jct.iterrows():
        mine = f[f["group"].str.startswith(job["group"])]
        assert len(mine) == 8 and job["flows"] == 8
        assert job["start_s"] == mine["start_s"].min()
        assert job["jct_s"] == pytest.approx(mine["finish_s"].max() - mine["start_s"].min())


@pytest.mark.parametrize(
    "change,message",
    [
        ({"size": float("nan")}, r"flows\[0\]\.size: nan is not a finite number"),
        ({"size": float("inf")}, r"flows\[0\]\.size: inf is not a finite number"),
        ({"size": None}, r"flows\[0\]\.size: None is not a value"),
        ({"start": object()}, r"flows\[0\]\.start: a object is not a scenario value"),
    ],
)
def test_a_dict_value_a_file_cannot_hold_is_named_by_its_key(change, message):
    scenario = {"network": {"topology": "star", "hosts": 2}, "flows": [{"src": "h0", "dst": "h1", "size": "1MB"}]}
    scenario["flows"][0].update(change)
    with pytest.raises(fctlab.ScenarioError, match=message):
        fctlab.run(scenario)


def test_sizes_beyond_the_integers_a_scenario_holds_and_a_zero_stop_time_are_errors():
    flows = [{"src": "h0", "dst": "h1", "size": "1MB"}]
    with pytest.raises(fctlab.ScenarioError, match=r"network\.hosts: 1180591620717411303424 is beyond the largest"):
        fctlab.validate({"network": {"topology": "star", "hosts": 2**70}, "flows": flows})
    with pytest.raises(fctlab.ScenarioError, match=r"stop_time: must be positive"):
        fctlab.validate({"stop_time": "0s", "network": {"topology": "star", "hosts": 2}, "flows": flows})
    with pytest.raises(fctlab.ScenarioError, match=r"expected a scenario file path or a dict, got NoneType"):
        fctlab.run(None)
    big = {"seed": 2**63 - 1, "network": {"topology": "star", "hosts": 2}, "flows": flows}
    assert fctlab.validate(big)["seed"] == 2**63 - 1  # the largest seed a file can hold


def test_a_result_shows_itself_briefly_and_as_a_table_in_notebooks():
    r = fctlab.run(ROOT / "scenarios" / "examples" / "demo.toml")
    text = repr(r)
    done = int(r.flows["completed"].sum())
    assert text.startswith("<RunResult demo: all flows: ") and f"{len(r.flows)} flows, {done} completed" in text, text
    assert len(text) < 200 and "FCT mean" in text and "tables flows, links" in text, text
    html = r._repr_html_()
    assert html.startswith("<table>") and "p99" in html and "drops, ECN marks" in html, html
