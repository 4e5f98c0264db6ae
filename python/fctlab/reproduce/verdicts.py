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
NOT_MEASURED = "not measured"
#: The verdict of a row measured over fewer than MIN_SAMPLES seeds (or jobs): shown, not graded.
NOT_GRADED = "not graded (under 5 samples)"
MIN_SAMPLES = 5
#: The verdict of a row the paper states no number or direction for: shown beside the paper's
#: nearest statement, not graded.
NO_STATEMENT = "not graded (no statement in the paper)"

NO_CHANGE = 0.02  # relative changes below 2% count as "no change"


# --------------------------------------------------------------------------- verdicts


def rel_change(new: float, ref: float) -> float:
    """(new - ref) / ref, NaN when either is missing or ref is 0."""
    if new is None or ref is None:
        return float("nan")
    new, ref = float(new), float(ref)
    if not (math.isfinite(new) and math.isfinite(ref)) or ref == 0:
        return float("nan")
    return (new - ref) / ref


def _sign(x: float, eps: float) -> int:
    if abs(x) < eps:
        return 0
    return 1 if x > 0 else -1


def judge_change(paper: float, sim: float, eps: float = NO_CHANGE, half_width: float = 0.0) -> str:
    """Verdict on a relative (or absolute, for percentage points) change. With `half_width`
    (of the change's 95% interval over seeds) it matches when the mean has the paper's sign and
    some change inside the interval matches (the paper's change lies within the interval
    widened by the rule's tolerance); the direction is the mean's."""
    if sim is None or not math.isfinite(sim):
        return NOT_MEASURED
    h = half_width if half_width and math.isfinite(half_width) else 0.0
    if h > 0 and _sign(sim, eps) == _sign(paper, eps):
        # the values that match `paper` form one interval around it: the nearest point of
        # [sim - h, sim + h] to `paper` matches if any does (a mean of the other sign does
        # not match, however wide its interval)
        near = min(max(paper, sim - h), sim + h)
        if judge_change(paper, near, eps) == MATCH:
            return MATCH
    sp, ss = _sign(paper, eps), _sign(sim, eps)
    if sp != ss:
        return NO_MATCH
    if sp == 0:
        return MATCH
    ratio = sim / paper
    if abs(sim - paper) <= 0.05 or 0.5 <= ratio <= 2.0:
        return MATCH
    return DIRECTION


def judge_value(
    paper: float, sim: float, rel_tol: float = 0.10, reference: Optional[float] = None, half_width: float = 0.0
) -> str:
    """Verdict on a value: the paper's number within `rel_tol` of it (of the paper's number)
    matches; with `half_width` (of a 95% interval over seeds), within `rel_tol` of the interval
    around it. On the same side of `reference` as the paper's is a direction match."""
    if sim is None or not math.isfinite(sim):
        return NOT_MEASURED
    h = half_width if half_width and math.isfinite(half_width) else 0.0
    if abs(sim - paper) <= h + rel_tol * abs(paper):
        return MATCH
    if reference is not None and _sign(sim - reference, 1e-9) == _sign(paper - reference, 1e-9):
        return DIRECTION
    return NO_MATCH


def worst(verdicts: Sequence[str]) -> str:
    """The least favourable verdict of a list (for an item's summary line)."""
    order = [NO_MATCH, DIRECTION, MATCH]
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
