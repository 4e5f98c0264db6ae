"""Imports sit at the top of their module, except heavy ones kept lazy (each with its reason),
so that ``fctlab --help``, ``import fctlab`` and the light commands start fast.

Every import inside a function (found with ``ast``) must

(a) say why it is there: a ``# lazy: <reason>`` comment on the import, or on the import
    statement right before it in the same block (several imports sharing one reason); and
(b) earn it: load a heavy library (:data:`HEAVY`) that its module does not load at import
    already, directly or through the package's modules it imports at its top (a package module
    counts with its parent packages), or be an optional import guarded by ``try`` /
    ``except ImportError``. A cheap module (the standard library, a package module that loads
    nothing heavy, one the module imports at its top already) belongs at the top.

And ``import fctlab.cli`` (what ``fctlab --help`` runs) loads none of the heavy libraries.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "fctlab"

#: Libraries that cost start-up time (measured with ``python -X importtime`` after
#: ``import fctlab.cli``): pandas about 250 ms (with pyarrow and numpy), matplotlib 300 ms,
#: distributed 340 ms, duckdb 130 ms, pyarrow 80 ms (with numpy), numpy 45 ms, pyelftools
#: (``elftools.elf``) 25 ms; scipy and dask alike.
HEAVY = ("pandas", "pyarrow", "matplotlib", "numpy", "scipy", "dask", "distributed", "duckdb", "elftools")

#: Cheap function-level imports kept lazy anyway: ``"path/in/package.py::module"`` -> why (an
#: import cycle Python cannot resolve at import would be another reason).
JUSTIFIED = {
    "fctlab/api.py::html": "html.entities costs 1.5 ms of every `import fctlab`, for notebooks only",
    "fctlab/report/__init__.py::fctlab.report.sweep": "it loads fctlab.sweeps (12 ms); only sweep directories need it",
}

LAZY = re.compile(r"#\s*lazy:\s*\S")


def modules(pkg: Path) -> dict:
    """Module name -> file of every module of the package rooted at `pkg`."""
    out = {}
    for p in pkg.rglob("*.py"):
        parts = list(p.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def targets(node, name: str, path: Path, mods: dict) -> list:
    """The modules an import statement of module `name` (file `path`) loads: the package's
    modules by name, other libraries by their top-level name."""
    if isinstance(node, ast.Import):
        return [a.name if a.name in mods else a.name.split(".")[0] for a in node.names]
    if not node.level:
        base = node.module or ""
        if base.split(".")[0] not in {m.split(".")[0] for m in mods}:
            return [base.split(".")[0]]
    else:
        pkg = name.split(".")[: None if path.name == "__init__.py" else -1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([node.module] if node.module else []))
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
    return subs + ([base] if len(subs) < len(node.names) else [])


def _is_type_checking(node) -> bool:
    t = node.test
    return isinstance(node, ast.If) and (
        (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING")
        or (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")
    )


def top_imports(tree):
    """The import statements a module runs when imported: outside functions and outside
    ``if TYPE_CHECKING:``."""
    todo = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            yield n
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) or (isinstance(n, ast.If) and _is_type_checking(n)):
            continue
        else:
            todo.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, (ast.stmt, ast.excepthandler)))


def implied() -> dict:
    """Heavy library -> the heavy libraries importing it loads (pandas loads numpy and
    pyarrow), measured in a fresh interpreter each; a library not installed loads itself."""
    out = {}
    for lib in HEAVY:
        code = f"import sys\ntry:\n    import {lib}\nexcept ImportError:\n    pass\nprint(' '.join(sys.modules))"
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        out[lib] = {lib} | ({m.split(".")[0] for m in p.stdout.split()} & set(HEAVY))
    return out


def heavy_sets(pkg: Path, loads: dict) -> dict:
    """Package module -> the heavy libraries importing it loads (its parent packages and
    everything their and its top-level imports load, transitively); with `loads`, the heavy
    libraries each heavy library loads."""
    mods = modules(pkg)
    deps = {}
    for name, path in mods.items():
        deps[name] = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        for n in top_imports(ast.parse(path.read_text())):
            deps[name] |= set(targets(n, name, path, mods))
    heavy = {m: set() for m in mods} | {lib: set(v) for lib, v in loads.items()}
    changed = True
    while changed:  # to the fixed point
        changed = False
        for m in mods:
            new = heavy[m].union(*(heavy.get(d, set()) for d in deps[m]))
            if new != heavy[m]:
                heavy[m], changed = new, True
    return heavy


def _guarded(stack) -> bool:
    """Whether an import sits in a ``try`` that catches ImportError (an optional library)."""
    names = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    for n in stack:
        if isinstance(n, ast.Try):
            for h in n.handlers:
                caught = [h.type] if not isinstance(h.type, ast.Tuple) else list(h.type.elts)
                if h.type is None or any(isinstance(c, ast.Name) and c.id in names for c in caught):
                    return True
    return False


def function_imports(tree, lines):
    """(import node, whether it carries a `# lazy:` reason, whether it is guarded) of every
    import inside a function. An import shares the reason of the import statement right
    before it in the same block."""

    def block(stmts, in_fn, stack):
        marked = False
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                own = any(LAZY.search(line) for line in lines[s.lineno - 1 : s.end_lineno])
                marked = own or marked
                if in_fn:
                    yield s, marked, _guarded(stack)
            else:
                marked = False
                yield from visit(s, in_fn, stack + [s])

    def visit(node, in_fn, stack):
        in_fn = in_fn or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            items = getattr(node, field, None)
            if isinstance(items, list) and items and isinstance(items[0], ast.stmt):
                yield from block(items, in_fn, stack)
            elif isinstance(items, list):
                for item in items:  # except handlers, match cases
                    yield from visit(item, in_fn, stack + [item])

    yield from visit(tree, False, [tree])


def problems(pkg: Path, loads: dict) -> list:
    """(file:line, the import, what is wrong) for every function-level import of the package
    at `pkg` that lacks a reason or is cheap."""
    mods = modules(pkg)
    heavy = heavy_sets(pkg, loads)
    out = []
    for name, path in sorted(mods.items()):
        text = path.read_text()
        rel = path.relative_to(pkg.parent).as_posix()
        for node, marked, guarded in function_imports(ast.parse(text), text.split("\n")):
            where, src = f"{rel}:{node.lineno}", ast.get_source_segment(text, node)
            if not marked:
                out.append((where, src, "an import inside a function without a `# lazy: <reason>` comment"))
            if guarded:
                continue
            for t in targets(node, name, path, mods):
                if not heavy.get(t, set()) - heavy[name] and f"{rel}::{t}" not in JUSTIFIED:
                    out.append(
                        (where, src, f"{t} loads nothing heavy that {name} does not load already: move it to the top")
                    )
    return out


def test_function_level_imports_are_heavy_and_say_why():
    found = problems(PKG, implied())
    assert not found, "\n".join(": ".join(p) for p in found)


def test_fctlab_cli_loads_no_heavy_library():
    """What `fctlab --help` imports (python -X importtime)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import fctlab.cli"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert "fctlab.cli" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, f"import fctlab.cli loads {heavy}"


