"""docs/api.md is what `python -m fctlab.apidoc` prints, and every public function and class
of the documented modules has a docstring."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fctlab import apidoc

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_reference_is_up_to_date():
    # A fresh process: the signatures must not depend on what this one imported first.
    got = subprocess.run([sys.executable, "-m", "fctlab.apidoc"], capture_output=True, text=True, check=True).stdout
    want = (ROOT / "docs" / "api.md").read_text()
    assert got == want, "docs/api.md is stale: run `.venv/bin/python -m fctlab.apidoc > docs/api.md`"


def test_every_public_function_and_class_has_a_docstring():
    assert apidoc.undocumented() == []
    text = (ROOT / "docs" / "api.md").read_text()
    for entry in ("### `run(", "### `sweep(", "### `query(", "### class `RunResult`", "### `recv("):
        assert entry in text, entry
