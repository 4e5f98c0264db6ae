"""The sweep-file reader under fuzzing: mutated sweep files load or raise SweepError with one
line, never another exception. `FCTLAB_FUZZ_CASES` sets the count (1,000 here; `make fuzz`
runs 10,000)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from fctlab.sweeps import SweepError, load_sweep

ROOT = Path(__file__).resolve().parents[2]

BASE_SWEEP = """base = "base.toml"
seeds = 2

[axes]
"transport.protocol" = ["tcp", "dctcp"]
"workloads.0.load" = [0.3, 0.5]

[zip]
"network.buffer" = ["50pkt", "100pkt"]
"stop_time" = ["20ms", "30ms"]
"""

VALUES = ['""', "0", "-1", "1e400", "nan", "true", "[]", "[[]]", "{}", '["x"]', '[1, "a"]', '"10Gbs"',
          "[0.3, 0.3]", "100001", "[1, 2, 3]", '"a"', "9223372036854775807", '["tcp", "nope"]']  # fmt: skip
KEYS = ['"transport.protocol"', '"network.link_rate"', '"workloads.0.load"', '"seed"', '"flows.0.size"',
        '"workloads.9.load"', '"network.hosts"', '"a.b.c"', '""', "seeds", "base", '"stop_time"']  # fmt: skip


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op <= 1 and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + rng.choice(VALUES)
        elif op == 2:
            lines.insert(i, f"{rng.choice(KEYS)} = {rng.choice(VALUES)}")
        elif op == 3 and len(lines) > 1:
            del lines[i]
        elif op == 4:
            lines.insert(rng.randrange(len(lines)), rng.choice(["[axes]", "[zip]", "[other]", "[[axes]]", "x"]))
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return "\n".join(lines) + "\n"


def test_fuzzed_sweep_files_load_or_give_one_line_errors(tmp_path):
    (tmp_path / "base.toml").write_text((ROOT / "scenarios" / "examples" / "websearch_poisson.toml").read_text())
    cases = int(os.environ.get("FCTLAB_FUZZ_CASES") or 1000)
    rng = random.Random(2026)
    loaded = refused = 0
    for case in range(cases):
        text = _mutate(BASE_SWEEP, rng)
        f = tmp_path / "sweep.toml"
        f.write_text(text)
        try:
            load_sweep(f)
            loaded += 1
        except SweepError as e:
            assert "\n" not in str(e) and str(e), (case, text, str(e))
            refused += 1
        except Exception as e:  # anything else is a bug: show the case
            raise AssertionError(f"case {case}: {type(e).__name__}: {e}\n{text}") from e
    assert loaded > cases // 20 and refused > cases // 20, (loaded, refused)
