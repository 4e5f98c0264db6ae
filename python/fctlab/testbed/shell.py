"""Commands for the testbed: running a program with a time limit and turning its failure into
one line for the user (:class:`TestbedError`). Below every other testbed module."""

from __future__ import annotations

import subprocess

#: The prefix of every temporary directory a testbed run makes (its compiled and patched BPF
#: objects): `fctlab testbed clean` removes those a killed run left.
TEMP_PREFIX = "fctlab-testbed-"


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
