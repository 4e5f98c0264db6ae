"""The package's modules import one another without cycles, counting the imports inside
functions too (a cycle hidden in a function is still a cycle: the layers would not be layers)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "fctlab"


def modules() -> dict:
    """Module name -> file of every module of the package (the compiled core has no file)."""
    out = {"fctlab._core": None}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports_of(name: str, path: Path, mods: dict) -> set:
    """The package's modules that module `name` imports anywhere in its file: a submodule
    imported by name counts as that submodule, any other imported name as its package."""
    is_pkg = path.name == "__init__.py"
    deps = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                base = name.split(".")[: None if is_pkg else -1]
                base = base[: len(base) - (n.level - 1)]
                target = ".".join(base + ([n.module] if n.module else []))
            else:
                target = n.module or ""
            subs = {f"{target}.{a.name}" for a in n.names if f"{target}.{a.name}" in mods}
            deps |= subs
            if len(subs) < len(n.names) and target in mods:
                deps.add(target)
        elif isinstance(n, ast.Import):
            deps |= {a.name for a in n.names if a.name in mods}
    deps.discard(name)
    return deps


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def graph() -> dict:
    mods = modules()
    return {m: (imports_of(m, p, mods) if p is not None else set()) for m, p in mods.items()}


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, f"import cycles: {found}"


def test_the_check_sees_a_cycle_and_function_level_imports(tmp_path):
    g = graph()
    # imports inside functions count (the API imports the run-directory writer on first use)
    assert "fctlab.rundir" in g["fctlab.api"] and "fctlab.testbed.delay" in g["fctlab.testbed.netns"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
