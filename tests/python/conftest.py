"""Wall-clock tests on a shared machine.

A test marked ``@pytest.mark.wallclock`` measures rates, shares or times of real traffic
(the namespace testbed), which other work on the same CPUs can disturb. When such a test
fails it runs once more; the machine's load during each attempt (the 1-minute load average
before and after, the share of CPU time busy and stolen) is printed, and added to the
failure's report when the second attempt fails too. A test that fails twice fails.
"""

from __future__ import annotations

import pytest
from _pytest.runner import runtestprotocol


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "wallclock: measures real traffic against the clock; run once more on failure, with the machine's load printed",
    )


def _attempt(item, nextitem) -> tuple:
    from fctlab.crosscheck.testbed import load_between, machine_load  # only for the marked tests

    before = machine_load()
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    return reports, load_between(before, machine_load())


def _say(item, line: str) -> None:
    tr = item.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("wallclock") is None:
        return None
    from fctlab.crosscheck.testbed import load_text

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports, load1 = _attempt(item, nextitem)
    failed = [r for r in reports if r.failed and r.when == "call"]
    if failed:
        crash = getattr(failed[0].longrepr, "reprcrash", None)
        why = (crash.message if crash is not None else "failed").splitlines()[0][:300]
        _say(item, f"\n{item.nodeid}: attempt 1 failed ({why}); {load_text(load1)}; running it once more")
        reports, load2 = _attempt(item, nextitem)
        outcome = "failed again" if any(r.failed for r in reports) else "passed"
        _say(item, f"{item.nodeid}: attempt 2 {outcome}; {load_text(load2)}")
        for r in reports:
            if r.when == "call":
                r.sections.append(
                    (
                        "wallclock",
                        f"attempt 1 failed: {why}\n  {load_text(load1)}\nattempt 2 {outcome}\n  {load_text(load2)}",
                    )
                )
    for r in reports:
        item.ihook.pytest_runtest_logreport(report=r)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
