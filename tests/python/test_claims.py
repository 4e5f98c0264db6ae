"""The claims ledger (fctlab.reproduce.claims): the claims of the papers' expected.toml are
validated against their rows, their status follows the graded rows, and docs/claims.md is
rendered from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fctlab.reproduce import claims as C
from fctlab.reproduce import main_reproduce
from fctlab.reproduce.verdicts import DIRECTION, MATCH, NO_MATCH, NOT_GRADED

ROWS = """
[paper]
name = "toy"
title = "A toy paper"

[[rows]]
id = "item1.a"
item = 1
quantity = "a"
rule = "value"
value = 2.0

[[rows]]
id = "item1.b"
item = 1
quantity = "b"
rule = "change"
change = -0.3

[[rows]]
id = "item1.list"
item = 1
quantity = "all"
rule = "list"
shown = "1 / 2"

[[rows]]
id = "item1.nm"
item = 1
quantity = "not simulated"
rule = "not_measured"
shown = "-10%"
reason = "no model"
"""

GOOD = """
[[claims]]
id = "by_rows"
claim = "A is two and B falls."
section = "Section 1, Figure 2"
rows = ["item1.a", "item1.b"]
evidence = "The mechanism, shown by test_x."

[[claims]]
id = "trace"
claim = "A trace says so."
section = "Table 1"
status = "not reproducible here"
reason = "the trace is not public"

