"""The measurement window (`[measure]`): flows that start inside it are the measured ones;
the others run and load the network but stay out of the figures."""

from __future__ import annotations

import pytest

import fctlab
from fctlab.cli import main

SCENARIO = """
seed = 1
stop_time = "400ms"
[network]
topology = "dumbbell"
senders = 2
receivers = 1
link_rate = "1Gbps"
link_delay = "20us"
buffer = "100pkt"
{measure}
[[flows]]
src = "s0"
dst = "r0"
start = "20ms"
tag = "bulk"
""" + "".join(
    f'[[flows]]\nsrc = "s1"\ndst = "r0"\nsize = "100KB"\nstart = "{5 * k}ms"\ntag = "probe"\n' for k in range(20)
)


def _run(tmp_path, measure: str):
    f = tmp_path / "m.toml"
    f.write_text(SCENARIO.format(measure=measure))
    return f, fctlab.run(f)


def test_the_window_selects_exactly_its_flows_and_changes_the_mean(tmp_path):
    _, r = _run(tmp_path, '[measure]\nfrom = "30ms"\nuntil = "80ms"')
    # Probes start every 5 ms from 0 to 95 ms: 30, 35, ..., 75 ms are in [30 ms, 80 ms); the
    # long-lived flow starts at 20 ms, before it.
    m = r.measured
    assert sorted(round(s * 1000) for s in m["start_s"]) == list(range(30, 80, 5))
    assert r.summary["flows_measured"] == 10 and r.summary["flows_total"] == 21
    assert (r.summary["measure_from_s"], r.summary["measure_until_s"]) == (0.03, 0.08)
    # The measured probes share the link with the long-lived flow; the warm-up ones before
    # 20 ms had it to themselves.
    early = r.flows[(r.flows["tag"] == "probe") & (r.flows["start_s"] < 0.02)]
    assert m["fct_s"].mean() > 1.5 * early["fct_s"].mean(), (m["fct_s"].mean(), early["fct_s"].mean())
    all_probes = r.flows[r.flows["tag"] == "probe"]["fct_s"].mean()
    assert abs(m["fct_s"].mean() - all_probes) > 0.01 * all_probes
    # Without a window every flow is measured.
    _, r0 = _run(tmp_path, "")
    assert len(r0.measured) == 21 and r0.summary["flows_measured"] == 21
    assert r0.summary["measure_from_s"] is None and r0.summary["measure_until_s"] is None


def test_the_cli_and_the_report_say_which_window_they_used(tmp_path, capsys):
    f, _ = _run(tmp_path, '[measure]\nfrom = "30ms"\nuntil = "80ms"')
    assert main(["run", str(f), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "measured flows (window 30 ms–80 ms): 10 flows, 9 completed; FCT mean" in out, out
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep"), "--format", "md"]) == 0
    text = "".join(p.read_text() for p in (tmp_path / "rep").glob("*.md"))
    assert "out: measured flows (window 30 ms–80 ms): 10 flows, 9 completed; FCT mean" in text, text[:2000]
    assert "out: 11 more flows ran, outside its [measure] window" in text, text[:2000]


@pytest.mark.parametrize(
    "measure, want",
    [
        ('[measure]\nfrom = "80ms"\nuntil = "30ms"', "measure.until: 30ms is not after measure.from (80ms)"),
        ('[measure]\nfrom = "1s"', "measure.from: 1s is not before stop_time (400ms)"),
        ('[measure]\nstart = "1ms"', "unknown"),
    ],
)
def test_bad_windows_are_one_line_errors(tmp_path, measure, want):
    with pytest.raises(fctlab.ScenarioError, match=want.replace("(", r"\(").replace(")", r"\)")):
        _run(tmp_path, measure)
