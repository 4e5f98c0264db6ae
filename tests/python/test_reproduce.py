"""`fctlab reproduce atcp`: the quick run writes a complete report, and bad arguments exit 2."""

from __future__ import annotations

import json
import math
import time

import pytest

from fctlab.reproduce import main_reproduce
from fctlab.crosscheck.ns2 import find_ns
from fctlab.reproduce.atcp import KERNEL_ITEMS
from fctlab.reproduce.common import (
    DIRECTION,
    INCONCLUSIVE,
    MATCH,
    NO_MATCH,
    NO_STATEMENT,
    NOT_GRADED,
    NOT_MEASURED,
)
from fctlab.reproduce.expected import Expected, ExpectedError
from fctlab.reproduce import default_scenario_dir

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

EXPECTED = Expected(default_scenario_dir("atcp") / "expected.toml")

ITEM_HEADINGS = [f"## Item {n}:" for n in range(1, 12)]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("atcp_quick")
    t0 = time.perf_counter()
    # (the items in two processes: the same numbers, tests/python/test_reproduce_thesis.py checks)
    rc = main_reproduce(["atcp", "--quick", "--workers", "2", "--out", str(out)])
    wall = time.perf_counter() - t0
    return rc, out, wall


def _check_report(out, items=range(1, 12)):
    md = (out / "report.md").read_text()
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    for n in items:
        assert f"## Item {n}:" in md
    results = json.loads((out / "results.json").read_text())
    pngs = sorted(out.glob("*.png"))
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == PNG_MAGIC, png
        import matplotlib.image

        img = matplotlib.image.imread(str(png))
        assert img.shape[0] > 100 and img.shape[1] > 100
        assert f"({png.name})" in md
    return md, results, pngs


def test_quick_run_writes_full_report(quick_run):
    rc, out, wall = quick_run
    assert rc == 0
    assert wall < 400, f"--quick took {wall:.0f} s"
    md, results, pngs = _check_report(out)
    for h in ITEM_HEADINGS:
        assert h in md
    # every row of expected.toml is in the report with the paper's side as the file states it (the
    # kernel items' where the testbed ran them)
    ran = {n for n in KERNEL_ITEMS if results["items"][str(n)]["status"] == "done"}
    for e in EXPECTED.rows.values():
        if e.item in KERNEL_ITEMS and e.item not in ran:
            continue
        assert f"| {e.quantity} | {e.shown.replace('|', chr(92) + '|')} |" in md, e.id
    names = {p.name for p in pngs}
    # figures where the paper has one, under each profile: cwnd traces (1), throughput (2), shuffle CDF (8)
    for profile in ("ns2", "linux"):
        assert {
            f"item1_cwnd_{profile}.png",
            f"item2_throughput_{profile}.png",
            f"item8_shuffle_cdf_{profile}.png",
        } <= names
    ns2_cols = "ns-2.35 | ns-2.35 agrees with | " if find_ns() else ""
    assert f"| quantity | paper | {ns2_cols}fctlab, ns2 | verdict, ns2 | fctlab, linux | verdict, linux |" in md
    for n, profile in ((n, p) for n in range(1, 9) for p in ("ns2", "linux")):
        item = results["items"][str(n)]["profiles"][profile]
        assert item["status"] == "done", (n, profile, item["reason"])
        assert item["rows"], n
        # each row's verdict follows from its rule and fctlab's measured value
        want = [e for e in EXPECTED.of_item(n)]
        got = {r["quantity"]: r for r in item["rows"]}
        for e in want:
            if e.id == "item3.sum_trend" or e.id == "item3.big_ratio_medium":
                continue  # depend on the sweep points of the mode
            row = got[e.quantity]
            assert row["paper"] == e.shown, e.id
            if e.rule == "not_measured":
                assert row["verdict"] == NOT_MEASURED and row["fctlab"] == e.reason
            elif e.rule == "list":
                assert row["verdict"] == "see next rows"
            elif n >= 3:
                # measured over the quick run's 2 seeds (item 8: its 3 jobs): shown, not graded
                assert row["verdict"] == NOT_GRADED, (e.id, row)
                assert row["fctlab"].endswith(" seeds)") or row["fctlab"].endswith(" jobs)"), (e.id, row)
            else:
                assert row["verdict"] in (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH), (e.id, row)
            # fctlab's column is a measurement, never the paper's own statement
            assert row["fctlab"] != e.shown, e.id


