"""Running another simulator's program on an input file, as the targets that read a program's
printed lines do (ns-2, htsim, ns-3)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def run_program(cmd: list, infile: Path, out_name: str, error: type, what: str, timeout_s: float) -> tuple:
    """Runs `cmd` (its last word the input's name) in the input file's directory, keeps what it
    printed in `out_name` (and ``.err``) there, and returns (stdout, wall seconds). A program
    that fails, runs past `timeout_s` or prints no end line (``T ...``) raises `error` with one
    line naming the input and `what` ran it."""
    workdir = infile.parent
    t0 = time.perf_counter()
    try:
        # the program runs in workdir, so the input is named relative to it (an --out given as a
        # relative path would otherwise be resolved twice)
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise error(f"{infile}: {what} did not finish within {timeout_s:.0f} s") from None
    except OSError as e:
        raise error(f"{cmd[0]}: cannot run it: {e.strerror}") from None
    wall = time.perf_counter() - t0
    (workdir / out_name).write_text(proc.stdout)
    if proc.stderr:
        (workdir / Path(out_name).with_suffix(".err")).write_text(proc.stderr)
    if proc.returncode != 0 or "\nT " not in "\n" + proc.stdout:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise error(f"{infile}: {what} exited with status {proc.returncode}: {' | '.join(tail)}")
    return proc.stdout, wall
