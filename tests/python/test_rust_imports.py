"""The Rust crates' modules use one another without cycles: the rule of test_imports.py on the
Rust side. Each crate under crates/ is a graph of its source files under src/ (a folder's
`mod.rs` is the module of that folder, `lib.rs` or `main.rs` the crate's root); a file uses
another when its code names that module's items:

- a path from the crate's root (`crate::port::Port`, `$crate::...` in a macro),
- a path up from the file (`super::Discipline`: the parent's items),
- a path down from the file (`self::red::Red`, or `red::Red` in the folder's `mod.rs`,
  re-exports `pub use red::Red` included),
- a name brought in by a `use` and followed by a path (`use crate::qdisc; qdisc::red::Red`),

in `use` declarations and in code alike, resolved to the longest module path that is a file (an
inline module is part of its file).

The module tree itself is no loop: a parent's uses of its own descendants (declaring them,
`mod red;`, re-exporting their items, listing them in a registry) are not edges, so that a
folder's mod.rs may hold the trait its files implement and the list of them, and a crate's
lib.rs may re-export what its modules define. A child naming its parent's items is an edge
(child -> parent), and so is every use across the tree: a loop is modules that reach one
another by those. Tests are not part of the graph: items under `#[cfg(test)]`
(`mod tests { ... }`) and files named tests.rs. A binary's main.rs beside lib.rs is a crate of
its own that uses the library by its name: a leaf.

Paths to other crates (`fctlab_net::...`) are not followed: cargo already refuses cycles
between crates.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_imports import cycles

ROOT = Path(__file__).resolve().parents[2]
CRATES = ROOT / "crates"

# ---------------------------------------------------------------------------------------------
# Tokens


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line>//[^\n]*)
  | (?P<block>/\*)
  | (?P<raw>b?r(?P<hashes>\#*)")
  | (?P<str>b?"(?:\\.|[^"\\])*")
  | (?P<char>b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])')
  | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ident>\$?(?:r\#)?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>[0-9][A-Za-z0-9_.]*)
  | (?P<path>::)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(src: str) -> list:
    """The tokens of Rust source `src` that matter here: identifiers (`$crate` one of them,
    raw identifiers without their `r#`), `::` and single punctuation; comments, strings, char
    literals, lifetimes and numbers dropped."""
    out, i = [], 0
    while i < len(src):
        m = _TOKEN.match(src, i)
        kind = m.lastgroup if m.lastgroup != "hashes" else "raw"
        if m.group("block"):
            depth, j = 1, m.end()
            while depth and j < len(src):
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        if m.group("raw") is not None:
            end = src.find('"' + m.group("hashes"), m.end())
            i = len(src) if end < 0 else end + 1 + len(m.group("hashes"))
            continue
        if kind == "ident":
            out.append(m.group().removeprefix("r#"))
        elif kind in ("path", "punct"):
            out.append(m.group())
        i = m.end()
    return out


def _skip_item(toks: list, i: int) -> int:
    """The index just past the item starting at `toks[i]` (after its attributes): its `;` or
    its closing `}`, whichever ends it at its own level."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth == 0 and t == "}":
                return i + 1
            if depth < 0:
                return i
        elif t == ";" and depth == 0:
            return i + 1
        i += 1
    return i


def _attribute_end(toks: list, i: int) -> int:
    """`toks[i]` is `#` of an attribute: the index past its `]`."""
    j = i + 1 + (toks[i + 1] == "!")
    depth = 0
    while j < len(toks):
        depth += {"[": 1, "]": -1}.get(toks[j], 0)
        j += 1
        if depth == 0:
            return j
    return j


def _is_cfg_test(attr: list) -> bool:
    """`attr` is the tokens of one attribute: `#[cfg(test)]` or `#[cfg(all(test, ...))]`."""
    inner = [t for t in attr if t not in ("#", "!", "[", "]")]
    return inner[:4] == ["cfg", "(", "test", ")"] or inner[:5] == ["cfg", "(", "all", "(", "test"]


