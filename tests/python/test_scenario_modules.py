"""The modules of crates/scenario import each other without loops: a module that another one
uses (`crate::x::Y`) does not use that one back, directly or through a chain. Shared names
(limits, deadlines, paths) live in small modules below their readers."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "crates" / "scenario" / "src"
REF = re.compile(r"\bcrate::([a-z_]+)")


def graph() -> dict:
    """Each top-level module's uses of the others (its tests and comments left out)."""
    uses: dict = {}
    for p in sorted(SRC.rglob("*.rs")):
        module = p.relative_to(SRC).parts[0].removesuffix(".rs")
        if module == "lib":
            continue
        code = p.read_text().split("#[cfg(test)]")[0]
        code = "\n".join(line.split("//")[0] for line in code.split("\n"))
        uses.setdefault(module, set()).update(m for m in REF.findall(code) if m != module)
    return {m: {u for u in us if u in uses} for m, us in uses.items()}


def loop_through(start: str, uses: dict):
    """A chain of uses from `start` back to itself, if there is one."""
    stack, seen = [(start, [start])], set()
    while stack:
        module, path = stack.pop()
        for used in sorted(uses[module]):
            if used == start:
                return path + [start]
            if used not in seen:
                seen.add(used)
                stack.append((used, path + [used]))
    return None


def test_no_module_of_crates_scenario_imports_itself_through_others():
    uses = graph()
    assert {"schema", "flows", "flowlist", "trace", "workloads"} <= set(uses)
    loops = [" -> ".join(c) for m in sorted(uses) if (c := loop_through(m, uses))]
    assert not loops, f"import loops: {loops}"
