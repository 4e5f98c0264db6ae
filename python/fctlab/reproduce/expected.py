"""A paper's published numbers as data: ``scenarios/papers/<paper>/expected.toml``.

The file states each number of the paper once, with where the paper gives it and the rule
that grades a measurement against it (see the file's header). A reproduction's item code
measures; :meth:`Expected.row` turns a measurement into a report row with the paper's side,
fctlab's side and the verdict. Nothing here knows a particular paper.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .verdicts import (
    DIRECTION,
    INCONCLUSIVE,
    MATCH,
    MAX_POINTS,
    MAX_TOLERANCE,
    MIN_SAMPLES,
    NO_MATCH,
    NOT_GRADED,
    NOT_MEASURED,
    TOLERANCE,
    TOLERANCE_POINTS,
    Row,
    agree,
    fmt_pct,
    judge_change,
    judge_value,
    rel_change,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RULES = ("value", "change", "claim", "list", "not_measured")
SEE_NEXT = "see next rows"


def _paper_time(x: float) -> str:
    """A time as a paper writes it: the digits it gave, in s or ms (1.8 s, 625 ms)."""
    return f"{round(x, 6):g} s" if x >= 1 else f"{round(x * 1e3, 6):g} ms"


def _points(change: float) -> str:
    return f"{round(change * 100, 3):+g} points"


class ExpectedError(ValueError):
    """An expected-values file that does not follow its format; names the file and the row."""


@dataclass(frozen=True)
class Expectation:
    """One row of a paper's table as the paper states it."""

    id: str
    item: int
    quantity: str
    rule: str
    shown: str
    value: Optional[float] = None
    change: Optional[float] = None  # the paper's change (relative, or points)
    points: bool = False
    tolerance: float = TOLERANCE
    tolerance_reason: str = ""
    reference: Optional[float] = None
    eps: float = 0.02
    reason: str = ""
    source: str = ""
    values: dict = field(default_factory=dict)

    def verdict(self, measured: Any, half_width: float = 0.0) -> str:
        """The verdict on a measured value (a change for `change` rows); `half_width`: of the
        value's 95% interval over seeds, which widens what matches."""
        if self.rule == "not_measured":
            return NOT_MEASURED
        if self.rule == "list":
            return SEE_NEXT
        if self.rule == "claim":
            raise ExpectedError(f"row {self.id}: a claim is graded by the item's own check (pass verdict=)")
        if measured is None or not math.isfinite(float(measured)):
            return NOT_MEASURED
        if self.rule == "value":
            return judge_value(
                self.value,
                float(measured),
                self.tolerance,
                reference=self.reference,
                half_width=half_width,
                points=self.points,
            )
        return judge_change(
            self.change,
            float(measured),
            eps=self.eps,
            half_width=half_width,
            tolerance=self.tolerance,
            points=self.points,
        )