def without_tests(toks: list) -> tuple:
    """`toks` without the items under `#[cfg(test)]`, and the names of the file modules
    declared under it (`#[cfg(test)] mod tests;`)."""
    out, test_files, i = [], set(), 0
    while i < len(toks):
        if toks[i] == "#" and i + 1 < len(toks) and toks[i + 1] in ("[", "!"):
            end = _attribute_end(toks, i)
            if _is_cfg_test(toks[i:end]):
                if toks[i + 1] == "!":  # the whole file is a test
                    return [], test_files
                while end < len(toks) and toks[end] == "#":  # further attributes of the item
                    end = _attribute_end(toks, end)
                stop = _skip_item(toks, end)
                item = toks[end:stop]
                if "mod" in item and item[-1] == ";":
                    test_files.add(item[item.index("mod") + 1])
                i = stop
                continue
            out.extend(toks[i:end])
            i = end
            continue
        out.append(toks[i])
        i += 1
    return out, test_files


# ---------------------------------------------------------------------------------------------
# Paths


def use_paths(toks: list, i: int) -> tuple:
    """`toks[i]` follows `use`: the paths of the use tree (each a list of segments, `*`
    included, the `self` of `a::{self, b}` resolved to `a`) with the local name each binds
    (None for globs), and the index past its `;`."""
    out = []

    def tree(i: int, prefix: list) -> int:
        path, took = list(prefix), False
        while i < len(toks):
            t = toks[i]
            if t == "{":
                i += 1
                while toks[i] != "}":
                    i = tree(i, path)
                    if toks[i] == ",":
                        i += 1
                return i + 1
            if t == "::":
                i += 1
                continue
            if t == "*":
                out.append((path + ["*"], None))
                return i + 1
            if t in (",", "}", ";"):
                if took and path:
                    out.append((path, path[-1]))
                return i
            if t == "as":
                out.append((path, toks[i + 1]))
                return i + 2
            path, took = (path + [t] if t != "self" or not path else path), True
            i += 1
        return i

    i = tree(i, [])
    while i < len(toks) and toks[i] != ";":
        i += 1
    return out, i + 1


def resolve(path: list, here: tuple, files: dict, aliases: dict) -> tuple | None:
    """The absolute module path that `path` (segments, as written in module `here`) names, or
    None when it leaves the crate."""
    head, rest = path[0], path[1:]
    if head in ("crate", "$crate"):
        return tuple(rest)
    if head in ("super", "self"):
        base = list(here)
        while path and path[0] in ("super", "self"):
            if path[0] == "super":
                if not base:
                    return None
                base.pop()
            path = path[1:]
        return tuple(base + path)
    if here + (head,) in files:  # a child module of the file
        return here + tuple(path)
    if head in aliases:
        return aliases[head] + tuple(rest)
    return None


def module_files(crate: Path) -> dict:
    """Module path (tuple of names from the crate's root) -> its file, for the files of
    crate/src (a binary's root main.rs beside lib.rs is a root of its own: its modules are
    keyed ("<main>", ...))."""
    src = crate / "src"
    out = {}
    for p in sorted(src.rglob("*.rs")):
        rel = p.relative_to(src).with_suffix("").parts
        if rel[-1] == "tests" or "bin" in rel[:1]:
            continue
        if rel == ("lib",):
            out[()] = p
        elif rel == ("main",):
            out[() if not (src / "lib.rs").exists() else ("<main>",)] = p
        elif rel[-1] == "mod":
            out[rel[:-1]] = p
        else:
            out[rel] = p
    return out


def file_modules(crate: Path) -> dict:
    """Like module_files, less the files declared only for tests (`#[cfg(test)] mod x;`)."""
    files = module_files(crate)
    for mod, path in list(files.items()):
        _, test_files = without_tests(tokens(path.read_text()))
        for name in test_files:
            files.pop(mod + (name,), None)
    return files


