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