def test_the_statically_light_modules_load_nothing_heavy():
    """The analysis is static: the modules it finds light, imported together, load no heavy
    library (a package attribute that imports on first use, say, would show here)."""
    loads = {lib: {lib} for lib in HEAVY}
    light = sorted(
        m for m, h in heavy_sets(PKG, loads).items() if not h and m.startswith("fctlab") and "__main__" not in m
    )
    code = f"import importlib, sys\nfor m in {light!r}:\n    importlib.import_module(m)\nprint(' '.join(sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert len(light) > 10
    assert not {m.split(".")[0] for m in p.stdout.split()} & set(HEAVY)


def test_the_check_sees_missing_reasons_and_cheap_lazy_imports(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "light.py").write_text("import json\n")
    (pkg / "heavy.py").write_text("import numpy\n")
    (pkg / "mod.py").write_text(
        "import os\n"
        "\n"
        "def f():\n"
        "    import json\n"  # 4: no reason, and cheap
        "    import re  # lazy: a made-up reason\n"  # 5: cheap
        "    import pandas as pd  # lazy: pandas is heavy\n"
        "    from matplotlib.figure import Figure\n"  # shares the reason above
        "    from . import heavy  # lazy: loads numpy\n"
        "    from .light import json  # lazy: loads nothing heavy\n"  # 9: cheap
        "    x = 1\n"
        "    import numpy\n"  # 11: the reason does not carry past another statement
        "    import os  # lazy: duplicate\n"  # 12: imported at the top already
        "    try:\n"
        "        import tomllib  # lazy: optional\n"
        "    except ImportError:\n"
        "        import tomli as tomllib  # lazy: optional\n"
        "\n"
        "class C:\n"
        "    def m(self):\n"
        "        from pkg import (\n"
        "            light,  # lazy: a reason on any line of the statement counts\n"
        "        )\n"  # 20: cheap
    )
    loads = {lib: {lib} for lib in HEAVY} | {"pandas": {"pandas", "numpy"}}
    found = [
        (where, why.split(" ")[0] if "move it to the top" in why else "no reason")
        for where, _, why in problems(pkg, loads)
    ]
    assert found == [
        ("pkg/mod.py:4", "no reason"),
        ("pkg/mod.py:4", "json"),
        ("pkg/mod.py:5", "re"),
        ("pkg/mod.py:9", "pkg.light"),
        ("pkg/mod.py:11", "no reason"),
        ("pkg/mod.py:12", "os"),
        ("pkg/mod.py:20", "pkg.light"),
    ]