@pytest.mark.parametrize("profile", ["ns2", "linux"])
def test_quick_run_reproduces_theorem1(quick_run, profile):
    _, out, _ = quick_run
    r = json.loads((out / "results.json").read_text())["items"]
    # Theorem 1: weights 1 and 2 give a 2 : 1 window and throughput ratio; TCP shares equally
    n1 = r["1"]["profiles"][profile]["numbers"]
    if profile == "linux":
        assert n1["weighted_cwnd_ratio"] == pytest.approx(2.0, rel=0.1)
        assert n1["weighted_rate_ratio"] == pytest.approx(2.0, rel=0.15)
    else:
        # ns-2.35 itself gives about 1.7 on this DropTail chain (the flows do not lose in
        # proportion to their windows); the ns2 profile runs it packet for packet as ns-2 does
        # (test_crosscheck.py::test_atcp_two_flows_as_ns2), so the ratio is ns-2's, not the theorem's
        assert 1.5 < n1["weighted_cwnd_ratio"] < 2.1
        assert 1.5 < n1["weighted_rate_ratio"] < 2.1
    assert n1["tcp_cwnd_ratio"] == pytest.approx(1.0, rel=0.1)
    # the primary profile's numbers are the item's own
    assert r["1"]["numbers"] == r["1"]["profiles"]["ns2"]["numbers"]


def test_quick_run_two_flow_under_each_profile(quick_run):
    _, out, _ = quick_run
    r = json.loads((out / "results.json").read_text())["items"]
    # ns2 (as ns-2.35 runs this set-up, test_crosscheck.py::test_atcp_two_flows_as_ns2): the 10 MB
    # flow's SYN gets through, weight 2 finishes it sooner, and the large flow is unchanged
    # whatever the small one does
    ns2 = r["2"]["profiles"]["ns2"]["numbers"]
    assert ns2["small_timeouts_tcp"] + ns2["small_timeouts_weighted"] == 0
    assert ns2["small_fct_weighted"] < 0.9 * ns2["small_fct_tcp"] < 2.0
    assert ns2["large_fct_weighted"] == pytest.approx(ns2["large_fct_tcp"], rel=0.02)
    # Theorem 2 (two flows) under linux: the 10 MB flow gets about twice the large flow's rate
    # and completes sooner with weight 2, within the fluid model's bounds; the 100 MB flow
    # does not suffer
    n2 = r["2"]["profiles"]["linux"]["numbers"]
    assert n2["share_ratio_weighted"] == pytest.approx(2.0, rel=0.2)
    assert n2["share_ratio_tcp"] == pytest.approx(1.0, rel=0.2)
    assert n2["small_fct_weighted"] < 0.85 * n2["small_fct_tcp"]
    # the fluid model (S/C)(1 + 1/R) at 100 Mbps is a lower bound; slow start and headers add little
    assert n2["model_weighted"] <= n2["small_fct_weighted"] <= 1.3 * n2["model_weighted"]
    assert n2["model_tcp"] <= n2["small_fct_tcp"] <= 1.3 * n2["model_tcp"]
    assert n2["large_fct_weighted"] == pytest.approx(n2["large_fct_tcp"], rel=0.02)


