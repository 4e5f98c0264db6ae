"""Metrics on small tables whose expected values were computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest


import fctlab.metrics as m


@pytest.fixture
def flows() -> pd.DataFrame:
    # size edges: 99_999 is small, 100_000 medium, 10_000_000 large (lower edges inclusive)
    return pd.DataFrame(
        {
            "flow_id": [1, 2, 3, 4, 5, 6],
            "size_bytes": pd.array([1_000, 50_000, 100_000, 10_000_000, 99_999, None], dtype="Int64"),
            "fct_s": [1.0, 3.0, 2.0, 10.0, None, None],
            "slowdown": [2.0, 4.0, 1.0, 5.0, None, None],
            "completed": [True, True, True, True, False, False],
            "protocol": ["tcp", "tcp", "dctcp", "dctcp", "dctcp", "dctcp"],
            "deadline_s": [1.0, 3.0, None, 20.0, 5.0, None],
        }
    )


# -- fct_stats ---------------------------------------------------------------


def test_fct_stats_overall(flows):
    st = m.fct_stats(flows)
    assert len(st) == 1
    row = st.iloc[0]
    assert (row["count"], row["completed"], row["excluded_incomplete"]) == (6, 4, 2)
    # completed FCTs 1, 3, 2, 10 -> sorted 1, 2, 3, 10
    assert row["mean_fct_s"] == pytest.approx(4.0)
    assert row["median_fct_s"] == pytest.approx(2.5)
    assert row["p95_fct_s"] == pytest.approx(3 + 0.85 * 7)  # rank 0.95 * 3 = 2.85
    assert row["p99_fct_s"] == pytest.approx(3 + 0.97 * 7)
    assert row["max_fct_s"] == 10.0
    # slowdowns 2, 4, 1, 5 -> sorted 1, 2, 4, 5
    assert row["mean_slowdown"] == pytest.approx(3.0)
    assert row["median_slowdown"] == pytest.approx(3.0)
    assert row["p95_slowdown"] == pytest.approx(4.85)
    assert row["max_slowdown"] == 5.0


def test_fct_stats_by_bucket(flows):
    st = m.fct_stats(flows, by="bucket")
    assert st["bucket"].tolist() == ["small", "medium", "large", "long-lived"]
    small = st.iloc[0]
    assert (small["count"], small["completed"], small["excluded_incomplete"]) == (3, 2, 1)
    assert small["mean_fct_s"] == pytest.approx(2.0)
    assert small["p95_fct_s"] == pytest.approx(1 + 0.95 * 2)
    assert st.iloc[1]["median_fct_s"] == 2.0 and st.iloc[1]["count"] == 1
    assert st.iloc[2]["max_fct_s"] == 10.0 and st.iloc[2]["count"] == 1
    long_lived = st.iloc[3]
    assert (long_lived["count"], long_lived["completed"]) == (1, 0)
    assert math.isnan(long_lived["mean_fct_s"])


def test_fct_stats_empty_buckets_are_listed(flows):
    st = m.fct_stats(flows[flows["flow_id"] == 1], by="bucket")
    assert st["bucket"].tolist() == ["small", "medium", "large"]
    assert st["count"].tolist() == [1, 0, 0]
    assert math.isnan(st.iloc[1]["median_fct_s"])


def test_fct_stats_custom_buckets(flows):
    buckets = [("tiny", 0, 10_000), ("rest", 10_000, None)]
    st = m.fct_stats(flows, by="bucket", buckets=buckets)
    assert st["bucket"].tolist() == ["tiny", "rest", "long-lived"]
    assert st["count"].tolist() == [1, 4, 1]
    assert st.iloc[1]["mean_fct_s"] == pytest.approx(5.0)  # 3, 2, 10
    with pytest.raises(ValueError, match="overlap"):
        m.fct_stats(flows, by="bucket", buckets=[("a", 0, 10), ("b", 5, None)])


def test_fct_stats_by_protocol(flows):
    st = m.fct_stats(flows, by="protocol")
    assert st["protocol"].tolist() == ["dctcp", "tcp"]
    assert st["count"].tolist() == [4, 2]
    assert st["completed"].tolist() == [2, 2]
    assert st["mean_fct_s"].tolist() == pytest.approx([6.0, 2.0])


def test_fct_stats_missing_column(flows):
    with pytest.raises(ValueError, match="missing column.*'slowdown'"):
        m.fct_stats(flows.drop(columns="slowdown"))
    with pytest.raises(ValueError, match="'tag'"):
        m.fct_stats(flows, by="tag")


def test_assign_buckets_edges():
    sizes = pd.Series([0, 99_999, 100_000, 9_999_999, 10_000_000, None])
    assert m.assign_buckets(sizes).tolist() == ["small", "small", "medium", "medium", "large", "long-lived"]
    assert m.describe_buckets() == ["small: size < 100 KB", "medium: 100 KB <= size < 10 MB", "large: size >= 10 MB"]


# -- deadlines ----------------------------------------------------------------


def test_deadline_meet_ratio(flows):
    # with a deadline: 1 (1.0 <= 1.0 met), 2 (3.0 <= 3.0 met), 4 (10 <= 20 met), 5 (incomplete: missed)
    d = m.deadline_meet_ratio(flows).iloc[0]
    assert (d["with_deadline"], d["met"], d["missed"], d["missed_incomplete"]) == (4, 3, 1, 1)
    assert d["meet_ratio"] == pytest.approx(0.75)
    by = m.deadline_meet_ratio(flows, by="protocol")
    assert by["protocol"].tolist() == ["dctcp", "tcp"]
    assert by["meet_ratio"].tolist() == pytest.approx([0.5, 1.0])


def test_deadline_meet_ratio_without_deadlines(flows):
    d = m.deadline_meet_ratio(flows.assign(deadline_s=np.nan)).iloc[0]
    assert d["with_deadline"] == 0 and math.isnan(d["meet_ratio"])
    with pytest.raises(ValueError, match="deadline_s"):
        m.deadline_meet_ratio(flows.drop(columns="deadline_s"))


# -- jobs -------------------------------------------------------------------------


def test_job_completion_times_with_incomplete_job():
    flows = pd.DataFrame(
        {
            "group": ["incast:2", "incast:1", "incast:1", "incast:2", "", None],
            "start_s": [3.0, 0.0, 0.5, 3.2, 0.0, 0.0],
            "finish_s": [4.0, 1.0, 2.5, None, 1.0, 1.0],
            "completed": [True, True, True, False, True, True],
        }
    )
    jobs = m.job_completion_times(flows)
    assert jobs["group"].tolist() == ["incast:1", "incast:2"]
    assert jobs["flows"].tolist() == [2, 2]
    assert jobs["completed_flows"].tolist() == [2, 1]
    assert jobs["start_s"].tolist() == [0.0, 3.0]
    assert jobs.at[0, "finish_s"] == 2.5 and jobs.at[0, "jct_s"] == 2.5
    assert jobs["completed"].tolist() == [True, False]
    assert math.isnan(jobs.at[1, "jct_s"]) and math.isnan(jobs.at[1, "finish_s"])


def test_job_completion_times_no_groups():
    flows = pd.DataFrame({"group": ["", ""], "start_s": [0.0, 1.0], "finish_s": [1.0, 2.0], "completed": [True, True]})
    assert len(m.job_completion_times(flows)) == 0
    with pytest.raises(ValueError, match="'group'"):
        m.job_completion_times(flows.drop(columns="group"))


# -- active flows -----------------------------------------------------------------


def test_active_flows_over_time():
    flows = pd.DataFrame({"start_s": [0.0, 1.0, 1.5, 5.0], "finish_s": [2.0, 3.0, None, 6.0]})
    out = m.active_flows_over_time(flows, [0, 1, 1.5, 2, 3, 4, 5, 6])
    assert out["active_flows"].tolist() == [1, 2, 3, 2, 1, 1, 2, 1]
    assert m.active_flows_over_time(flows, [3.0, 0.0])["active_flows"].tolist() == [1, 1]


# -- links -------------------------------------------------------------------------


@pytest.fixture
def links() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "link_id": [0, 1, 2],
            "src": ["a", "b", "c"],
            "dst": ["b", "c", "d"],
            "tx_packets": [90, 100, 0],
            "drops": [10, 0, 0],
            "utilization": [0.5, 0.9, 0.1],
        }
    )


def test_loss_rate(links):
    overall, per_link = m.loss_rate(links)
    assert overall == pytest.approx(10 / 200)
    assert per_link["link"].tolist() == ["a->b", "b->c", "c->d"]
    assert per_link["loss_rate"].iloc[:2].tolist() == pytest.approx([0.1, 0.0])
    assert math.isnan(per_link["loss_rate"].iloc[2])
    with pytest.raises(ValueError, match="'drops'"):
        m.loss_rate(links.drop(columns="drops"))


def test_link_utilization(links):
    u = m.link_utilization(links)
    assert u["link_id"].tolist() == [1, 0, 2]
    assert u["utilization"].tolist() == [0.9, 0.5, 0.1]
    assert m.link_utilization(links, top=2)["link"].tolist() == ["b->c", "a->b"]


# -- queues ------------------------------------------------------------------------


@pytest.fixture
def queues() -> pd.DataFrame:
    # link 0: 0 pkts on [0, 1), 10 on [1, 3), 4 on [3, end); link 1 given out of order
    return pd.DataFrame(
        {
            "time_s": [0.0, 1.0, 3.0, 2.0, 0.0],
            "link_id": [0, 0, 0, 1, 1],
            "link": ["a->b", "a->b", "a->b", "b->c", "b->c"],
            "queue_pkts": [0, 10, 4, 6, 2],
            "queue_bytes": [0, 15_000, 6_000, 9_000, 3_000],
        }
    )


def test_queue_stats_time_weighted(queues):
    st = m.queue_stats(queues, end_time_s=4.0)
    q0, q1 = st.iloc[0], st.iloc[1]
    assert q0["link"] == "a->b" and q0["samples"] == 3 and q0["duration_s"] == 4.0
    # (0*1 + 10*2 + 4*1) / 4; the plain sample mean would be 14/3
    assert q0["mean_queue_pkts"] == pytest.approx(6.0)
    assert q0["max_queue_pkts"] == 10
    # time shares: 0 -> 1/4, 4 -> 1/4, 10 -> 1/2
    assert (q0["p50_queue_pkts"], q0["p90_queue_pkts"], q0["p99_queue_pkts"]) == (4, 10, 10)
    assert q0["mean_queue_bytes"] == pytest.approx(9_000.0)
    # link 1: 2 pkts on [0, 2), 6 on [2, 4)
    assert q1["mean_queue_pkts"] == pytest.approx(4.0)
    assert (q1["p50_queue_pkts"], q1["max_queue_pkts"]) == (2, 6)


def test_queue_stats_default_end_is_last_sample(queues):
    st = m.queue_stats(queues, quantiles=[0.5])
    # window ends at t = 3: link 0 weights 1, 2, 0; link 1 weights 2, 1
    assert st["mean_queue_pkts"].tolist() == pytest.approx([20 / 3, 10 / 3])
    assert "p90_queue_pkts" not in st.columns
    with pytest.raises(ValueError, match="before the last sample"):
        m.queue_stats(queues, end_time_s=2.0)
    with pytest.raises(ValueError, match="'queue_pkts'"):
        m.queue_stats(queues.drop(columns="queue_pkts"))


# -- paired comparison ----------------------------------------------------------------


def _pair_tables():
    ids = [1, 2, 3, 4, 5, 6, 7]
    common = {
        "flow_id": ids,
        "src": ["h0"] * 7,
        "dst": ["h1", "h2", "h3", "h1", "h2", "h3", "h1"],
        "size_bytes": [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000],
    }
    a = pd.DataFrame(
        {
            **common,
            "fct_s": [1.0, 2.0, 1.0, 4.0, 1.0, None, None],
            "completed": [True, True, True, True, True, False, False],
        }
    )
    b = pd.DataFrame(
        {
            **common,
            "fct_s": [0.5, 1.5, 1.02, 5.0, None, 2.0, None],
            "completed": [True, True, True, True, False, True, False],
        }
    )
    return a, b.iloc[::-1].reset_index(drop=True)  # B in another order: the join is on flow_id


def test_paired_comparison_relative_tolerance():
    a, b = _pair_tables()
    r = m.paired_comparison(a, b, tolerance=0.05)
    assert r["flows"] == 7
    assert (r["completed_both"], r["completed_only_a"], r["completed_only_b"], r["completed_neither"]) == (4, 1, 1, 1)
    # flow 1: 1.0 -> 0.5 faster (gain 50%), flow 2: 2.0 -> 1.5 faster (25%),
    # flow 3: 1.0 -> 1.02 equal within 5%, flow 4: 4.0 -> 5.0 slower (loss 25%)
    assert (r["faster"], r["slower"], r["equal"]) == (2, 1, 1)
    assert (r["share_faster"], r["share_slower"], r["share_equal"]) == (0.5, 0.25, 0.25)
    assert r["mean_gain"] == pytest.approx(0.375)
    assert r["mean_gain_s"] == pytest.approx(0.5)
    assert r["mean_loss"] == pytest.approx(0.25)
    assert r["mean_loss_s"] == pytest.approx(1.0)


def test_paired_comparison_no_tolerance_and_absolute():
    a, b = _pair_tables()
    r = m.paired_comparison(a, b)
    assert (r["faster"], r["slower"], r["equal"]) == (2, 2, 0)
    assert r["mean_loss"] == pytest.approx((0.02 + 0.25) / 2)
    assert r["mean_loss_s"] == pytest.approx((0.02 + 1.0) / 2)
    r = m.paired_comparison(a, b, tolerance=0.6, rel=False)
    assert (r["faster"], r["slower"], r["equal"]) == (0, 1, 3)
    assert r["mean_gain"] is None and r["mean_gain_s"] is None
    assert r["mean_loss_s"] == pytest.approx(1.0)


def test_paired_comparison_rejects_different_flows():
    a, b = _pair_tables()
    changed = b.copy()
    changed.loc[changed["flow_id"] == 2, "size_bytes"] = 9_999
    with pytest.raises(ValueError, match="differ in size_bytes.*flow 2"):
        m.paired_comparison(a, changed)
    with pytest.raises(ValueError, match="different flows.*only in A"):
        m.paired_comparison(a, b[b["flow_id"] != 7])
    with pytest.raises(ValueError, match="tolerance"):
        m.paired_comparison(a, b, tolerance=-1)
    with pytest.raises(ValueError, match="'fct_s'"):
        m.paired_comparison(a.drop(columns="fct_s"), b)
    assert m.flow_set_mismatch(a, b) is None
