"""docs/scenarios.md lists every key of `[transport]` and `[monitor]` that the parser takes, and
no other: adding a setting is its field in the parser and its row in the docs, and this test
says when one is missing."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import fctlab
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


def rows(section: str, after: str | None = None) -> list[list[str]]:
    """The cells of the rows of the first table in `section` (after the line containing
    `after`, if given) whose first cell is a key."""
    text = DOC.read_text()
    start = text.index(section)
    if after:
        start = text.index(after, start)
    out = []
    for line in text[start:].splitlines()[1:]:
        if out and not line.startswith("|"):
            break
        if line.startswith("| `"):
            out.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
    return out


def first_literal(cell: str):
    """The first backticked TOML value of a cell (`"1460B"`, `10`, `true`), or None."""
    m = re.search(r"`([^`]+)`", cell)
    if not m:
        return None
    try:
        return tomllib.loads(f"v = {m.group(1)}")["v"]
    except tomllib.TOMLDecodeError:
        return None


BASE = {
    "network": {"topology": "dumbbell", "senders": 1, "receivers": 1, "link_rate": "1Gbps", "link_delay": "1us"},
    "flows": [{"src": "s0", "dst": "r0", "size": "10KB"}],
}


def settings(transport: dict) -> dict:
    t = fctlab.validate({**BASE, "transport": transport})["transport"]
    return {k: v for k, v in t.items() if k != "protocols"}


def test_the_documented_defaults_are_the_configurations():
    """Each TCP setting's default in the `[transport]` table and its two values in the ns2
    profile's table are what the configuration holds: writing the documented value gives the
    same resolved settings as leaving the key out."""
    tcp_keys = set(_core.table_keys()["transport"]) - {
        "protocol", "kind", "profile", "scheduler", "send_buffer", "priority_tags", "priority_then",
    }  # fmt: skip
    linux, ns2 = settings({}), settings({"profile": "ns2"})
    checked = set()
    for key, default, _ in (r[:3] for r in rows("## `[transport]`")):
        key = key.strip("`")
        value = first_literal(default)
        if key in tcp_keys and value is not None:
            assert settings({key: value}) == linux, f"docs give {key} = {value!r} as the default"
            checked.add(key)
    for key, ns2_value, _, linux_value in rows("## `[transport]`", after="**The `ns2` profile.**"):
        key = key.strip("`")
        assert key in tcp_keys, key
        for profile, cell, expected in (("ns2", ns2_value, ns2), ("linux", linux_value, linux)):
            value = first_literal(cell)
            if value is not None:
                assert settings({"profile": profile, key: value}) == expected, f"{profile} {key} = {value!r}"
                checked.add(key)
    # Only the unlimited initial ssthresh is written in words.
    assert tcp_keys - checked == set(), sorted(tcp_keys - checked)
