"""Every entry of conftest.py's `long` list names a test that exists, and `make check` leaves
out exactly the tests marked `long` (as well as `slow` and `benchmark`)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import conftest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _tests_in(path: Path) -> set:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_long_entry_names_a_test():
    for f in conftest.LONG_FILES:
        assert (HERE / f).is_file(), f"conftest.LONG_FILES: {f} does not exist"
    for entry in conftest.LONG:
        f, _, fn = entry.partition("::")
        assert (HERE / f).is_file() and fn in _tests_in(HERE / f), f"conftest.LONG: {entry} names no test"


def test_every_long_fixture_is_a_fixture_of_its_file():
    for entry in conftest.LONG_FIXTURES:
        f, _, fixture = entry.partition("::")
        tree = ast.parse((HERE / f).read_text())
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.decorator_list}
        assert fixture in names, f"conftest.LONG_FIXTURES: {entry} names no fixture"


def test_make_check_deselects_the_long_tests():
    rule = re.search(r"^check:.*?(?=^\S)", (ROOT / "Makefile").read_text() + "\nend", re.M | re.S).group(0)
    assert '-m "not slow and not benchmark and not long"' in rule
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "long", "-p", "no:cacheprovider"]
        + [str(HERE / f) for f in ("test_reproduce.py", "test_golden.py", "test_crosscheck.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    ids = [line for line in p.stdout.splitlines() if "::" in line]
    assert any("test_reproduce.py::test_quick_run_writes_full_report" in i for i in ids)
    assert any("test_reproduce.py::test_quick_run_reproduces_theorem1" in i for i in ids)  # by its fixture
    assert not any("test_golden.py" in i or "test_crosscheck.py" in i for i in ids)
