"""The congestion-control trait stays small: at most seven hooks, each with a default that does
nothing, so that an algorithm implements only what it changes; what a protocol asks of its
transport beyond a window is a separate trait (`TransportPolicy`), also all defaults."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_CC_HOOKS = 7


def trait_methods(path: Path, trait: str) -> dict:
    """{name: has a default body} of each method declared in `pub trait <trait>` (rustfmt's
    layout: the trait ends at the first `}` in column 0)."""
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if re.match(rf"pub trait {trait}\b", line))
    out = {}
    for line in lines[start + 1 :]:
        if line == "}":
            break
        m = re.match(r"    fn (\w+)", line)
        if m:
            out[m.group(1)] = not line.rstrip().endswith(";")
    return out


def test_the_congestion_control_trait_has_at_most_seven_hooks_each_with_a_default():
    hooks = trait_methods(ROOT / "crates/transport/src/cc/mod.rs", "CongestionControl")
    assert 0 < len(hooks) <= MAX_CC_HOOKS, sorted(hooks)
    assert all(hooks.values()), f"hooks without a default: {[h for h, d in hooks.items() if not d]}"


def test_the_transport_policy_hooks_all_have_defaults_and_are_not_congestion_control_hooks():
    policy = trait_methods(ROOT / "crates/transport/src/transport.rs", "TransportPolicy")
    cc = trait_methods(ROOT / "crates/transport/src/cc/mod.rs", "CongestionControl")
    assert policy and all(policy.values()), policy
    assert not set(policy) & set(cc)


def test_the_parser_reads_declarations_and_defaults(tmp_path):
    f = tmp_path / "t.rs"
    f.write_text("pub trait T {\n    fn a(&self);\n    fn b(&self) {}\n    fn c(&self) -> u8 {\n        0\n    }\n}\n")
    assert trait_methods(f, "T") == {"a": False, "b": True, "c": True}