def uses_of(mod: tuple, files: dict) -> dict:
    """The modules (by path) that module `mod`'s file uses -> the names it uses from each,
    as written (for messages)."""
    if mod == ("<main>",):
        return {}
    toks, _ = without_tests(tokens(files[mod].read_text()))
    here = mod
    inline = []  # (name, brace depth) of the inline modules we are in
    depth = 0
    aliases: dict = {}
    found: list = []  # (absolute path, text)

    def at() -> tuple:
        return here + tuple(n for n, _ in inline)

    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "mod" and i + 2 < len(toks) and toks[i + 2] == "{":
            inline.append((toks[i + 1], depth + 1))
            depth += 1
            i += 3
            continue
        if t == "{":
            depth += 1
        elif t == "}":
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
        elif t == "use" and (i == 0 or toks[i - 1] != "::"):
            paths, i = use_paths(toks, i + 1)
            for p, name in paths:
                target = resolve([s for s in p if s != "*"], at(), files, aliases)
                if target is not None:
                    found.append((target, "::".join(p)))
                    if name is not None and name != "self":
                        aliases[name] = target
            continue
        elif (
            i + 2 < len(toks)
            and toks[i + 1] == "::"
            and (i == 0 or toks[i - 1] != "::")
            and re.fullmatch(r"\$?[A-Za-z_]\w*", t)
        ):
            j, p = i, [t]
            while j + 2 < len(toks) and toks[j + 1] == "::" and re.fullmatch(r"[A-Za-z_]\w*", toks[j + 2]):
                p.append(toks[j + 2])
                j += 2
            target = resolve(p, at(), files, aliases)
            if target is not None:
                found.append((target, "::".join(p)))
            i = j + 1
            continue
        i += 1

    out: dict = {}
    for target, text in found:
        while target and target not in files:
            target = target[:-1]
        if target in files and target[: len(mod)] != mod:  # itself or a descendant: no edge
            out.setdefault(target, set()).add(text)
    return out


def rel(p: Path) -> str:
    """`p` relative to the repository (as it is when outside it)."""
    return p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.as_posix()


def crate_graph(crate: Path) -> tuple:
    """The crate's graph, file -> the files it uses, and the names each edge is over
    ((file, file) -> names)."""
    files = file_modules(crate)
    graph, names = {}, {}
    for mod, path in files.items():
        uses = uses_of(mod, files)
        graph[rel(path)] = {rel(files[m]) for m in uses}
        for m, texts in uses.items():
            names[(rel(path), rel(files[m]))] = texts
    return graph, names


def all_cycles() -> tuple:
    """Every loop of every crate (sorted file lists), and the names of the edges."""
    found, names = [], {}
    for crate in sorted(p for p in CRATES.iterdir() if (p / "Cargo.toml").exists()):
        graph, n = crate_graph(crate)
        found += cycles(graph)
        names.update(n)
    return sorted(found), names


def describe(loop: list, names: dict) -> str:
    """One loop and the uses that close it."""
    lines = [" <-> ".join(loop)]
    for a in loop:
        for b in loop:
            if (a, b) in names:
                lines.append(f"    {a} -> {b}: {', '.join(sorted(names[(a, b)]))}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Tests


def test_no_module_loops_in_the_rust_crates():
    found, names = all_cycles()
    assert not found, (
        "modules that use one another, directly or through a chain (move the shared names "
        "to the module that owns them):\n" + "\n".join(describe(c, names) for c in found)
    )


def test_the_check_sees_paths_and_loops(tmp_path):
    src = tmp_path / "c" / "src"
    (src / "q").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod a;\npub mod q;\npub use q::Q;\n")
    (src / "a.rs").write_text(
        "//! crate::q::Q in a comment is no use\n"
        'use crate::{q::{self, r}, b as _};\nconst S: &str = "super::x";\n'
        "pub fn f() -> q::Q { $crate::q::r::g() }\n"
        "#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { crate::lib_only(); }\n}\n"
    )
    (src / "q" / "mod.rs").write_text(
        "mod r;\n#[cfg(test)]\nmod tests;\npub use r::R;\npub struct Q;\n"
        "pub mod inner {\n    pub fn h() { super::super::a::f(); }\n}\n"
    )
    (src / "q" / "r.rs").write_text("use super::Q;\npub struct R(Q);\n")
    (src / "q" / "tests.rs").write_text("use crate::a::f;\n")
    files = file_modules(tmp_path / "c")
    assert set(files) == {(), ("a",), ("q",), ("q", "r")}
    assert set(uses_of(("a",), files)) == {(), ("q",), ("q", "r")}  # crate::b is the root's
    assert set(uses_of(("q",), files)) == {("a",)}  # its child r is no edge, a is
    assert set(uses_of(("q", "r"), files)) == {("q",)}
    assert set(uses_of((), files)) == set()
    graph, names = crate_graph(tmp_path / "c")
    assert cycles({rel_tmp(k, tmp_path): {rel_tmp(v, tmp_path) for v in vs} for k, vs in graph.items()}) == [
        ["c/src/a.rs", "c/src/q/mod.rs", "c/src/q/r.rs"]
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}) == [["a", "b", "c"]]


def rel_tmp(p: str, tmp_path: Path) -> str:
    return Path(p).relative_to(tmp_path).as_posix() if Path(p).is_absolute() else p
