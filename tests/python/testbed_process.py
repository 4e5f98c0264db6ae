"""A testbed run in a process of its own, for the tests that interrupt one: started with
SIGINT at its default in the child, as on a terminal (a background job starts with it
ignored, and Python then installs no KeyboardInterrupt handler), and swept up afterwards."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from fctlab.testbed.netns import list_namespaces


def start(scenario: Path, out: Path, argv: list | None = None) -> subprocess.Popen:
    """`fctlab testbed run SCENARIO --out OUT` (or ``argv``) in a new process."""
    argv = argv or [sys.executable, "-m", "fctlab.testbed", "run", str(scenario), "--out", str(out)]
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def prefix(proc: subprocess.Popen) -> str:
    """The names of the process's namespaces start with this."""
    return f"fctlab-{proc.pid}-"


def sweep(proc: subprocess.Popen) -> list:
    """Kills the run if it still runs and deletes the namespaces it left; returns their names."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)
    left = list_namespaces(prefix(proc))
    for n in left:
        subprocess.run(["ip", "netns", "del", n], check=False, capture_output=True)
    return left
