"""Analytic models from the papers fctlab implements, to hold simulations against.

- :mod:`fctlab.models.atcp`: weighted AIMD (Theorem 1 of the ATCP design), the two-flow
  completion time, and the square-root law for unsynchronized losses.
- :mod:`fctlab.models.aimd`: the AIMD model of SDC's analysis (the thesis's section 3.4):
  stationary windows, throughput, completion times, class-averaged parameters and gains.
- :mod:`fctlab.models.homa`: Homa's unscheduled priorities and cutoffs for a workload.
- :mod:`fctlab.models.pias`: PIAS's demotion thresholds for a size distribution and a load.
"""

from . import aimd, atcp, homa, pias

__all__ = ["aimd", "atcp", "homa", "pias"]
