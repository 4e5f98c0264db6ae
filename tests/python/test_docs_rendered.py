"""The reproduction docs are rendered from their sources (docs/src) and the stored full runs
(docs/results): `make docs` writes them, and this test fails when a doc is not what they
render, or when a stored run was made under another behaviour than today's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fctlab.reproduce import PAPERS, stored
from fctlab.reproduce.docs import RenderError, render, render_all, sources

ROOT = Path(__file__).resolve().parents[2]


def test_every_reproduction_doc_is_its_rendering_from_current_stored_runs():
    problems = render_all(ROOT, check=True)
    assert not problems, "run `make docs` (or the stored runs again):\n" + "\n".join(problems)


def test_the_claims_ledger_is_what_the_stored_runs_make():
    from fctlab.reproduce import claims

    assert claims.is_current(claims.ledger_path()), "docs/claims.md is stale: run `fctlab reproduce --claims`"


def test_every_paper_has_a_doc_source_and_stored_results():
    have = {paper for paper, _, _ in sources(ROOT)}
    assert have == set(PAPERS)
    for paper in PAPERS:
        assert stored.load(paper, ROOT)["items"], f"{paper}: no stored full run"


def _tree(tmp_path: Path) -> Path:
    """A source tree holding what the homa doc renders from."""
    root = tmp_path / "tree"
    for rel in ("docs/src/reproduce_homa.md", "docs/results/homa.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, root / rel)
    shutil.copytree(ROOT / "scenarios" / "papers" / "homa", root / "scenarios" / "papers" / "homa")
    shutil.copytree(ROOT / "tests" / "golden", root / "tests" / "golden")
    return root


def test_the_check_fails_on_a_changed_number_and_on_a_changed_behaviour(tmp_path):
    root = _tree(tmp_path)
    assert render_all(root) == []  # writes docs/reproduce_homa.md
    assert render_all(root, check=True) == []
    # a number of a stored run changes: the doc no longer is its rendering
    p = root / "docs" / "results" / "homa.json"
    data = json.loads(p.read_text())
    numbers = data["items"]["1"]["numbers"]["homa"][0]
    numbers["p99"] = numbers["p99"] * 2
    p.write_text(json.dumps(data))
    problems = render_all(root, check=True)
    assert len(problems) == 1 and "reproduce_homa.md: differs" in problems[0]
    assert render_all(root) == [] and render_all(root, check=True) == []  # rendered again: current
    # the simulator's behaviour changes (a golden output): every stored item is stale
    golden = next(f for f in sorted((root / "tests" / "golden").iterdir()) if f.suffix == ".csv")
    golden.write_text(golden.read_text() + "\n")
    problems = render_all(root, check=True)
    assert problems and all("is stale" in x for x in problems)
    assert {int(x.split("item ")[1].split(" ")[0]) for x in problems} == {1, 2, 3}


def test_a_placeholder_that_cannot_be_filled_names_the_file_and_line(tmp_path):
    root = _tree(tmp_path)
    src = root / "docs" / "src" / "bad.md"
    src.write_text("{{runs}}\n\nfine {{made 1}}\n{{row item9.nothing fctlab}}\n")
    with pytest.raises(RenderError, match=r"bad.md:4: \{\{row item9.nothing fctlab\}\}: no stored row"):
        render("homa", src, root)
    src.write_text("no runs line\n")
    with pytest.raises(RenderError, match=r"bad.md: has no \{\{runs\}\}"):
        render("homa", src, root)
    src.write_text("{{runs}} {{table 7}}\n")
    with pytest.raises(RenderError, match=r"item 7 has no stored full run"):
        render("homa", src, root)


def test_a_golden_output_that_moves_unchanged_is_no_change_of_behaviour(tmp_path):
    root = _tree(tmp_path)
    golden = root / "tests" / "golden"
    first = next(f for f in sorted(golden.iterdir()) if f.suffix == ".csv")
    moved = golden / ("moved__" + first.name)
    first.rename(moved)
    assert stored.stale_items("homa", root) == []
    # moved and changed: stale
    moved.write_text(moved.read_text() + "\n")
    stale = stored.stale_items("homa", root)
    assert stale and all(first.name in why for _, why in stale)


def test_a_changed_golden_output_of_protocols_a_paper_does_not_run_leaves_it_current(tmp_path):
    root = _tree(tmp_path)
    for rel in ("scenarios/examples/rdma_websearch.toml", "python/fctlab/benchmarks/homa_websearch.toml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, root / rel)
    golden = root / "tests" / "golden"
    # the RDMA example runs DCQCN on the roce transport over a lossless network; the Homa paper
    # runs Homa, pFabric and PIAS (on TCP), lossy: a change of DCQCN's behaviour, or of lossless
    # ports', says nothing about them
    rdma = golden / "scenarios__examples__rdma_websearch.flows.csv"
    assert stored.golden_vocabulary(str(rdma.relative_to(root)), root) == {"dcqcn", "roce", "pfc"}
    assert "dcqcn" not in stored.paper_vocabulary("homa", root)
    rdma.write_text(rdma.read_text() + "\n")
    assert stored.stale_items("homa", root) == []
    # a golden output of a protocol it runs, changed: stale
    homa = golden / "python__fctlab__benchmarks__homa_websearch.flows.csv"
    homa.write_text(homa.read_text() + "\n")
    stale = stored.stale_items("homa", root)
    assert stale and all(homa.name in why for _, why in stale)


def test_a_lossless_golden_output_counts_only_for_lossless_runs():
    tcp = {"tcp"}
    assert stored._counts_for({"tcp", "pfc"}, tcp | {"pfc", "dcqcn"})
    assert not stored._counts_for({"tcp", "pfc"}, tcp)  # a lossy TCP paper
    assert stored._counts_for({"tcp"}, tcp | {"pfc"})
    assert not stored._counts_for({"homa"}, tcp | {"pfc"})


def test_the_parallel_scaling_table_is_its_rendering_from_the_stored_window_profiles():
    """docs/performance.md's table of the parallel engine's predicted speed-ups is what
    `benches/window_profile.py --markdown` renders from docs/results/window_profile.json."""
    import subprocess
    import sys

    table = subprocess.run(
        [sys.executable, str(ROOT / "benches" / "window_profile.py"), "--markdown"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = json.loads((ROOT / "docs" / "results" / "window_profile.json").read_text())
    assert table.count("\n") == len(rows) + 2
    assert table in (ROOT / "docs" / "performance.md").read_text()
