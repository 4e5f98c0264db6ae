"""docs/scenarios.md lists every key of `[transport]` and `[monitor]` that the parser takes, and
no other: adding a setting is its field in the parser and its row in the docs, and this test
says when one is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fctlab import _core

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def documented(table: str) -> set:
    """The keys in the first column of the tables of section "## `[table]`" (a row may name
    several keys: `pcap_from`, `pcap_until`)."""
    text = DOC.read_text()
    start = text.index(f"## `[{table}]`")
    end = text.find("\n## ", start + 1)
    keys = set()
    for line in text[start:end].splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            keys |= set(re.findall(r"`([a-z_]+)`", first))
    return keys


@pytest.mark.parametrize("table", ["transport", "monitor"])
def test_the_docs_list_every_key_the_parser_takes(table):
    parsed = set(_core.table_keys()[table])
    doc = documented(table)
    assert parsed, table
    assert parsed - doc == set(), f"keys without a row in docs/scenarios.md: {sorted(parsed - doc)}"
    assert doc - parsed == set(), f"rows for keys the parser does not take: {sorted(doc - parsed)}"
