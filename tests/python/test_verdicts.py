"""The two verdict rules every reproduction row is graded by (fctlab.reproduce.verdicts), on
rows a reviewer flagged under the rules they replace, and the tolerance's reason that
expected.toml must give."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fctlab.reproduce.expected import Expected, ExpectedError
from fctlab.reproduce.verdicts import (
    DIRECTION,
    INCONCLUSIVE,
    MATCH,
    NO_MATCH,
    NOT_MEASURED,
    agree,
    judge_change,
    judge_value,
)

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the audit's rows


def test_a_change_whose_interval_spans_no_change_is_not_a_match():
    # ATCP item 7, medium flows, ATCP vs TCP: -6.4% +- 71.5% against the paper's -26.4%
    assert judge_change(-0.264, -0.064, half_width=0.715) == INCONCLUSIVE


def test_a_change_a_third_of_the_papers_is_a_direction_match_not_a_match():
    # ATCP item 6, medium flows: -8.7% +- 6.4% against the paper's -29.4%
    assert judge_change(-0.294, -0.087, half_width=0.064) == DIRECTION
    # ATCP item 1 under ns2: a window ratio of 1.740 against Theorem 1's 2
    assert judge_value(2.0, 1.740, 0.10, reference=1.0) == DIRECTION


def test_no_factor_of_two_band():
    assert judge_change(-0.40, -0.22) == DIRECTION  # within 2x, once a match
    assert judge_change(-0.40, -0.10, half_width=0.12) == NO_MATCH  # reaches -0.22 (a factor of two) and 0
    assert judge_change(-0.333, -0.239, half_width=0.01) == DIRECTION


# --------------------------------------------------------------------------- the value rule


def test_value_matches_when_the_papers_number_lies_in_the_widened_interval():
    assert judge_value(2.0, 1.95, 0.10) == MATCH
    assert judge_value(2.0, 1.5, 0.10, half_width=0.3) == MATCH  # 0.5 <= 0.3 + 0.2
    assert judge_value(2.0, 1.5, 0.10, half_width=0.2) == NO_MATCH  # 0.5 > 0.2 + 0.2
    assert judge_value(2.0, 1.5, 0.10, half_width=float("nan")) == NO_MATCH  # one seed: no interval
    assert judge_value(0.9999, 0.975, 0.02, points=True) == NO_MATCH  # 2.49 points off, 2 allowed
    assert judge_value(0.9999, 0.985, 0.02, points=True) == MATCH
    assert judge_value(0.0, 0.0) == MATCH and judge_value(0.0, 0.001) == NO_MATCH
    assert judge_value(2.0, float("nan")) == NOT_MEASURED


def test_value_direction_needs_the_whole_interval_on_the_papers_side():
    assert judge_value(2.0, 1.5, 0.10, reference=1.0) == DIRECTION
    assert judge_value(2.0, 1.2, 0.10, reference=1.0, half_width=0.3) == NO_MATCH  # reaches below 1
    assert judge_value(2.0, 0.9, 0.10, reference=1.0) == NO_MATCH


# --------------------------------------------------------------------------- the change rule


def test_change_rule():
    assert judge_change(-0.33, -0.31) == MATCH  # within 10% of the paper's change
    assert judge_change(-0.33, -0.25, half_width=0.06) == MATCH  # the interval reaches it
    assert judge_change(-0.90, 0.01) == NO_MATCH
    assert judge_change(-0.40, +0.10, half_width=0.35) == NO_MATCH  # spans zero, misses the number
    assert judge_change(-0.40, +0.10, half_width=0.55) == INCONCLUSIVE  # spans zero and the number
    assert judge_change(-0.40, -0.015) == NO_MATCH  # "no change" is not a direction
    assert judge_change(0.0, 0.001) == MATCH and judge_change(0.0, 0.10, half_width=0.05) == NO_MATCH
    assert judge_change(0.0, 0.10, half_width=0.09) == MATCH  # reaches within 2% of zero
    # a change in points: the tolerance is absolute
    assert judge_change(0.39, 0.527, half_width=0.157, points=True) == MATCH
    assert judge_change(0.38, 0.009, half_width=0.046, points=True) == NO_MATCH


def test_agreement_of_two_simulators_by_the_rows_tolerance():
    assert agree(1.74, 0.0, 1.744, 0.0, 0.10)
    assert not agree(1.0, 0.05, 2.0, 0.05, 0.10)
    assert agree(-0.064, 0.715, -0.085, 0.131, 0.10)


# --------------------------------------------------------------------------- expected.toml


def _write(tmp_path, row: str) -> Path:
    p = tmp_path / "expected.toml"
    p.write_text('[paper]\nname = "x"\n\n[[rows]]\nid = "r"\nitem = 1\nquantity = "q"\n' + row)
    return p


def test_a_tolerance_other_than_the_default_needs_its_reason(tmp_path):
    with pytest.raises(ExpectedError, match=r"expected.toml: r: tolerance 0.15 .* `tolerance_reason`"):
        Expected(_write(tmp_path, 'rule = "value"\nvalue = 1.0\ntolerance = 0.15\n'))
    with pytest.raises(ExpectedError, match=r"above 0.25"):
        Expected(_write(tmp_path, 'rule = "value"\nvalue = 1.0\ntolerance = 0.5\n'))
    e = Expected(_write(tmp_path, 'rule = "value"\nvalue = 1.0\ntolerance = 0.15\ntolerance_reason = "why"\n'))
    assert e["r"].tolerance == 0.15
    assert Expected(_write(tmp_path, 'rule = "change"\nchange = 0.3\npoints = true\n'))["r"].tolerance == 0.02


@pytest.mark.parametrize("paper", ["atcp", "thesis", "schedtcp", "pfabric", "pias", "homa"])
def test_every_papers_tolerances_state_their_reasons(paper):
    Expected(ROOT / "scenarios" / "papers" / paper / "expected.toml")


def test_no_item_grades_a_number_by_a_rule_of_its_own():
    """Only the verdicts and expected modules call the rules; no item compares a paper's
    number with its own tolerance."""
    pkg = ROOT / "python" / "fctlab" / "reproduce"
    for f in pkg.glob("*.py"):
        if f.name in ("verdicts.py", "expected.py", "common.py"):
            continue
        tree = ast.parse(f.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not names & {"judge_value", "judge_change", "agree"}, f"{f.name} grades by its own call of a rule"