class Expected:
    """The expected values of one paper."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ExpectedError(f"{self.path}: {e}") from None
        self.paper = data.get("paper", {})
        self.items = {int(k): v for k, v in data.get("items", {}).items()}
        self._raw = {}
        order = []
        for i, r in enumerate(data.get("rows", [])):
            rid = r.get("id")
            if not rid or rid in self._raw:
                raise ExpectedError(f"{self.path}: rows[{i}]: missing or repeated id {rid!r}")
            if r.get("rule") not in RULES:
                raise ExpectedError(f"{self.path}: {rid}: rule {r.get('rule')!r} is not one of {', '.join(RULES)}")
            self._raw[rid] = r
            order.append(rid)
        self.rows = {rid: self._build(rid) for rid in order}

    # -- references: "id" (a value), "id.from", "id.to", "id.<key>" of a row's values
    def _number(self, ref: Any, where: str) -> float:
        if isinstance(ref, (int, float)) and not isinstance(ref, bool):
            return float(ref)
        if isinstance(ref, str):
            rid, _, key = ref.rpartition(".")
            for cand, k in ((ref, "value"), (rid, key)):
                r = self._raw.get(cand)
                if r is None:
                    continue
                if k in ("value", "from", "to") and isinstance(r.get(k), (int, float, str)):
                    return self._number(r[k], where)
                if k in r.get("values", {}):
                    return float(r["values"][k])
        raise ExpectedError(f"{self.path}: {where}: {ref!r} is neither a number nor a reference to one")

    def _build(self, rid: str) -> Expectation:
        r = self._raw[rid]
        rule, unit = r["rule"], r.get("unit", "ratio")
        for key in ("item", "quantity"):
            if key not in r:
                raise ExpectedError(f"{self.path}: {rid}: missing `{key}`")
        if rule == "value" and not isinstance(r.get("value"), (int, float)):
            raise ExpectedError(f"{self.path}: {rid}: a `value` row needs a number `value`")
        fmt = _paper_time if unit == "s" else (lambda x: f"{x:g}")
        change, shown = r.get("change"), r.get("shown")
        if rule in ("change", "not_measured") and change is None and "from" in r:
            a, b = self._number(r["from"], rid), self._number(r["to"], rid)
            change = (b - a) if r.get("points") else rel_change(b, a)
            if shown is None:
                shown = (
                    _points(change)
                    if r.get("points")
                    else f"{fmt(a)} -> {fmt(b)} ({fmt_pct(change)})"
                    if unit == "s"
                    else fmt_pct(change)
                )
        if shown is None:
            if rule == "value":
                shown = fmt(r["value"])
            elif change is not None:
                shown = _points(change) if r.get("points") else fmt_pct(change).replace(".0%", "%")
            else:
                raise ExpectedError(f"{self.path}: {rid}: needs `shown` (no number to show)")
        if rule == "change" and change is None:
            raise ExpectedError(f"{self.path}: {rid}: a `change` row needs `change`, or `from` and `to`")
        if rule == "not_measured" and not r.get("reason"):
            raise ExpectedError(f"{self.path}: {rid}: a `not_measured` row needs `reason`")
        tolerance = self._tolerance(rid, r)
        return Expectation(
            id=rid,
            item=int(r["item"]),
            quantity=r["quantity"],
            rule=rule,
            shown=shown,
            value=float(r["value"]) if isinstance(r.get("value"), (int, float)) else None,
            change=change,
            points=bool(r.get("points")),
            tolerance=tolerance,
            tolerance_reason=r.get("tolerance_reason", ""),
            reference=r.get("reference"),
            eps=float(r.get("eps", 0.02)),
            reason=r.get("reason", ""),
            source=r.get("source", ""),
            values=dict(r.get("values", {})),
        )

    def _tolerance(self, rid: str, r: dict) -> float:
        """The row's tolerance: the default (10%, or 2 points for `points` rows) unless the
        row states another with its `tolerance_reason`; above 25% (5 points) the reason
        must be there too."""
        points = bool(r.get("points"))
        default = TOLERANCE_POINTS if points else TOLERANCE
        t = r.get("tolerance", default)
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t < 10:
            raise ExpectedError(f"{self.path}: {rid}: `tolerance` must be a number from 0 (got {t!r})")
        ceiling = MAX_POINTS if points else MAX_TOLERANCE
        if abs(t - default) > 1e-12 and not str(r.get("tolerance_reason", "")).strip():
            raise ExpectedError(
                f"{self.path}: {rid}: tolerance {t:g} is not the default {default:g}: give its `tolerance_reason`"
                + (f" (and why a band above {ceiling:g} still tests the row)" if t > ceiling else "")
            )
        return float(t)

    def __getitem__(self, rid: str) -> Expectation:
        try:
            return self.rows[rid]
        except KeyError:
            raise ExpectedError(f"{self.path}: no row {rid!r}") from None

    def of_item(self, n: int) -> list:
        return [e for e in self.rows.values() if e.item == n]

    def row(
        self,
        rid: str,
        measured: Any = None,
        fctlab: str = "",
        verdict: Optional[str] = None,
        half_width: float = 0.0,
        samples: Optional[int] = None,
        unit: str = "seed",
    ) -> Row:
        """The report row of expectation `rid`: `measured` is graded by the row's rule (for a
        claim the caller passes its `verdict`); `fctlab` is how the measurement is shown;
        `half_width`, of the measurement's 95% interval over seeds, widens what matches. A
        measurement over fewer than MIN_SAMPLES `samples` (seeds, or the `unit` they are) is
        shown but not graded."""
        e = self[rid]
        if e.rule == "claim":
            if verdict not in (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH, NOT_MEASURED):
                raise ExpectedError(f"{self.path}: {rid}: a claim needs a verdict from the item's check")
            v = verdict
        elif e.rule == "not_measured":
            return Row(e.quantity, e.shown, e.reason, NOT_MEASURED, rid=rid)
        else:
            v = e.verdict(measured, half_width)
        if samples is not None and samples < MIN_SAMPLES and v in (MATCH, DIRECTION, INCONCLUSIVE, NO_MATCH):
            v = NOT_GRADED
            fctlab = f"{fctlab} ({samples} {unit}{'' if samples == 1 else 's'})"
        m = float(measured) if isinstance(measured, (int, float)) and not isinstance(measured, bool) else math.nan
        return Row(
            e.quantity, e.shown, fctlab, v, rid=rid, measured=m, half_width=float(half_width or 0.0), samples=samples
        )

    def agrees(self, a: Row, b: Row) -> Optional[bool]:
        """Whether two measurements of row `a.rid` (fctlab's `a`, another simulator's `b`)
        agree: within the row's tolerance of each other, widened by both 95% intervals
        (:func:`.verdicts.agree`); claims by the same verdict. None for rows that only list
        values."""
        e = self[a.rid]
        if e.rule in ("list", "not_measured"):
            return None
        if e.rule == "claim":
            return a.verdict == b.verdict
        if not (math.isfinite(a.measured) and math.isfinite(b.measured)):
            return None
        return agree(a.measured, a.half_width, b.measured, b.half_width, e.tolerance, e.points)

    def summary(self, n: int) -> str:
        """The paper's numbers of item `n`, for an item that was not run."""
        return "; ".join(f"{e.quantity}: {e.shown}" for e in self.of_item(n) if e.rule != "claim" or e.shown)


AGREES = {
    (True, True): "the paper and fctlab",
    (True, False): "the paper",
    (False, True): "fctlab",
    (False, False): "neither",
}


def set_ns2(ex, r, t) -> None:
    """Row `r` (fctlab's) gets ns-2.35's measurement `t` of the same row: shown value,
    number, verdict against the paper and whom it agrees with (each by the row's own rule)."""
    r.ns2, r.ns2_verdict = t.fctlab, t.verdict
    r.ns2_measured, r.ns2_half_width, r.ns2_samples = t.measured, t.half_width, t.samples
    if not r.rid:
        return
    with_fctlab = ex.agrees(r, t)
    if with_fctlab is None and ex[r.rid].rule == "list":
        r.ns2_agrees = "-"
    elif t.verdict == NOT_GRADED:
        r.ns2_agrees = ("fctlab" if with_fctlab else "not fctlab") + "; not graded against the paper"
    else:
        r.ns2_agrees = AGREES[(t.verdict == MATCH, bool(with_fctlab))]