def test_quick_run_rows_carry_measurements(quick_run):
    """The fctlab column of a graded row is the measured number in results.json, not a copy
    of the paper's."""
    _, out, _ = quick_run
    r = json.loads((out / "results.json").read_text())["items"]
    rows1 = {x["quantity"]: x for x in r["1"]["profiles"]["linux"]["rows"]}
    n1 = r["1"]["profiles"]["linux"]["numbers"]
    assert rows1[EXPECTED["item1.weighted_cwnd_ratio"].quantity]["fctlab"] == f"{n1['weighted_cwnd_ratio']:.3f}"
    rows2 = {x["quantity"]: x for x in r["2"]["rows"]}
    from fctlab.numfmt import seconds

    assert rows2[EXPECTED["item2.small_fct_tcp"].quantity]["fctlab"] == seconds(r["2"]["numbers"]["small_fct_tcp"])
    # the job-time rows of item 8 say what is not simulated and never count as a match
    rows8 = {x["quantity"]: x for x in r["8"]["rows"]}
    for rid in ("item8.job_atcp", "item8.job_dctcp"):
        assert rows8[EXPECTED[rid].quantity]["verdict"] == NOT_MEASURED
    assert r["8"]["verdict"] != MATCH or all(
        x["verdict"] in (MATCH, NOT_MEASURED, "see next rows") for x in r["8"]["rows"]
    )


def test_quick_run_kernel_items(quick_run):
    """Items 9-11 run Theorems 1 and 2 on the kernel where the testbed can (root, namespaces,
    BPF), once per set-up with --quick: shown beside the simulator's numbers and not graded
    (one run); elsewhere they say why they did not run."""
    _, out, _ = quick_run
    items = json.loads((out / "results.json").read_text())["items"]
    for n in KERNEL_ITEMS:
        it = items[str(n)]
        if it["status"] != "done":
            print(f"item {n} not run: {it['reason']}")
            assert it["reason"] and "failed" not in it["reason"], it
            continue
        # run once on the files' own settings, not under each profile
        assert it["profiles"] == {}, n
        for row in it["rows"]:
            assert row["verdict"] == (NO_STATEMENT if n == 10 else NOT_GRADED), row
            assert "simulator" in row["fctlab"], row
    if any(items[str(n)]["status"] != "done" for n in KERNEL_ITEMS):
        pytest.skip("the testbed did not run the kernel items here (see the printed reasons)")
    # Theorem 1 under ECN marking: the weight-2 flow ahead of the weight-1 flow on the kernel
    ratios = items["9"]["numbers"]["ratios"]
    assert set(ratios) == {f"{q}/{h}" for q in ("ecn", "droptail") for h in ("per-episode", "per-window")}
    assert 1.3 < ratios["ecn/per-episode"]["mean"] < 2.7, ratios
    assert 1.3 < ratios["ecn/per-episode"]["simulator"] < 2.7, ratios
    # three weights: the shares add up and grow with the weight, on the kernel and in the simulator
    for h, s in items["10"]["numbers"]["shares"].items():
        for shares in (s["kernel_mean"], s["simulator_cwr"], s["simulator_no_cwr"]):
            assert sum(shares) == pytest.approx(1.0)
            assert shares[0] < shares[1] < shares[2], (h, s)
    # Theorem 2: the small flow finishes sooner under ATCP, the large one about as late
    ch = items["11"]["numbers"]["change"]
    assert ch["small"] < -0.1 and abs(ch["large"]) < 0.1, ch


@pytest.mark.skipif(
    find_ns() is None,
    reason="ns-2.35's `ns` is not installed (Debian: apt-get install ns2; make test installs it as root)",
)
def test_quick_run_sets_ns2_beside_the_paper(quick_run):
    """Under the ns2 profile every item is measured again in ns-2.35 on the same flows: items 1
    and 2 (which the ns2 profile runs packet for packet as ns-2.35, test_crosscheck.py) give
    ns-2's numbers equal to fctlab's; DCTCP rows say that ns-2.35 has no DCTCP; every other
    graded row has an ns-2 value and says whom it agrees with."""
    _, out, _ = quick_run
    r = json.loads((out / "results.json").read_text())["items"]
    for n in range(1, 9):
        rows = r[str(n)]["profiles"]["ns2"]["rows"]
        for row in rows:
            e = EXPECTED[row["rid"]]
            assert row["ns2"], (n, row)
            if e.rule == "not_measured":
                assert row["ns2"] == "-"
            elif "dctcp" in e.id:
                assert row["ns2"] == "DCTCP is not in ns-2.35"
            elif e.id in ("item3.big_ratio_medium", "item3.ratio_trend", "item3.sum_trend"):
                assert row["ns2"] == "not measured in ns-2.35"  # the sweeps stay fctlab's
            elif e.rule != "list":
                assert row["ns2_agrees"].split(";")[0] in (
                    "the paper and fctlab",
                    "the paper",
                    "fctlab",
                    "neither",
                    "not fctlab",
                )
        if n in (1, 2):
            for row in rows:
                assert row["ns2"] == row["fctlab"], row
    # ns-2 ran its own runs: the scripts and results are kept
    assert len(list((out / "ns2-runs").glob("*/run.tcl"))) >= 20


