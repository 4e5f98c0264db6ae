"""Golden error messages: systematic mistakes in every shipped scenario (a key misspelt, a key
of another table or kind, a value of the wrong type or unit, a required key removed) give the
same one-line message as when the snapshot was recorded. Guards the wording of errors when the
schema code changes; re-record deliberately with FCTLAB_GOLDEN_RECORD=1."""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest

from fctlab import _core

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "errors.txt"
RECORD = os.environ.get("FCTLAB_GOLDEN_RECORD") == "1"

#: Keys that belong to some table or kind, inserted where they do not belong.
FOREIGN = [
    "hosts",
    "k",
    "senders",
    "bottleneck_rate",
    "ecn_threshold",
    "red_max_p",
    "client",
    "rounds",
    "load",
    "block_size",
    "file",
    "weight",
    "dctcp_g",
    "nodes",
    "cwnd_interval",
]
#: Values of the wrong type or unit.
BAD_VALUES = ['"fast"', "-3", "1.5", "true", '"10Mb"', '"1Gbs"', "[1, 2]", "{ a = 1 }", '""']


def scenario_files():
    # expected.toml files hold a paper's published numbers, and sweep files (a `base` key)
    # vary a scenario: neither is a scenario
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "scenarios").rglob("*.toml")
        if p.name != "expected.toml" and "base" not in tomllib.loads(p.read_text())
    )


def mutations(rel: str):
    """(label, override list) pairs for one scenario."""
    data = tomllib.loads((ROOT / rel).read_text())
    tables = [
        ("network", data.get("network", {})),
        ("transport", data.get("transport", {})),
        ("monitor", data.get("monitor", {})),
    ]
    for i, w in enumerate(data.get("workloads", [])):
        tables.append((f"workloads.{i}", w))
    for i, f in enumerate(data.get("flows", [])[:2]):
        tables.append((f"flows.{i}", f))
    out = []
    for prefix, table in tables:
        for key in list(table)[:12]:
            out.append((f"{prefix}.{key} misspelt", [f"{prefix}.{key}x=1"]))
            for v in BAD_VALUES[:5] if key not in ("topology", "kind") else BAD_VALUES:
                out.append((f"{prefix}.{key}={v}", [f"{prefix}.{key}={v}"]))
        for key in FOREIGN:
            if key not in table:
                out.append((f"{prefix}.{key} foreign", [f"{prefix}.{key}=2"]))
    for topo in ["star", "dumbbell", "chain", "tree", "fattree", "leafspine", "custom", "ring"]:
        out.append((f"topology={topo}", [f'network.topology="{topo}"']))
    for kind in ["poisson", "incast", "partition_aggregate", "permutation", "shuffle", "long_lived", "trace", "storm"]:
        if data.get("workloads"):
            out.append((f"kind={kind}", [f'workloads.0.kind="{kind}"']))
    for q in ["droptail", "ecn", "red", "codel"]:
        out.append((f"queue={q}", [f'network.queue="{q}"']))
    for p in ["tcp", "dctcp", "atcp", "cubic"]:
        out.append((f"protocol={p}", [f'transport.protocol="{p}"']))
    return out


def messages():
    """Every mutation's message, grouped: the scenario files numbered first, then one line per
    distinct (mutation, message) with the scenarios that give it (a scenario's own path in its
    message shown as <scenario>), so that the many scenarios sharing a message store it once."""
    files = scenario_files()
    groups: dict = {}
    for n, rel in enumerate(files):
        text = (ROOT / rel).read_text()
        for label, ov in mutations(rel):
            try:
                _core.validate(text, rel, "toml", ov)
                msg = "ok"
            except _core.ScenarioError as e:
                msg = str(e).replace(rel, "<scenario>")
            groups.setdefault((label, msg), []).append(n)
    lines = ["# scenarios"] + [f"{n} {rel}" for n, rel in enumerate(files)]
    lines.append("# mutation | message | scenarios")
    lines += [f"{label} | {msg} | {_ranges(ns)}" for (label, msg), ns in groups.items()]
    return lines


def _ranges(ns: list) -> str:
    """1,2,3,5 -> "1-3,5"."""
    out, start = [], ns[0]
    for a, b in zip(ns, ns[1:] + [None]):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ",".join(out)


def test_error_messages_are_unchanged():
    got = messages()
    if RECORD:
        GOLDEN.write_text("\n".join(got) + "\n")
        pytest.skip("recorded")
    want = GOLDEN.read_text().splitlines()
    diff = [(w, g) for w, g in zip(want, got) if w != g]
    assert len(got) == len(want) and not diff, (
        "\n".join(f"- {w}\n+ {g}" for w, g in diff[:20]) or f"{len(want)} lines recorded, {len(got)} now"
    )


def test_ranges():
    assert _ranges([0]) == "0"
    assert _ranges([1, 2, 3, 5, 7, 8]) == "1-3,5,7-8"
