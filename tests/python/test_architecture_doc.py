"""docs/architecture.md's "Where to add ..." names files that exist: every path in backquotes
there is a file or folder of the repository, so that its recipes stay true as files move.

A path is a backquoted word with a `/` or a file name with a source extension. A placeholder
(`<paper>`, or an all-capitals word such as `NAME` where the literal path does not exist) and a
`*` make it a pattern, which must match at least one file. A path whose first folder is not one
at the repository's root is relative to where the text is (`cc/fixed_window.rs`,
`testbed/runner.py`): it must be the end of a path in the repository. Files that runs write
(`summary.json`, a reproduction's `report.md`) are not the repository's.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Where to add"
EXTENSIONS = {"rs", "py", "md", "toml", "txt", "csv", "c", "h", "sh", "cdf", "json", "html"}
#: what a run or a reproduction writes into its output directory
RUN_OUTPUTS = {"summary.json", "report.md", "report.html", "results.json"}


def section(text: str) -> str:
    """The text of the "Where to add ..." section, up to the next `## ` heading."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : None if end < 0 else end]


def named_paths(text: str) -> list:
    """The paths named in backquotes in `text`, in order, once each."""
    out = []
    for span in re.findall(r"`([^`\n]+)`", text):
        if " " in span or span in RUN_OUTPUTS or span in out:
            continue
        ext = re.search(r"[\w*>]\.([A-Za-z]+)$", span)
        if "/" in span or (ext and ext.group(1) in EXTENSIONS):
            out.append(span)
    return out


def exists(path: str) -> bool:
    """Whether `path` (as the doc writes it) names something in the repository."""
    literal = path.rstrip("/")
    pattern = re.sub(r"<[^>]*>", "*", literal)
    if pattern == literal and not (ROOT / literal).exists():
        pattern = re.sub(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9]+(?![A-Za-z0-9])", "*", literal)
    if not (ROOT / literal.split("/")[0].split("*")[0]).exists() or "/" not in literal:
        pattern = "**/" + pattern  # relative to the text around it
    if "*" not in pattern:
        return (ROOT / pattern).exists()
    return any(p for p in ROOT.glob(pattern) if ".git" not in p.parts and "target" not in p.parts)


def test_every_path_where_to_add_things_names_exists():
    paths = named_paths(section(DOC.read_text()))
    assert len(paths) > 30, paths  # the section is found and read
    missing = [p for p in paths if not exists(p)]
    assert not missing, f'paths named in docs/architecture.md, "Where to add ...", that do not exist: {missing}'


def test_the_check_sees_a_missing_path_and_placeholders():
    text = (
        "## Where to add ...\n`crates/net/src/port.rs`, `crates/net/src/nothing.rs`, `cc/<name>.rs`,\n"
        "`docs/reproduce_NAME.md`, `self.rng`, `summary.json`, `a b.rs`, `priority.rs`\n## Next\n`gone.rs`\n"
    )
    paths = named_paths(section(text))
    assert paths == [
        "crates/net/src/port.rs",
        "crates/net/src/nothing.rs",
        "cc/<name>.rs",
        "docs/reproduce_NAME.md",
        "priority.rs",
    ]
    assert [p for p in paths if not exists(p)] == ["crates/net/src/nothing.rs"]
    assert not exists("kernel/<p>_nothing.bpf.c") and exists("kernel/<p>_port.bpf.c")