def test_items_subset_reports_the_others_as_not_run(tmp_path):
    rc = main_reproduce(["atcp", "--quick", "--items", "1,2", "--out", str(tmp_path)])
    assert rc == 0
    md, results, _ = _check_report(tmp_path)
    assert results["items"]["1"]["status"] == "done"
    assert results["items"]["2"]["status"] == "done"
    for n in range(3, 12):
        assert results["items"][str(n)]["status"] == "not run"
        assert "not selected" in results["items"][str(n)]["reason"]
    assert "not run: not selected (--items)" in md


def test_kernel_items_say_why_they_did_not_run(tmp_path, monkeypatch):
    """Where the testbed cannot run (not root, no BPF), the kernel items are reported as not run
    with the reason, beside the paper's numbers, and the report is still written."""
    from fctlab.reproduce import atcp_kernel

    monkeypatch.setattr(atcp_kernel, "kernel_problem", lambda: "testbed unavailable: not root")
    assert main_reproduce(["atcp", "--quick", "--items", "9,10,11", "--out", str(tmp_path)]) == 0
    md, results, _ = _check_report(tmp_path)
    for n in KERNEL_ITEMS:
        item = results["items"][str(n)]
        assert item["status"] == "not run" and item["reason"] == "testbed unavailable: not root", item
        assert item["rows"] == []
    assert md.count("**Status: not run** (testbed unavailable: not root)") == 3
    assert "1.8 s -> 1.2 s (-33.3%), for 10 MB beside 100 MB" in md  # item 11's paper numbers


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["nopaper"],
        ["atcp", "--items", "99"],
        ["atcp", "--items", "x"],
        ["atcp", "--bogus"],
        ["atcp", "--budget", "-1"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys, tmp_path):
    rc = main_reproduce(argv + ["--out", str(tmp_path / "o")] if argv else argv)
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fctlab reproduce: error:")


def test_timeouts_by_cause_from_a_run_and_none_where_not_counted():
    """A run's flows give their timeouts by cause, adding up to the total; flows without the
    cause columns (ns-2.35's, the testbed's) give None and say so."""
    import pandas as pd

    import fctlab
    from fctlab.reproduce.common import add_causes, fmt_causes, timeout_causes

    # Item 2's 100 MB and 10 MB flows into a 5-packet port with a 1 ms minimum RTO: timeouts.
    flows = fctlab.run(
        default_scenario_dir("atcp") / "two_flow_rate_tcp.toml",
        set=["network.buffer=5pkt", "transport.min_rto=1ms", "stop_time=3s"],
    ).flows
    c = timeout_causes(flows)
    assert c is not None and c["total"] == int(flows["timeouts"].sum()) > 0 and c["data"] > 0
    assert c["first"] + c["ecn"] + c["data"] == c["total"] and min(c.values()) >= 0
    assert add_causes([c, c])["total"] == 2 * c["total"] and add_causes([c, None]) is None
    ns2_like = flows.drop(columns=["first_timeouts", "ecn_timeouts"])
    assert timeout_causes(ns2_like) is None and fmt_causes(None) == "not counted by cause"
    text = fmt_causes({"total": 5, "first": 1, "ecn": 2, "data": 2})
    assert text == "5 (1 of the SYN or first window, 2 after an ECN cut, 2 of data)"
    testbed_like = flows.assign(first_timeouts=pd.NA)
    assert timeout_causes(testbed_like) is None


