"""`[network] pfc = true` from Python: the plan says it, the keys are checked in one line each,
and the engines that do not run priority flow control refuse it by name."""

from __future__ import annotations

import pytest

import fctlab
from fctlab import ScenarioError
from fctlab.plan import Unsupported, load as load_plan, refuse_lossless
from fctlab.rundir import check_run_dir


def _incast(**network) -> dict:
    net = {"topology": "star", "hosts": 5, "link_rate": "10Gbps", "link_delay": "1us", "buffer": "100pkt"}
    net.update(network)
    flows = [{"src": f"h{i}", "dst": "h4", "size": "1MB"} for i in range(4)]
    return {"network": net, "transport": {"initial_cwnd": 64}, "flows": flows}


def test_a_lossless_incast_drops_nothing_where_a_lossy_one_drops():
    lossy = fctlab.run(_incast())
    lossless = fctlab.run(_incast(pfc=True))
    assert lossy.summary["drops"] > 0
    assert lossless.summary["drops"] == 0 and bool(lossless.flows["completed"].all())


def test_the_pause_monitor_is_a_table_written_beside_the_others(tmp_path):
    res = fctlab.run(_incast(pfc=True))
    p = res.pfc
    assert list(p.columns) == [
        "time_s",
        "link_id",
        "link",
        "prio",
        "event",
        "waiting_packets",
        "waiting_flows",
        "victim_flows",
        "congested_link",
    ]
    assert set(p["event"]) == {"pause", "resume"} and p["time_s"].is_monotonic_increasing
    # A pause says whom it holds up (every flow goes to the one receiver: no victim); a resume
    # has none of it.
    pauses, resumes = p[p["event"] == "pause"], p[p["event"] == "resume"]
    assert (pauses["victim_flows"] == 0).all() and set(pauses["congested_link"].dropna()) == {"sw0->h4"}
    assert resumes["waiting_packets"].isna().all()
    # Only the senders' NICs feed the switch: they are the ports paused, by the switch.
    assert set(p["link"]) <= {f"h{i}->sw0" for i in range(4)} and len(set(p["link"])) == 4
    out = res.write(tmp_path / "run")
    assert (out / "pfc.parquet").is_file() and check_run_dir(out) == []
    assert fctlab.run(_incast()).pfc is None
    assert "pfc" in repr(res)


def test_the_plan_says_the_network_is_lossless():
    assert load_plan(_incast()).pfc is None
    assert load_plan(_incast()).switch_buffer is None
    shared = load_plan(_incast(pfc=True, switch_buffer="1MB"))
    assert shared.switch_buffer == {"bytes": 1_000_000, "alpha": 1.0, "pfc_alpha": None}
    assert load_plan(_incast(pfc=True)).pfc == {"xoff": None, "xon": None, "headroom": None}
    given = load_plan(_incast(pfc=True, pfc_xoff="100KB", pfc_xon="90KB"))
    assert (given.pfc["xoff"], given.pfc["xon"]) == (100_000, 90_000)


@pytest.mark.parametrize(
    "network, key, words",
    [
        ({"pfc_xoff": "100KB"}, "network.pfc_xoff", "applies with pfc = true only"),
        ({"pfc": True, "queue": "pfabric"}, "network.queue", "first-in-first-out"),
        ({"pfc": True, "queue": "priority", "priority_pushout": True}, "network.priority_pushout", "no push-out"),
        (
            {"pfc": True, "queue": "priority", "priority_ecn_threshold": "20pkt"},
            "network.priority_ecn_threshold",
            "marks per port",
        ),
        ({"switch_buffer": "1MB", "buffer_alpha": -1.0}, "network.buffer_alpha", "positive"),
        ({"buffer_alpha": 2.0}, "network.buffer_alpha", "switch_buffer only"),
        ({"pfc": True, "buffer": "3pkt"}, "network.pfc", "leaves no room above the headroom"),
        ({"pfc": True, "buffer": "unlimited"}, "network.pfc", "give pfc_xoff"),
        ({"pfc": True, "pfc_xoff": "50KB", "pfc_xon": "60KB"}, "network.pfc_xon", "must not be above pfc_xoff"),
        ({"pfc": True, "buffer_model": "ns2"}, "network.buffer_model", "waiting"),
    ],
)
def test_bad_lossless_settings_are_one_line_naming_the_key(network, key, words):
    with pytest.raises(ScenarioError) as e:
        fctlab.run(_incast(**network))
    msg = str(e.value)
    assert f": {key}: " in msg and words in msg and "\n" not in msg, msg


