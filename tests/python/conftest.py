"""Two markers for the test suite.

``long``: tests that take seconds each (over 2 s of a full run on a 2-core machine), and those
that run on the kernel testbed in real time. `make test` (pytest's defaults) runs them; `make
check`, the edit loop, leaves them out with ``-m "not slow and not benchmark and not long"``.
Listed here, in one place, rather than on each test; `test_check_markers.py` fails when an entry
names no test.

``wallclock``: a test that measures rates, shares or times of real traffic (the namespace
testbed), which other work on the same CPUs can disturb. When such a test fails it runs once
more; the machine's load during each attempt (the 1-minute load average before and after, the
share of CPU time busy and stolen) is printed, and added to the failure's report when the second
attempt fails too. A test that fails twice fails.
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


#: Whole files: the kernel testbed (real time, as root) and the tutorial's study.
LONG_FILES = {
    "test_testbed.py": "the kernel testbed in real time",
    "test_testbed_rcp.py": "the kernel testbed in real time",
    "test_testbed_pias.py": "the kernel testbed in real time",
    "test_tutorial.py": "the tutorial's sweep and report, 18 s",
}
#: Single tests, "file::function" (every parameter of a parametrized one).
LONG = {
    "test_reproduce_schedtcp.py::test_quick_run_writes_full_report",
    "test_reproduce_schedtcp.py::test_quick_run_of_the_claims_items",
    "test_reproduce_thesis.py::test_quick_run_writes_full_report",
    "test_reproduce_thesis.py::test_claim_items_give_their_rows_from_measured_numbers",
    "test_reproduce.py::test_quick_run_writes_full_report",
    "test_reproduce.py::test_quick_run_of_the_claims_items",
    "test_reproduce.py::test_items_subset_reports_the_others_as_not_run",
    "test_reproduce_pfabric.py::test_quick_item1_writes_its_rows_figure_and_numbers",
    "test_reproduce_pias.py::test_quick_item1_writes_its_rows_figure_and_numbers",
    "test_reproduce_pias.py::test_quick_item3_sets_derived_thresholds_beside_the_authors_and_runs_both",
    "test_sweep.py::test_the_default_sweep_report_is_slowdown_by_size_against_load_one_line_per_protocol",
    "test_sweep.py::test_a_killed_worker_costs_only_its_own_run",
    "test_sweep.py::test_two_workers_give_the_sequential_results_and_a_rerun_resumes",
    "test_sweep.py::test_a_dask_cluster_losing_a_worker_still_stores_every_run_once",
    "test_sweep.py::test_a_killed_local_sweep_resumes_with_only_the_missing_runs",
    "test_sweep.py::test_report_of_a_sweep_plots_a_metric_with_intervals_over_seeds",
    "test_sweep_store.py::test_a_run_whose_worker_is_interrupted_is_not_stored_and_a_resume_runs_it",
    "test_rundir.py::test_a_second_ctrl_c_while_writing_leaves_the_directory_complete_or_as_it_was",
    "test_sched_sockets.py::test_idle_connections_under_a_descriptor_limit_do_not_stop_a_sender",
    "test_sched_sockets.py::test_one_receiver_serves_senders_in_a_row_and_at_once_and_refuses_forgeries",
    "test_streaming.py::test_ctrl_c_leaves_the_flows_finished_so_far_and_the_rest_in_a_readable_file",
    "test_streaming.py::test_fctlab_run_writes_its_flows_as_they_finish_the_same_bytes_every_time",
    "test_cli.py::test_ctrl_c_writes_partial_results",
}

#: Module fixtures that run a paper's quick reproduction (1-3 minutes), "file::fixture": every
#: test that uses one is long, whichever of them runs first.
LONG_FIXTURES = {
    "test_reproduce.py::quick_run",
    "test_reproduce.py::claims_run",
    "test_reproduce_thesis.py::quick_run",
    "test_reproduce_thesis.py::claims_run",
    "test_reproduce_schedtcp.py::quick_run",
    "test_reproduce_schedtcp.py::claims_run",
}


def is_long(filename: str, function: str, fixtures=()) -> bool:
    return (
        filename in LONG_FILES
        or f"{filename}::{function}" in LONG
        or any(f"{filename}::{f}" in LONG_FIXTURES for f in fixtures)
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        function = getattr(item, "originalname", None) or item.name.split("[")[0]
        if is_long(item.path.name, function, getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.long)
