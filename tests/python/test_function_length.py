"""No function over 120 lines: the limit a reader can hold, checked over the Python package
and the Rust crates. The functions still above it are listed with their lengths: the list may
only shrink (a listed function may not grow, and no other may pass the limit)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120
#: Tighter limits where the code is read most against its specifications: each transport and
#: congestion control reads as a list of its protocol's steps.
STRICT = {"crates/transport/": 80}

#: Functions still over the limit, and their length when listed: to be split.
KNOWN: dict = {}

FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def rust_functions(path: Path):
    """(name, lines) of each function with a body: from its `fn` line to the `}` at the same
    indentation (rustfmt's layout)."""
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        if line.rstrip().endswith("}"):  # a one-line function
            yield m.group(7), 1
            continue
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}":
                yield m.group(7), j - i + 1
                break


def python_functions(path: Path):
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n.name, n.end_lineno - n.lineno + 1


def lengths() -> dict:
    out = {}
    for p in sorted((ROOT / "python" / "fctlab").rglob("*.py")):
        for name, n in python_functions(p):
            key = f"{p.relative_to(ROOT).as_posix()}::{name}"
            out[key] = max(out.get(key, 0), n)
    for p in sorted((ROOT / "crates").rglob("*.rs")):
        for name, n in rust_functions(p):
            key = f"{p.relative_to(ROOT).as_posix()}::{name}"
            out[key] = max(out.get(key, 0), n)
    return out


def test_no_function_passes_the_limit_and_the_known_ones_do_not_grow():
    found = lengths()
    new = {k: n for k, n in found.items() if n > LIMIT and k not in KNOWN}
    assert not new, f"functions over {LIMIT} lines: {new}"
    grown = {k: (found.get(k), n) for k, n in KNOWN.items() if found.get(k, 0) > n}
    assert not grown, f"listed functions that grew (now, listed): {grown}"
    split = [k for k in KNOWN if found.get(k, 0) <= LIMIT]
    assert not split, f"now within the limit (or gone): remove from KNOWN: {split}"


def test_the_transport_crate_keeps_its_functions_short():
    found = lengths()
    for prefix, limit in STRICT.items():
        long = {k: n for k, n in found.items() if k.startswith(prefix) and n > limit}
        assert not long, f"functions over {limit} lines under {prefix}: {long}"


def test_the_measure_sees_long_functions(tmp_path):
    # The measure finds functions in both languages (so the check above is not vacuous).
    found = lengths()
    long_py = tmp_path / "long.py"
    long_py.write_text(
        "def long():\n" + "".join(f"    x{i} = {i}\n" for i in range(130)) + "\n\ndef short():\n    pass\n"
    )
    assert dict(python_functions(long_py)) == {"long": 131, "short": 2}
    body = "".join(f"        let x{i} = {i};\n" for i in range(130))
    long_rs = tmp_path / "long.rs"
    long_rs.write_text(f"impl A {{\n    pub fn long(&self) {{\n{body}    }}\n\n    fn short(&self) {{}}\n}}\n")
    assert dict(rust_functions(long_rs)) == {"long": 132, "short": 1}
    assert 5 < found["crates/net/src/port.rs::enqueue"] < LIMIT
