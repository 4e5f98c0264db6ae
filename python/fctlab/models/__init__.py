"""Analytic models from the papers fctlab implements, to hold simulations against.

- :mod:`fctlab.models.atcp`: weighted AIMD (Theorem 1 of the ATCP design), the two-flow
  completion time, and the square-root law for unsynchronized losses.
"""

from . import atcp

__all__ = ["atcp"]