def test_expected_rows_are_graded_by_their_rules(tmp_path):
    f = tmp_path / "expected.toml"
    f.write_text(
        '[items.1]\ntitle = "t"\nsource = "s"\ndid = "d"\n'
        '[[rows]]\nid = "a"\nitem = 1\nquantity = "q1"\nrule = "value"\nvalue = 2.0\ntolerance = 0.1\nreference = 1.0\n'
        '[[rows]]\nid = "b"\nitem = 1\nquantity = "q2"\nrule = "change"\nfrom = 1.8\nto = 1.2\nunit = "s"\n'
        '[[rows]]\nid = "c"\nitem = 1\nquantity = "q3"\nrule = "not_measured"\nchange = -0.1\nreason = "not simulated"\n'
        '[[rows]]\nid = "d"\nitem = 1\nquantity = "q4"\nrule = "change"\nfrom = "b.to"\nto = "b.from"\n'
    )
    ex = Expected(f)
    assert ex.row("a", 2.1, "2.1").verdict == MATCH
    assert ex.row("a", 1.5, "1.5").verdict == DIRECTION
    assert ex.row("a", 0.5, "0.5").verdict == NO_MATCH
    assert ex.row("a", float("nan"), "n/a").verdict == NOT_MEASURED
    # fewer than five seeds (or jobs): shown with their count, not graded
    few = ex.row("a", 2.1, "2.1", samples=2)
    assert (few.verdict, few.fctlab) == (NOT_GRADED, "2.1 (2 seeds)")
    assert ex.row("a", 2.1, "2.1", samples=5).verdict == MATCH
    assert ex.row("b", -0.30, "-30%", samples=3, unit="job").fctlab == "-30% (3 jobs)"
    assert ex["b"].shown == "1.8 s -> 1.2 s (-33.3%)" and ex["b"].change == pytest.approx(-1 / 3)
    assert ex.row("b", -0.31, "-31%").verdict == MATCH
    assert ex.row("b", -0.10, "-10%", half_width=0.25).verdict == INCONCLUSIVE
    assert ex.row("b", -0.05, "-5%").verdict == DIRECTION
    assert ex.row("b", +0.20, "+20%").verdict == NO_MATCH
    r = ex.row("c", -0.2, "-20%")  # a number passed in does not make it measured
    assert (r.verdict, r.fctlab) == (NOT_MEASURED, "not simulated")
    assert ex["d"].change == pytest.approx(0.5)  # references to another row's numbers
    f.write_text('[[rows]]\nid = "x"\nitem = 1\nquantity = "q"\nrule = "value"\n')
    with pytest.raises(ExpectedError, match="needs a number `value`"):
        Expected(f)


@pytest.mark.slow
def test_full_run(tmp_path):
    rc = main_reproduce(["atcp", "--out", str(tmp_path)])
    assert rc == 0
    md, results, _ = _check_report(tmp_path)
    for e in EXPECTED.rows.values():
        assert e.quantity in md, e.id
    assert all(results["items"][str(n)]["status"] == "done" for n in range(1, 9))


CLAIM_ITEMS = (12, 13, 14, 15, 16, 17, 18)
#: the items whose runs are deterministic (explicit flows): graded in --quick as in a full run
DETERMINISTIC = (14, 17)


@pytest.fixture(scope="module")
def claims_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("atcp_claims")
    rc = main_reproduce(["atcp", "--quick", "--items", ",".join(map(str, CLAIM_ITEMS)), "--out", str(out)])
    return rc, out


