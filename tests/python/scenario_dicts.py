"""Scenario dicts for the tests: a base scenario with some tables changed."""

from __future__ import annotations


def merged(sc: dict, extra: dict) -> dict:
    """`sc` with `extra`'s tables merged in (a dict updates the table; any other value replaces it)."""
    for table, values in extra.items():
        if isinstance(values, dict):
            sc.setdefault(table, {}).update(values)
        else:
            sc[table] = values
    return sc
