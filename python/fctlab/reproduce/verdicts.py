"""The verdict rules every reproduction item grades by (see :mod:`.common`), the formatting of
the numbers they show, and :class:`Row`, one graded line of a report. A module of its own,
below both :mod:`.common` (the runner and the items' helpers) and :mod:`.expected` (the
papers' numbers), which both use it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from .. import numfmt as _numfmt


MATCH = "matches"
DIRECTION = "direction matches, size differs"
NO_MATCH = "does not match"
#: A change row whose interval spans "no change" while the paper's change lies inside it: the
#: runs do not show the change either way.
INCONCLUSIVE = "inconclusive (interval spans no change)"
NOT_MEASURED = "not measured"
#: The verdict of a row measured over fewer than MIN_SAMPLES seeds (or jobs): shown, not graded.
NOT_GRADED = "not graded (under 5 samples)"
MIN_SAMPLES = 5
#: The verdict of a row the paper states no number or direction for: shown beside the paper's
#: nearest statement, not graded.
NO_STATEMENT = "not graded (no statement in the paper)"

NO_CHANGE = 0.02  # relative changes below 2% count as "no change"
#: The default tolerances: 10% of the paper's number (a value, or a relative change), 2 points
#: for a number in points (a difference of percentages, or a share graded in points). A row
#: may state its own, with its reason; above MAX_TOLERANCE (MAX_POINTS) the reason must say
#: why so wide a band is still a test.
TOLERANCE = 0.10
TOLERANCE_POINTS = 0.02
MAX_TOLERANCE = 0.25
MAX_POINTS = 0.05

#: The two rules, as the reports' headers and docs/reproduce.md state them.
RULES_TEXT = (
    "A value matches when the paper's number lies inside fctlab's 95% interval widened by the row's tolerance "
    "(10% of the paper's number unless the row states another, with its reason); on the paper's side of the row's "
    "reference, with the whole interval, it matches in direction. A change matches when the paper's change lies "
    "inside fctlab's interval widened by the tolerance and the interval lies wholly on the paper's side of no "
    "change (within 2%); an interval on the paper's side that misses its number matches in direction; an interval "
    "that spans no change while holding the paper's number is inconclusive; anything else does not match. Rows "
    "over fewer than 5 seeds are shown, not graded."
)


# --------------------------------------------------------------------------- verdicts


def rel_change(new: float, ref: float) -> float:
    """(new - ref) / ref, NaN when either is missing or ref is 0."""
    if new is None or ref is None:
        return float("nan")
    new, ref = float(new), float(ref)
    if not (math.isfinite(new) and math.isfinite(ref)) or ref == 0:
        return float("nan")
    return (new - ref) / ref


def _half(half_width: float) -> float:
    return half_width if half_width and math.isfinite(half_width) else 0.0


def _band(paper: float, tolerance: float, points: bool) -> float:
    """How far from the paper's number a measurement may lie before its interval is widened."""
    return tolerance if points else tolerance * abs(paper)


def judge_value(
    paper: float,
    sim: float,
    rel_tol: float = TOLERANCE,
    reference: Optional[float] = None,
    half_width: float = 0.0,
    points: bool = False,
) -> str:
    """Verdict on a value: a match when `paper` lies inside [sim - h, sim + h] widened by the
    tolerance (relative to `paper`, or absolute with `points`); a direction match when the
    whole interval lies on the paper's side of `reference`."""
    if sim is None or not math.isfinite(sim):
        return NOT_MEASURED
    h = _half(half_width)
    if abs(sim - paper) <= h + _band(paper, rel_tol, points):
        return MATCH
    if reference is not None:
        side = 1 if paper > reference else -1 if paper < reference else 0
        if side and side * (sim - reference) > h:
            return DIRECTION
    return NO_MATCH


def judge_change(
    paper: float,
    sim: float,
    eps: float = NO_CHANGE,
    half_width: float = 0.0,
    tolerance: float = TOLERANCE,
    points: bool = False,
) -> str:
    """Verdict on a change (relative, or in points with `points`), measured as `sim` with a
    95% interval of half-width `half_width`. A change is shown only by an interval that lies
    wholly beyond `eps` on the paper's side; it matches when the paper's change also lies
    inside the interval widened by the tolerance. A paper's "no change" (|paper| < eps)
    matches an interval that reaches within `eps` of zero."""
    if sim is None or not math.isfinite(sim):
        return NOT_MEASURED
    h = _half(half_width)
    if abs(paper) < eps:
        return MATCH if abs(sim) - h <= eps else NO_MATCH
    side = 1 if paper > 0 else -1
    shown = side * sim - h > eps  # the whole interval on the paper's side of "no change"
    near = abs(sim - paper) <= h + _band(paper, tolerance, points)
    if shown:
        return MATCH if near else DIRECTION
    return INCONCLUSIVE if near else NO_MATCH


def agree(a: float, ha: float, b: float, hb: float, tolerance: float, points: bool = False) -> bool:
    """Two measurements of one row (fctlab's and another simulator's) agree when they lie
    within the row's tolerance of each other, widened by both 95% intervals."""
    band = tolerance if points else tolerance * max(abs(a), abs(b))
    return abs(a - b) <= _half(ha) + _half(hb) + band


def worst(verdicts: Sequence[str]) -> str:
    """The least favourable verdict of a list (for an item's summary line)."""
    order = [NO_MATCH, INCONCLUSIVE, DIRECTION, MATCH]
    vs = [v for v in verdicts if v in order]
    if not vs:
        return next((v for v in (NOT_GRADED, NO_STATEMENT) if v in verdicts), NOT_MEASURED)
    return min(vs, key=order.index)


# --------------------------------------------------------------------------- formatting


# The project's number formatting (fctlab.numfmt), under the names the items use.
fmt_time = _numfmt.seconds
fmt_num = _numfmt.number


def fmt_pct(x: Optional[float], signed: bool = True) -> str:
    """A fraction as a percentage, signed (a change) by default."""
    return _numfmt.signed_percent(x) if signed else _numfmt.percent(x)


# --------------------------------------------------------------------------- items


@dataclass
class Row:
    quantity: str
    paper: str
    fctlab: str
    verdict: str
    #: the expectation's id (expected.toml) when the row grades one
    rid: str = ""
    #: the graded number (a value, or a change) and the half-width of its 95% interval
    measured: float = math.nan
    half_width: float = 0.0
    #: the seeds (or jobs, or kernel runs) the measurement rests on; None when not counted
    samples: Optional[int] = None
    #: the same row measured with ns-2.35 (see :func:`fctlab.reproduce.runner.ns2_pass`):
    #: shown value, verdict against the paper, and whom it agrees with
    ns2: str = ""
    ns2_verdict: str = ""
    ns2_agrees: str = ""
    #: ns-2.35's graded number, the half-width of its interval and its sample count
    ns2_measured: float = math.nan
    ns2_half_width: float = 0.0
    ns2_samples: Optional[int] = None