[[claims]]
id = "later"
claim = "Something to run."
section = "Section 2"
status = "not yet run"
reason = "item 9 will run it"
planned_rows = ["item9.something"]
"""


def toml(tmp_path: Path, claims: str) -> Path:
    p = tmp_path / "expected.toml"
    p.write_text(ROWS + claims)
    return p


def claim_toml(**kw) -> str:
    """One [[claims]] table (JSON's strings and lists are TOML's)."""
    body = {"id": "c1", "claim": "It holds.", "section": "Section 3", **kw}
    return "\n[[claims]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in body.items())


def error(tmp_path: Path, text: str) -> str:
    p = toml(tmp_path, text)
    with pytest.raises(C.ClaimsError) as e:
        C.load(p)
    msg = str(e.value)
    assert msg.startswith(str(p)), msg
    return msg


# --------------------------------------------------------------------------- validation


def test_good_claims_load(tmp_path):
    cs = C.load(toml(tmp_path, GOOD))
    assert [c.id for c in cs] == ["by_rows", "trace", "later"]
    assert cs[0].rows == ("item1.a", "item1.b") and cs[0].status == ""
    assert cs[2].planned_rows == ("item9.something",)


def test_a_claim_without_status_or_rows_is_named(tmp_path):
    msg = error(tmp_path, claim_toml(id="orphan"))
    assert "claim orphan" in msg and "`rows`" in msg and "`status`" in msg


def test_not_reproduced_without_evidence_fails(tmp_path):
    msg = error(tmp_path, claim_toml(id="bare", status="not reproduced", reason="it differs"))
    assert "claim bare" in msg and "`evidence`" in msg


def test_a_claim_decided_by_rows_needs_evidence(tmp_path):
    msg = error(tmp_path, claim_toml(id="rowsonly", rows=["item1.a"]))
    assert "claim rowsonly" in msg and "`evidence`" in msg


def test_rows_that_do_not_exist_fail(tmp_path):
    msg = error(tmp_path, claim_toml(id="ghost", rows=["item1.a", "item7.nothing"], evidence="e"))
    assert "claim ghost" in msg and "'item7.nothing'" in msg


@pytest.mark.parametrize("rid", ["item1.list", "item1.nm"])
def test_rows_no_verdict_grades_cannot_decide(tmp_path, rid):
    msg = error(tmp_path, claim_toml(id="ungradable", rows=[rid], evidence="e"))
    assert "claim ungradable" in msg and rid in msg


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"status": "maybe", "reason": "r"}, "is not one of"),
        ({"status": "not reproducible here"}, "needs a `reason`"),
        ({"status": "not yet run", "reason": "r"}, "needs `planned_rows`"),
        ({"status": "not yet run", "reason": "r", "planned_rows": ["later"]}, "itemN.name"),
        ({"status": "reproduced", "reason": "r", "planned_rows": ["item2.x"]}, "`planned_rows` belong"),
        ({"rows": ["item1.a"], "status": "reproduced", "reason": "r", "evidence": "e"}, "both"),
        ({"status": "reproduced", "reason": "r", "rowz": ["item1.a"]}, "unknown key `rowz`"),
        ({"section": "", "status": "reproduced", "reason": "r"}, "missing `section`"),
        ({"rows": ["item1.a", "item1.a"], "evidence": "e"}, "repeats"),
    ],
)
def test_malformed_claims_are_named(tmp_path, kw, words):
    msg = error(tmp_path, claim_toml(id="bad", **kw))
    assert "claim bad" in msg and words in msg, msg


def test_repeated_ids_fail(tmp_path):
    twice = claim_toml(id="dup", status="reproduced", reason="test_y") * 2
    assert "claim dup: repeated id" in error(tmp_path, twice)


def test_a_file_without_claims_fails(tmp_path):
    assert "no [[claims]]" in error(tmp_path, "")


# --------------------------------------------------------------------------- status


def graded(verdict, fctlab="1.9", ns2="", kernel="", profiles=None):
    return {"verdict": verdict, "fctlab": fctlab, "ns2": ns2, "kernel": kernel, "profiles": profiles or {}}


@pytest.fixture
def by_rows(tmp_path):
    return C.load(toml(tmp_path, GOOD))[0]


def test_every_row_matching_is_reproduced(by_rows):
    o = C.decide(by_rows, {"item1.a": graded(MATCH, "1.95 ± 0.1"), "item1.b": graded(MATCH, "-25%", ns2="-20%")})
    assert o.status == C.REPRODUCED
    assert o.fctlab == "item1.a: 1.95 ± 0.1; item1.b: -25%" and o.ns2 == "item1.b: -20%"


def test_one_direction_is_not_reproduced_with_the_evidence(by_rows):
    o = C.decide(by_rows, {"item1.a": graded(MATCH), "item1.b": graded(DIRECTION)})
    assert o.status == C.NOT_REPRODUCED and o.note == by_rows.evidence
    o = C.decide(by_rows, {"item1.a": graded(NO_MATCH), "item1.b": graded(MATCH)})
    assert o.status == C.NOT_REPRODUCED


def test_a_missing_row_is_not_yet_run(by_rows):
    o = C.decide(by_rows, {"item1.a": graded(MATCH)})
    assert o.status == C.NOT_YET_RUN and "item1.b" in o.note
    assert C.decide(by_rows, {}).status == C.NOT_YET_RUN


def test_a_row_stored_but_not_graded_is_not_yet_run(by_rows):
    o = C.decide(by_rows, {"item1.a": graded(MATCH), "item1.b": graded(NOT_GRADED)})
    assert o.status == C.NOT_YET_RUN and "item1.b" in o.note


def test_the_primary_profile_decides(by_rows):
    rows = {
        "item1.a": graded(
            MATCH, profiles={"ns2": {"fctlab": "1.7", "verdict": DIRECTION}, "linux": {"verdict": MATCH}}
        ),
        "item1.b": graded(MATCH),
    }
    ns2 = C.decide(by_rows, rows, primary="ns2")
    assert ns2.status == C.NOT_REPRODUCED and ns2.fctlab == "item1.a: 1.7; item1.b: 1.9"
    linux = C.decide(by_rows, rows, primary="linux")
    assert linux.status == C.REPRODUCED and linux.fctlab == "item1.a: 1.9; item1.b: 1.9"


def test_explicit_statuses_keep_their_reason(tmp_path):
    cs = C.load(toml(tmp_path, GOOD))
    assert [(C.decide(c, {}).status, C.decide(c, {}).note) for c in cs[1:]] == [
        (C.NOT_REPRODUCIBLE, "the trace is not public"),
        (C.NOT_YET_RUN, "item 9 will run it"),
    ]
    nr = C.load(toml(tmp_path, claim_toml(status="not reproduced", reason="r", evidence="the mechanism")))[0]
    assert C.decide(nr, {}).note == "the mechanism"


# --------------------------------------------------------------------------- the papers' files

#: Claims each paper's file must have: its main results and the ones no item runs yet.
REQUIRED = {
    "atcp": [
        "theorem1",
        "theorem1.figure",
        "theorem2",
        "two_flow_numbers",
        "large_not_influenced",
        "medium_best_case",
        "small_at_most_15",
        "ratio_trend",
        "sum_trend",
        "chain_deadline",
        "dense_small",
        "dense_medium",
        "disjoint",
        "tree_web",
        "fattree_small",
        "fattree_medium",
        "fattree_deadline",
        "mapreduce_leftmost",
        "mapreduce_mean",
        "mapreduce_shuffle",
        # not run by the current items
        "motivating_web",
        "weight_shape",
        "sum_oscillation",
        "disjoint_large_chain_better",
        "comparable_d3",
        "mapreduce_job",
        "theorem1_other_ratios",
    ],
    "thesis": [
        "sdc.long_flows",
        "sdc.multihop",
        "sdc.incast_loss",
        "sdc.mix_afct",
        "sdc.mix_util",
        "sdc.benchmark",
        "model.gain_ac",
        "model.gain_bc",
        "model.threshold",
        "model.beta_b",
        "racs.long_flows",
        "rcp.low_few",
        "racs.multihop",
        "racs.incast_loss",
        "racs.incast_afct",
        "racs.mix_afct",
        "racs.benchmark_flat",
        "rcp.benchmark_grows",
        "racs.long_degrade",
        "racs.done_10ms",
        # not run by the current items
        "sdc.incast_afct",
        "sdc.mix_queues",
        "racs.mix_queues",
        "model.diminishing",
        "model.fair_at_one",
        "model.b_costs_a",
        "model.class_c_and_flows",
        "model.eq315",
        "racs.below_1mb",
        "racs.app_throughput",
        "sdc.more_classes",
        "racs.convergence",
        "sdc.gamma",
        "sdc.multihop_reading",
    ],
    "schedtcp": [
        "prop1.if",
        "nonintrusive",
        "prop2.srpt",
        "prop2.fair",
        "corollary1",
        "table2_size_aware_faster",
        "table2_few_slower",
        "table2_las",
        "table2_gain_loss",
        "send_buffers_gain",
        "fig7_active",
        "fig8_any_duration",
        "fig8_las_long",
        "fig9_dispersion",
        "table1_schedulable",
        # not run by the current items
        "mu_rule",
        "prop1.only_if",
        "fig7_distribution",
        "any_tcp_version",
    ],
}


@pytest.mark.parametrize("paper", C.PAPERS)
def test_every_claim_of_the_papers_validates(paper):
    cs = C.load(C.default_path(paper))
    assert len({c.id for c in cs}) == len(cs)


@pytest.mark.parametrize("paper", C.PAPERS)
def test_each_paper_has_its_claims(paper):
    ids = {c.id for c in C.load(C.default_path(paper))}
    missing = [cid for cid in REQUIRED[paper] if cid not in ids]
    assert not missing, f"{paper}: no claim {', '.join(missing)}"


def test_the_claims_end_each_file():
    """The claims come after every row and item, so that edits to the rows merge cleanly."""
    for paper in C.PAPERS:
        text = C.default_path(paper).read_text()
        first = text.index("[[claims]]")
        assert "[[rows]]" not in text[first:] and "[items." not in text[first:], paper


# --------------------------------------------------------------------------- the ledger


def fake_graded(paper):
    return {"item1.a": graded(MATCH, "2.0 ± 0.1", ns2="1.9", kernel="2.1"), "item1.b": graded(DIRECTION, "-5%")}


def render_toy(tmp_path, papers=("atcp",), **kw):
    p = toml(tmp_path, GOOD)
    return C.render(graded=fake_graded, primary=lambda paper: "ns2", papers=papers, path_of=lambda paper: p, **kw)


def test_the_ledger_has_counts_and_a_table(tmp_path):
    text, out = render_toy(tmp_path, papers=("atcp", "schedtcp"))
    assert "generated by `fctlab reproduce --claims`, do not edit" in text.splitlines()[0]
    assert text.count("## A toy paper") == 2
    line = "3 claims: 0 reproduced, 1 not reproduced, 1 not reproducible here, 1 not yet run"
    assert text.count(line) == 2 and C.count_line(out["atcp"]) == line
    atcp, sched = text.split("## A toy paper")[1:]
    assert "| claim | section | status | fctlab (ns2) | ns-2.35 | kernel | evidence or reason |" in atcp
    assert "ns-2.35" not in sched  # the paper did not use ns-2
    row = next(r for r in atcp.splitlines() if r.startswith("| A is two"))
    assert "**not reproduced**" in row and "item1.a: 2.0 ± 0.1; item1.b: -5%" in row
    assert "item1.a: 1.9" in row and "item1.a: 2.1" in row and row.endswith("The mechanism, shown by test_x. |")


def test_pipes_in_cells_are_escaped(tmp_path):
    p = toml(tmp_path, claim_toml(claim="A | B", status="reproduced", reason="r"))
    text, _ = C.render(graded=fake_graded, primary=lambda paper: None, papers=("atcp",), path_of=lambda paper: p)
    assert "| A \\| B |" in text


def test_is_current_says_whether_the_file_is_what_render_makes(tmp_path):
    ledger = tmp_path / "claims.md"
    kw = dict(
        graded=fake_graded, primary=lambda paper: "ns2", papers=("atcp",), path_of=lambda paper: toml(tmp_path, GOOD)
    )
    assert not C.is_current(ledger, **kw)
    ledger.write_text(C.render(**kw)[0])
    assert C.is_current(ledger, **kw)
    ledger.write_text(ledger.read_text().replace("not yet run", "reproduced", 1))
    assert not C.is_current(ledger, **kw)


def test_cli_writes_the_ledger_and_checks_it(tmp_path, capsys):
    ledger = tmp_path / "claims.md"
    assert main_reproduce(["--claims", "--out", str(ledger)]) == 0
    out = capsys.readouterr().out
    for paper in C.PAPERS:
        assert f"{paper}: " in out and " claims: " in out
    assert ledger.read_text().startswith(C.LEDGER_HEADER)
    assert main_reproduce(["--claims", "--check", "--out", str(ledger)]) == 0
    ledger.write_text(ledger.read_text() + "edited\n")
    assert main_reproduce(["--claims", "--check", "--out", str(ledger)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not what `fctlab reproduce --claims` writes now" in err[0]


def test_cli_prints_one_papers_section(capsys):
    assert main_reproduce(["schedtcp", "--claims"]) == 0
    out = capsys.readouterr().out
    assert "## Non-intrusive scheduling of TCP flows (SCHED_TCP)" in out and "## Adaptive TCP" not in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--check"],
        ["--claims", "pfabric"],
        ["--claims", "--quick"],
        ["--claims", "--items", "1"],
        ["atcp", "--claims", "--check"],
    ],
)
def test_bad_claims_arguments_exit_2_with_one_line(argv, capsys):
    assert main_reproduce(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fctlab reproduce: error:")


def test_a_bad_claim_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    p = toml(tmp_path, claim_toml(id="orphan"))
    monkeypatch.setattr(C, "default_path", lambda paper: p)
    assert main_reproduce(["--claims", "--out", str(tmp_path / "c.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "claim orphan" in err[0]
