"""One summary of a run everywhere: `fctlab run`, a RunResult's repr and HTML repr, `fctlab
report` and `fctlab compare` show the same figures, computed by one function, and say which
flows they are over."""

from __future__ import annotations

import html
import re

import pytest

import fctlab
from fctlab.cli import main
from fctlab.numfmt import seconds

from test_measure import SCENARIO


@pytest.mark.parametrize(
    "measure, label",
    [('[measure]\nfrom = "30ms"\nuntil = "80ms"', "measured flows (window 30 ms–80 ms)"), ("", "all flows")],
)
def test_every_summary_shows_the_same_figures(tmp_path, capsys, measure, label):
    f = tmp_path / "m.toml"
    f.write_text(SCENARIO.format(measure=measure))
    r = fctlab.run(f)
    line = r.figures().headline()
    assert line.startswith(label + ": "), line
    m = re.fullmatch(r".*: (\d+) flows, \d+ completed; FCT mean (.+), median (.+), p99 (.+)", line)
    assert m, line
    assert int(m.group(1)) == (10 if measure else 21)
    # The figures are those of the measured flows.
    fct = r.measured["fct_s"].dropna()
    assert m.group(2) == seconds(fct.mean())
    assert m.group(3) == seconds(fct.median())
    assert m.group(4) == seconds(fct.quantile(0.99))
    assert line in repr(r)
    assert html.escape(line) in r._repr_html_()
    out = tmp_path / "out"
    assert main(["run", str(f), "--out", str(out)]) == 0
    assert line in capsys.readouterr().out
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--format", "md"]) == 0
    assert line in (tmp_path / "rep" / "report.md").read_text()
    assert main(["compare", str(out), str(out)]) == 0
    assert line in capsys.readouterr().out


def test_the_single_run_report_says_which_flows_in_one_time_unit_and_shows_drops(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text(SCENARIO.format(measure='[measure]\nfrom = "30ms"\nuntil = "80ms"'))
    out = tmp_path / "out"
    assert main(["run", str(f), "--out", str(out), "--trace-drops"]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--format", "md"]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    alts = dict((b, a) for a, b in re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", text))
    # where and when packets were dropped, from drops.parquet
    assert "drops_out.png" in alts and (tmp_path / "rep" / "drops_out.png").is_file(), alts
    # the flow figures say which flows they are over; active flows says which it counts
    for name in ("fct_cdf.png", "fct_by_bucket.png", "slowdown_by_bucket.png"):
        assert "(measured flows" in alts[name], alts[name]
    assert "(measured flows counted)" in alts["active_flows.png"]
    assert "box: 25th-75th percentile and median" in alts["fct_by_bucket.png"]
    # every time in the report's tables is in one unit (the wall time is the machine's, not the run's)
    units, skip = set(), None
    for line in text.splitlines():
        if not line.startswith("| "):
            skip = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if "Wall time" in cells:
            skip = cells.index("Wall time")
        units |= {
            m.group(1)
            for i, c in enumerate(cells)
            if i != skip and (m := re.fullmatch(r"-?[\d.,]+(?:e-?\d+)? (s|ms|us|ns)", c))
        }
    assert units == {"ms"}, units


def test_the_bucket_column_sorts_by_size():
    import pandas as pd

    from fctlab import metrics

    sizes = pd.Series([20_000_000, 5_000, None, 500_000], dtype="float64")
    b = metrics.assign_buckets(sizes)
    assert b.dtype == pd.CategoricalDtype(["small", "medium", "large", "long-lived", "other"], ordered=True)
    assert b.sort_values().tolist() == ["small", "medium", "large", "long-lived"]
    flows = pd.DataFrame(
        {
            "size_bytes": sizes,
            "fct_s": [1.0, 0.1, None, 0.5],
            "slowdown": [2.0, 1.0, None, 1.5],
            "completed": [True] * 4,
        }
    )
    st = metrics.fct_stats(flows, by="bucket")
    assert st["bucket"].cat.ordered and st.sort_values("bucket")["bucket"].tolist() == [
        "small",
        "medium",
        "large",
        "long-lived",
    ]