def test_quick_run_of_the_claims_items(claims_run):
    """Items 12-18 run under both profiles: every row of expected.toml for them is in the report,
    measured rows carry finite numbers, rows over seeds or jobs are shown and not graded in
    --quick, and the deterministic two-flow items are graded."""
    rc, out = claims_run
    assert rc == 0
    md = (out / "report.md").read_text()
    items = json.loads((out / "results.json").read_text())["items"]
    for n in CLAIM_ITEMS:
        it = items[str(n)]
        assert it["status"] == "done", it
        want = {e.id for e in EXPECTED.of_item(n)}
        for profile in ("ns2", "linux"):
            rows = it["profiles"][profile]["rows"]
            assert {r["rid"] for r in rows} == want, (n, profile)
            for r in rows:
                if EXPECTED[r["rid"]].rule == "list":
                    assert r["verdict"] == "see next rows", r
                    continue
                if EXPECTED[r["rid"]].rule in ("value", "change"):
                    assert r["measured"] is not None and math.isfinite(r["measured"]), r
                graded = (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH)
                assert r["verdict"] in (graded if n in DETERMINISTIC else (NOT_GRADED,)), r
        for e in EXPECTED.of_item(n):
            assert f"| {e.quantity} | {e.shown} |" in md, e.id
    for profile in ("ns2", "linux"):
        assert (out / f"item14_oscillation_{profile}.png").read_bytes()[:8] == PNG_MAGIC
        sub = items["17"]["profiles"][profile]["numbers"]
        assert abs(sum(sub["shares"]) - 1) < 1e-9 and sub["rate_ratio_1_3"] > 0, sub
        n13 = items["13"]["profiles"][profile]["numbers"]
        assert 0 <= n13["overlap_share"] <= 1, n13
        n16 = items["16"]["profiles"][profile]["numbers"]
        assert all(t > 0 for job in n16["job_time_s"].values() for t in job.values()), n16
        n18 = items["18"]["profiles"][profile]["numbers"]
        assert all(0 <= v <= 1 for v in n18["deadline"].values()) and n18["atcp_minus_d3"]["seeds"] == 2, n18
        n12 = items["12"]["profiles"][profile]["numbers"]
        for s, f in n12["faster"].items():
            assert 0 <= f + n12["equal"][s] <= 1, n12


def test_claims_items_leave_the_other_items_unselected(claims_run):
    _, out = claims_run
    items = json.loads((out / "results.json").read_text())["items"]
    assert all(items[str(n)]["status"] == "not run" for n in range(1, 12))


def test_overlap_share_places_a_large_flows_bytes_by_its_average_rate():
    """Item 13's overlap: a 40 MB flow from 0 s to 4 s is between 10 and 20 MB from 1 s to 2 s;
    of four small flows, the two that run then overlap it. A flow of 15 MB never reaches T2: its
    interval ends with it."""
    import pandas as pd

    from fctlab.reproduce.atcp_claims import overlap_share

    f = pd.DataFrame(
        {
            "seed": [1] * 5,
            "size_bytes": [40e6, 1e3, 1e3, 1e3, 1e3],
            "start_s": [0.0, 0.5, 1.5, 3.0, 0.9],
            "finish_s": [4.0, 0.8, 1.6, 3.5, 1.1],
            "completed": [True] * 5,
        }
    )
    f["fct_s"] = f["finish_s"] - f["start_s"]
    assert overlap_share(f, 10e6, 20e6) == pytest.approx(0.5)
    g = f.assign(size_bytes=[15e6, 1e3, 1e3, 1e3, 1e3], finish_s=[3.0, 0.8, 1.6, 3.5, 2.5])
    g["fct_s"] = g["finish_s"] - g["start_s"]
    # 15 MB over 3 s: from 2 s (10 MB) to its end at 3 s; only the flow of 0.9 s to 2.5 s meets it
    assert overlap_share(g, 10e6, 20e6) == pytest.approx(0.25)


def test_rises_allows_five_percent_of_noise_per_step():
    from fctlab.reproduce.atcp_claims import rises

    assert rises([1.0, 2.0, 1.95, 3.0])
    assert not rises([1.0, 2.0, 1.8, 3.0])  # a step down by 10%
    assert not rises([1.0, 0.99, 1.02])  # not above the first by more than 5%
    assert not rises([1.0, float("nan")])
