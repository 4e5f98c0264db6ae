"""docs/results.md documents exactly the columns the core's result schemas define."""

import re
from pathlib import Path

from fctlab import _core
from fctlab.rundir import SUMMARY_KEYS

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def documented_tables():
    """{section: [(name, type text), ...]} from the column tables of docs/results.md."""
    sections, current, in_table = {}, None, False
    for line in DOC.read_text().splitlines():
        m = re.match(r"^## `(\w+)\.(parquet|json)`", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        if line.startswith("## "):
            current = None
        if re.match(r"^\| (column|key) \| type \| definition \|$", line):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
        m = re.match(r"^\| `(\w+)` \| ([^|]+) \|", line)
        if current and in_table and m:
            sections[current].append((m.group(1), m.group(2).strip()))
    return sections


def test_every_column_is_documented_with_its_type():
    docs = documented_tables()
    for table, columns in _core.schemas().items():
        if table == "summary":
            continue
        want = [(name, f"{ty}, nullable" if nullable else ty) for name, ty, nullable in columns]
        assert docs.get(table) == want, f"docs/results.md `{table}.parquet` does not match the core's schema"


def test_every_summary_key_is_documented_with_its_type():
    """docs/results.md lists exactly the keys of the run-directory schema, each with its
    type, and the core's summary keys are among them."""
    names = {"int": "integer", "float": "float", "str": "string", "bool": "bool", "list": "list", "dict": "object"}
    documented = dict(documented_tables()["summary"])
    assert set(documented) == set(SUMMARY_KEYS)
    for k, ty in SUMMARY_KEYS.items():
        assert documented[k].startswith(names[ty]), f"{k}: documented as {documented[k]}, the schema has {ty}"
    assert set(_core.schemas()["summary"]) <= set(SUMMARY_KEYS)


def test_the_check_sees_a_difference():
    # The parser finds the tables (so the comparisons above are not vacuous).
    docs = documented_tables()
    assert {"flows", "links", "queues", "cwnd", "summary"} <= set(docs)
    assert all(len(v) >= 5 for v in docs.values())