def test_the_other_engines_refuse_a_lossless_scenario_by_name():
    with pytest.raises(Unsupported, match=r"network\.pfc: ns-2\.35 does not run priority flow control"):
        refuse_lossless(load_plan(_incast(pfc=True)), "ns-2.35")
    refuse_lossless(load_plan(_incast()), "ns-2.35")  # a lossy one passes
    with pytest.raises(Unsupported, match="network.switch_buffer: htsim does not run a shared-buffer switch"):
        refuse_lossless(load_plan(_incast(switch_buffer="1MB")), "htsim")


def test_the_report_shows_when_each_port_was_paused(tmp_path):
    out = fctlab.run(_incast(pfc=True)).write(tmp_path / "run")
    from fctlab.report import write_report
    from fctlab.report.plots import pause_intervals

    md = write_report([out], tmp_path / "rep", fmt="md").read_text()
    assert "Priority flow control: when each port was paused" in md
    assert "4 ports paused" in md and "h0->sw0" in md
    assert (tmp_path / "rep" / "pauses_run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Every pause ends at its resume, or at the end of the run.
    spans = pause_intervals(
        __import__("pandas").DataFrame(
            {"time_s": [1.0, 2.0, 3.0], "link": ["a->b"] * 3, "prio": [0, 0, 0], "event": ["pause", "resume", "pause"]}
        ),
        end_s=5.0,
    )
    assert spans == {("a->b", 0): [(1.0, 1.0), (3.0, 2.0)]}


def test_the_tutorials_lossless_run_draws_the_figure_it_shows(tmp_path, monkeypatch):
    from pathlib import Path

    from fctlab.cli import main

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "tutorial.md").read_text()
    for cmd in (
        "fctlab run scenarios/tutorial/pfc_incast.toml --out out/pfc",
        "fctlab report out/pfc --out out/pfc-report",
        "img/tutorial_pfc_pauses.png",
    ):
        assert cmd in doc, cmd
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(root / "scenarios" / "tutorial" / "pfc_incast.toml"), "--out", "out/pfc", "-q"]) == 0
    assert main(["report", "out/pfc", "--out", "out/pfc-report"]) == 0
    png = (tmp_path / "out" / "pfc-report" / "pauses_pfc.png").read_bytes()
    assert png == (root / "docs" / "img" / "tutorial_pfc_pauses.png").read_bytes(), "redraw docs/img's figure"
    import pandas as pd

    p = pd.read_parquet(tmp_path / "out" / "pfc" / "pfc.parquet")
    first = p[p["event"] == "pause"].groupby("link")["time_s"].min().sort_values()
    # Two switches back from the congestion, in order: the spine, then leaf0, then the NICs.
    assert list(first.index[:2]) == ["spine0->leaf1", "leaf0->spine0"]
    assert set(first.index[2:]) == {f"h{i}->leaf0" for i in range(4)}
    assert pd.read_json(tmp_path / "out" / "pfc" / "summary.json", typ="series")["drops"] == 0


def test_extreme_thresholds_run_or_are_refused_in_one_line():
    sizes = ["1B", "1500B", "9007199254740992B", None]
    seen = {"ran": 0, "refused": 0}
    for xoff in sizes:
        for xon in sizes:
            for headroom in sizes:
                for buffer in ("1pkt", "100pkt", "unlimited"):
                    net = {"pfc": True, "buffer": buffer}
                    net.update(
                        {k: v for k, v in (("pfc_xoff", xoff), ("pfc_xon", xon), ("pfc_headroom", headroom)) if v}
                    )
                    try:
                        res = fctlab.run(_incast(**net))
                    except ScenarioError as e:
                        assert "\n" not in str(e) and "network." in str(e), str(e)
                        seen["refused"] += 1
                        continue
                    seen["ran"] += 1
                    assert bool(res.flows["completed"].all()), net
    assert seen["ran"] > 20 and seen["refused"] > 20, seen
