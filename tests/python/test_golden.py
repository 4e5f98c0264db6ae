"""Golden snapshot: every shipped scenario gives the same flows and links tables (and the same
queue and cwnd samples) as when the snapshot was recorded.

The snapshot lives in ``tests/golden/``: one CSV per table for flows and links (exact values:
floats as Python's round-trip repr), one SHA-256 per sampled table (queues, cwnd). A change of
behaviour re-records it in the same commit and says why::

    FCTLAB_GOLDEN_RECORD=1 .venv/bin/python -m pytest -q tests/python/test_golden.py
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import tomllib
from pathlib import Path

import pytest

import fctlab

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
RECORD = os.environ.get("FCTLAB_GOLDEN_RECORD") == "1"

SIZE_AWARE = ("tcp", "dctcp", "atcp", "srpt", "las", "rcp", "racs", "sdc", "pfabric", "pias", "homa")
# Scenarios whose full run is too long for the suite get a shorter stop time here.
OVERRIDES = {
    "python/fctlab/benchmarks/dumbbell8_10g.toml": ["stop_time=20ms"],
    "python/fctlab/benchmarks/fattree_k8.toml": ["stop_time=3ms"],
    "python/fctlab/benchmarks/fattree_k16_dctcp.toml": ["network.k=4", "stop_time=3ms"],
    "python/fctlab/benchmarks/rcp_dumbbell.toml": ["stop_time=20ms"],
    "python/fctlab/benchmarks/homa_websearch.toml": ["workloads.0.count=100"],
    # the thesis's long runs, shortened to keep the snapshots small
    "scenarios/papers/thesis/incast.toml": ["workloads.0.rounds=20"],
    "scenarios/papers/thesis/benchmark.toml": ["workloads.0.until=300ms", "stop_time=400ms"],
    "scenarios/papers/thesis/class_mix.toml": [f"workloads.{k}.rounds=3" for k in range(20)],
    # the HPCC paper's 320-host fabric, on a few of its flows
    "scenarios/papers/hpcc/fabric.toml": ["workloads.0.count=200"],
    # the NDP paper's 432-host FatTree, as a 16-host one for a short while
    "scenarios/papers/ndp/permutation.toml": ["network.k=4", "stop_time=2ms"],
    # the size-aware comparison's scenarios (one per protocol, 1,000 flows each), on fewer flows
    **{f"scenarios/size_aware/{p}.toml": ["workloads.0.count=300"] for p in SIZE_AWARE},
}


def scenario_files():
    # expected.toml files hold a paper's published numbers, and sweep files (a `base` key)
    # vary a scenario: neither is a scenario
    files = sorted(
        f
        for f in (ROOT / "scenarios").rglob("*.toml")
        if f.name != "expected.toml" and "base" not in tomllib.loads(f.read_text())
    )
    files += sorted((ROOT / "python" / "fctlab" / "benchmarks").glob("*.toml"))
    return [f.relative_to(ROOT).as_posix() for f in files]


#: Columns added to a results table after its first snapshots, by table: the column that
#: names a row, and the added ones. They are kept in a snapshot of their own (`.flows_added.csv`,
#: `.links_added.csv`), so that the first snapshots, which stored paper runs are checked
#: against (fctlab.reproduce.stored), stay byte-identical where behaviour did not change.
ADDED_COLUMNS = {
    "flows": ("flow_id", ("out_of_order_packets", "spurious_retransmits")),
    "links": ("link_id", ("trimmed_packets",)),
}


def snapshot_name(rel: str) -> str:
    return rel.removesuffix(".toml").replace("/", "__")


def canonical_csv(table) -> str:
    """A table as CSV text with exact values: None as empty, floats as round-trip repr."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(table.column_names)
    cols = [table.column(c).to_pylist() for c in table.column_names]
    for row in zip(*cols):
        w.writerow(["" if v is None else repr(v) if isinstance(v, float) else str(v) for v in row])
    return out.getvalue()


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_scenario_is_in_the_snapshot():
    if RECORD:
        pytest.skip("recording")
    recorded = {p.name.split(".")[0] for p in GOLDEN.glob("*.csv")}
    missing = [f for f in scenario_files() if snapshot_name(f) not in recorded]
    assert not missing, f"scenarios without a golden snapshot (record them): {missing}"


@pytest.mark.parametrize("rel", scenario_files())
def test_same_results_as_the_snapshot(rel):
    res = fctlab.run(ROOT / rel, set=OVERRIDES.get(rel, []))
    name = snapshot_name(rel)
    tables = {}
    for k, table in (("flows", res.flows_table), ("links", res.links_table)):
        key, added = ADDED_COLUMNS[k]
        tables[k] = canonical_csv(table.drop_columns(list(added)))
        tables[f"{k}_added"] = canonical_csv(table.select([key, *added]))
    digests = {}
    if res.queues_table is not None:
        digests["queues"] = sha256(canonical_csv(res.queues_table))
    if res.cwnd_table is not None:
        digests["cwnd"] = sha256(canonical_csv(res.cwnd_table))
    digest_text = "".join(f"{k} {v}\n" for k, v in sorted(digests.items()))
    if RECORD:
        for k, text in tables.items():
            (GOLDEN / f"{name}.{k}.csv").write_text(text)
        (GOLDEN / f"{name}.samples.txt").write_text(digest_text)
        return
    for k, text in tables.items():
        expected = (GOLDEN / f"{name}.{k}.csv").read_text()
        if text != expected:
            got, want = text.splitlines(), expected.splitlines()
            diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            header = want[0] if want else ""
            pytest.fail(
                f"{rel}: {k} table differs from tests/golden/{name}.{k}.csv at line {diff + 1}\n"
                f"  columns:  {header}\n  expected: {want[diff] if diff < len(want) else '<end>'}\n"
                f"  got:      {got[diff] if diff < len(got) else '<end>'}"
            )
    assert digest_text == (GOLDEN / f"{name}.samples.txt").read_text(), (
        f"{rel}: sampled queue/cwnd tables differ from the snapshot"
    )
