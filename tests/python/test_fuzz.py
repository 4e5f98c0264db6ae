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


#: Keys of scenarios/examples/demo.toml and the transport's, set to values past every range.
SET_KEYS = ["stop_time", "seed", "network.link_rate", "network.link_delay", "network.buffer", "network.senders",
            "transport.rwnd", "transport.min_rto", "transport.mss", "transport.initial_cwnd", "flows.1.size",
            "flows.1.start", "flows.2.deadline", "flows.1.tag", "monitor.queue_interval", "network.ecn_threshold",
            "transport.send_buffer", "network.receivers", "transport.dupthresh", "name"]  # fmt: skip
EXTREMES = ["18446744073709551615", "9223372036854775808", "-9223372036854775809", "1e300", "-1e300", "nan", "inf",
            "18446744073709551615B", "9223372036854775808B", "18446744074s", "1e300s", "9007199254740993B",
            "99999999999999999999Gbps", "0.0000001ns", "18446744073709551615pkt", "0", "-1", "1", "2.5",
            '"x"', "[]", "{}", "true",
            "10ms", "100pkt", "1Gbps", "20KB", "9007199254740992B", "1000000s", "1000Tbps"]  # fmt: skip


def test_fuzzed_overrides_validate_or_exit_2_in_one_line(capsys):
    """`fctlab validate demo.toml --set K=V ...` with values past every range (2^64 - 1, 2^63,
    1e300, huge strings): exit 0 or exit 2 with one line naming the file, never a traceback.
    `FCTLAB_FUZZ_CASES` sets the count (300 here; `make fuzz` runs 10,000)."""
    from fctlab.cli import main

    demo = str(ROOT / "scenarios" / "examples" / "demo.toml")
    cases = int(os.environ.get("FCTLAB_FUZZ_CASES") or 300)
    rng = random.Random(2027)
    codes = {0: 0, 2: 0}
    for case in range(cases):
        sets = []
        for _ in range(rng.randint(1, 3)):
            v = "9" * rng.randint(1, 100_000) if rng.random() < 0.05 else rng.choice(EXTREMES)
            sets += ["--set", f"{rng.choice(SET_KEYS)}={v}"]
        try:
            code = main(["validate", demo, *sets])
        except Exception as e:  # anything else is a bug: show the case
            raise AssertionError(f"case {case}: {type(e).__name__}: {e}\n{[s[:80] for s in sets]}") from e
        out = capsys.readouterr()
        assert code in codes, (case, code, out.err[:500])
        codes[code] += 1
        if code == 2:
            lines = out.err.strip().splitlines()
            assert len(lines) == 1 and demo in lines[0] and len(lines[0]) < 600, (case, out.err[:800])
    assert codes[0] > cases // 50 and codes[2] > cases // 2, codes
