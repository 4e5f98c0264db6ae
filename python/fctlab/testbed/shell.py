"""Commands for the testbed: running a program with a time limit and turning its failure into
one line for the user (:class:`TestbedError`). Below every other testbed module."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

#: Testbed runs on one machine take turns (a lock on this file): they share the CPUs that
#: time their traffic, and the kernel's names of the programs they load (one fctlab_rcp).
LOCK_FILE = Path("/run/lock/fctlab-testbed.lock")

#: The prefix of every temporary directory a testbed run makes (its compiled and patched BPF
#: objects): `fctlab testbed clean` removes those a killed run left.
TEMP_PREFIX = "fctlab-testbed-"


def lock_path() -> Path:
    return LOCK_FILE if LOCK_FILE.parent.is_dir() else Path(tempfile.gettempdir()) / LOCK_FILE.name


def _registered_note() -> Path:
    """Beside the lock: the kernel congestion controls the run holding the lock registered."""
    return lock_path().with_name("fctlab-testbed-registered")


def note_registered(names: set) -> None:
    """Notes, before registering them, the kernel congestion controls a run registers, so that
    `fctlab testbed clean` can unregister them if the run is killed; an empty set removes the
    note."""
    if names:
        _registered_note().write_text("".join(n + "\n" for n in sorted(names)))
    else:
        _registered_note().unlink(missing_ok=True)


def noted_registered() -> set:
    """The names :func:`note_registered` noted last (none when there is no note)."""
    try:
        return set(_registered_note().read_text().split())
    except OSError:
        return set()


class TestbedError(Exception):
    """A problem that stops a testbed run; the message is one line for the user."""


def ip(*args: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess:
    return run(["ip", *args], check=check, timeout=timeout)


def run(cmd: list[str], *, check: bool = True, timeout: float = 20, input: str = None) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError:
        raise TestbedError(f"{cmd[0]} not found (apt package iproute2)") from None
    except subprocess.TimeoutExpired:
        raise TestbedError(f"`{' '.join(cmd)}` did not finish within {timeout:.0f}s") from None
    if check and p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise TestbedError(f"`{' '.join(cmd)}` failed: {msg[-1] if msg else 'exit ' + str(p.returncode)}")
    return p
