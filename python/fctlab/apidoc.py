"""The Python API reference (``docs/api.md``), generated from the package's docstrings.

    .venv/bin/python -m fctlab.apidoc > docs/api.md

Each documented module's public names (its ``__all__``) with their signatures and docstrings,
in the order ``__all__`` gives them. ``tests/python/test_apidoc.py`` checks that the file is
what this prints and that every public function and class has a docstring; ``--check`` does
both for ``make docs-site``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys

#: The modules a user imports, in the order the reference presents them.
MODULES = (
    "fctlab",
    "fctlab.sweeps",
    "fctlab.compare",
    "fctlab.metrics",
    "fctlab.report",
    "fctlab.sched",
    "fctlab.models.aimd",
    "fctlab.models.pias",
    "fctlab.testbed",
)

#: Names that are not API: the command-line plumbing some modules export for the CLI.
SKIP = {"configure", "main_compare", "main_reproduce", "main_report", "main_testbed", "__version__"}
#: ... and `run`, except fctlab's own.
CLI_RUN = {"fctlab.sweeps", "fctlab.sched"}


def _signature(obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    # A default that is a function prints its address: not the same in two processes.
    return re.sub(r"<function (\S+) at 0x[0-9a-f]+>", r"<function \1>", sig)


def public(module) -> list:
    """(name, object) of a module's API, in ``__all__`` order."""
    skip = SKIP | ({"run"} if module.__name__ in CLI_RUN else set())
    names = [n for n in getattr(module, "__all__", []) if n not in skip]
    return [(n, getattr(module, n)) for n in names]


def entries(module_name: str) -> list:
    """Markdown lines for one module."""
    m = importlib.import_module(module_name)
    out = [f"## `{module_name}`", ""]
    doc = inspect.getdoc(m)
    if doc:
        out += [doc.split("\n\n")[0], ""]
    for name, obj in public(m):
        if inspect.isclass(obj):
            out += [f"### class `{name}`", ""]
        elif callable(obj):
            out += [f"### `{name}{_signature(obj)}`", ""]
        else:
            out += [f"### `{name}`", "", f"A constant: `{obj!r}`."[:300], ""]
            continue
        out += [inspect.getdoc(obj) or "", ""]
        if inspect.isclass(obj):
            for mname, meth in inspect.getmembers(obj):
                if mname.startswith("_") or not (inspect.isfunction(meth) or isinstance(meth, property)):
                    continue
                if mname not in obj.__dict__:
                    continue
                kind = "property" if isinstance(meth, property) else "method"
                sig = "" if kind == "property" else _signature(meth)
                d = inspect.getdoc(meth) or ""
                out += [f"- `{name}.{mname}{sig}` ({kind}){': ' + d.splitlines()[0] if d else ''}"]
            out.append("")
    return out


def render() -> str:
    lines = [
        "# Python API reference",
        "",
        "Generated from the docstrings by `python -m fctlab.apidoc` (checked by",
        "`tests/python/test_apidoc.py`); the guides are [scenarios.md](scenarios.md),",
        "[results.md](results.md), [sweeps.md](sweeps.md) and [schedtcp.md](schedtcp.md).",
        "",
    ]
    for m in MODULES:
        lines += entries(m)
    return "\n".join(lines).rstrip() + "\n"


def undocumented() -> list:
    """The public functions and classes of the documented modules without a docstring."""
    missing = []
    for m in MODULES:
        for name, obj in public(importlib.import_module(m)):
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not inspect.getdoc(obj):
                missing.append(f"{m}.{name}")
    return missing


def check(path: str = "docs/api.md") -> list:
    """What keeps the reference from being published: undocumented names, and `path` not
    being what :func:`render` writes."""
    problems = [f"{name}: a public name without a docstring" for name in undocumented()]
    try:
        current = open(path, encoding="utf-8").read() == render()
    except OSError:
        current = False
    if not current:
        problems.append(f"{path} is stale: run `python -m fctlab.apidoc > {path}`")
    return problems


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        problems = check()
        for p in problems:
            print(f"fctlab.apidoc: {p}", file=sys.stderr)
        sys.exit(1 if problems else 0)
    sys.stdout.write(render())
