"""PIAS's demotion thresholds for a flow-size distribution and a load (Bai et al., NSDI 2015):
the thresholds that minimise the paper's queueing model of the mean flow completion time.

The model (``crates/dist/src/mlfq.rs`` has it in full): a flow sends its bytes below the
first threshold in the highest band, the next span in the second, and so on; each band is an
M/M/1 queue whose load is the bytes of its band and every band above it; a flow spends
``1 / (1 - load)`` in each band it reaches. The mean over flows is the paper's
``sum_l theta_l sum_(m <= l) T_m``. A band's load counts the bytes flows send in it (the paper
counts each flow that reaches a band as sending the band's whole span). The simulator solves it
exactly on a grid (dynamic programming over 2,048 candidate thresholds) whenever a scenario's
``poisson`` workload runs PIAS without ``pias_thresholds``; these functions give the same
numbers without a scenario.

    >>> from fctlab.models import pias
    >>> pias.thresholds("websearch", 0.6)["thresholds"]
    [1998124, 9981014]

Each band a flow passes through costs it a wait in the model, so the optimum often leaves bands
unused (two thresholds, three bands, above). ``docs/size_aware.md`` sets these beside the
authors' published thresholds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Union

from .. import _core
from ..textfile import TextFileError, read_text

__all__ = ["thresholds", "mean_time"]

Sizes = Union[str, Path]


def _cdf(sizes: Sizes) -> tuple:
    """(a shipped CDF's name or a CDF file's text, its source name)."""
    if isinstance(sizes, Path) or Path(str(sizes)).is_file():
        try:
            return read_text(sizes, what="CDF file"), str(sizes)
        except (OSError, TextFileError) as e:
            raise ValueError(str(e)) from None
    return str(sizes), str(sizes)


def thresholds(sizes: Sizes, load: float, bands: int = 8, unit_bytes: float = 1.0) -> dict:
    """The demotion thresholds that minimise the model for `sizes` at `load`.

    `sizes`: a shipped distribution's name (``"websearch"``, ``"datamining"``, ...) or the path
    of a CDF file whose sizes are in units of `unit_bytes` (1460 for the ns-2 files in packets).
    `load`: the fraction of the link the flows use, strictly between 0 and 1. `bands`: the
    switch ports' bands (2 to 8; at most ``bands - 1`` thresholds).

    Returns ``{"thresholds": [bytes, ...], "mean_time": T, "one_band": 1 / (1 - load)}``:
    the model's mean time with the thresholds and with none (in units of a unit service time).
    Raises ``ValueError`` for a load outside (0, 1), a bad file or too few or many bands."""
    if not 2 <= int(bands) <= 8:
        raise ValueError(f"bands: expected 2 to 8, got {bands}")
    cdf, source = _cdf(sizes)
    found, t = _core.mlfq_thresholds(cdf, float(load), int(bands) - 1, float(unit_bytes), source)
    return {"thresholds": list(found), "mean_time": t, "one_band": 1.0 / (1.0 - float(load))}


def mean_time(sizes: Sizes, load: float, thresholds: Sequence[int], unit_bytes: float = 1.0) -> float:
    """The model's mean time for `sizes` at `load` with the given demotion thresholds (bytes,
    rising): to hold any thresholds, the authors' for instance, against :func:`thresholds`."""
    cdf, source = _cdf(sizes)
    return _core.mlfq_mean_time(cdf, float(load), [int(t) for t in thresholds], float(unit_bytes), source)
