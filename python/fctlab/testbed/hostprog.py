"""Host programs of router-assisted protocols on the testbed (``kernel/{rcp,racs,sdc}_host.bpf.c``):
a sock_ops program that writes and reads the feedback option, and the protocol's congestion
control, loaded together by ``kernel/fbload.c`` and held for the run.

A sock_ops program acts on the sockets of a cgroup, so the run moves its own process into a
cgroup of its own (``fctlab-<pid>`` under the cgroup v2 mount) for as long as the programs
are loaded, and moves back afterwards. The loader pins nothing: when it exits, however it
exits, the kernel detaches the program and unregisters the congestion control.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from .. import kernel as K
from .assisted import PROTOCOLS
from .delay import compiled
from .shell import TEMP_PREFIX, TestbedError

LOADER_SOURCE = "fbload.c"
LOADER = "fctlab-fbload"
CGROUP_PREFIX = "fctlab-"
#: Keys of the hosts' ``fb_host_stats`` map, in order: segments written with the option,
#: parsed with it, without it, with a malformed one; rates the kernel refused as a pacing limit.
STATS = ("written", "parsed", "no_option", "malformed", "pacing_refused")


def packed_params(protocol: str, params: dict) -> list:
    """The values of the protocol's host .rodata layout (``assisted.Protocol.host_params``)
    from ``params`` (missing keys: 0; a list padded with zeros to its array's length)."""
    symbol, fmt, keys = PROTOCOLS[protocol].host_params
    values: list = []
    for k in keys:
        v = params.get(k, 0)
        values.extend(int(x) for x in v) if isinstance(v, (list, tuple)) else values.append(int(v))
    values.extend([0] * (len(struct.unpack(fmt, bytes(struct.calcsize(fmt)))) - len(values)))
    return values


def cgroup2_root() -> Optional[Path]:
    """Where the cgroup v2 hierarchy is mounted (None: it is not)."""
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            f = line.split()
            if len(f) >= 3 and f[2] == "cgroup2":
                return Path(f[1])
    except OSError:
        return None
    return None


def _own_cgroup() -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:] or "/"
    return "/"


def stale_cgroups() -> list[Path]:
    """Cgroups of testbed runs whose process is gone (an interrupted run that was killed)."""
    root = cgroup2_root()
    if root is None:
        return []
    out = []
    for d in root.glob(f"{CGROUP_PREFIX}*"):
        pid = d.name[len(CGROUP_PREFIX) :]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            out.append(d)
    return out


def remove_stale_cgroup(group: Path, wait_s: float = 5.0) -> bool:
    """Deletes the cgroup of a run whose process is gone; True when it is gone. Its members (the
    run's loader, which exits once its input closes) get ``wait_s`` seconds to leave; any still
    there then is killed (it belongs to the dead run) and waited for as long again."""
    for kill in (False, True):
        deadline = time.monotonic() + wait_s
        while True:
            try:
                group.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                pass
            try:
                members = [int(p) for p in (group / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                members = []
            if kill:
                for pid in members:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    return False


class HostPrograms:
    """Loads the host object of ``protocol`` for the run; ``close`` unloads it and gives the
    process back its cgroup. Use as a context manager."""

    def __init__(self, protocol: str, params: Optional[dict] = None) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.cgroup: Optional[Path] = None
        #: the host programs' counters at the end, ``{map: [values]}`` (after ``close``)
        self.counters: dict = {}
        self._home = None
        root = cgroup2_root()
        if root is None:
            raise TestbedError(f"protocol {protocol!r} on the testbed needs the cgroup v2 hierarchy (not mounted)")
        self._tmp = tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{protocol}-host-")
        try:
            K.check_environment(need_root=True)
            obj = K.build(source=PROTOCOLS[protocol].host_source)
            if PROTOCOLS[protocol].host_params is not None:
                symbol, fmt, _ = PROTOCOLS[protocol].host_params
                dst = Path(self._tmp.name) / "host.bpf.o"
                K.patch_symbol(obj, symbol, struct.pack(fmt, *packed_params(protocol, params or {})), dst)
                obj = dst
        except K.KernelError as e:
            self._tmp.cleanup()
            raise TestbedError(f"{protocol} hosts need their BPF programs: {e}") from None
        loader = compiled(
            K.kernel_dir() / LOADER_SOURCE, LOADER, what=f"protocol {protocol!r} on the testbed", libs=("-lbpf",)
        )
        self.cgroup = root / f"{CGROUP_PREFIX}{os.getpid()}"
        self._home = root / _own_cgroup().lstrip("/")
        try:
            self.cgroup.mkdir(exist_ok=True)
            (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))
            self.proc = subprocess.Popen(
                [str(loader), str(obj), str(self.cgroup)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            line = self.proc.stdout.readline().strip()
            if line != "ready":
                err = self.proc.stderr.read() if self.proc.wait(timeout=60) is not None else ""
                errors = [l for l in err.splitlines() if l.startswith("error:")]
                raise K.KernelError(errors[-1] if errors else f"the loader printed {line!r}", log=err)
        except (OSError, K.KernelError, subprocess.TimeoutExpired) as e:
            self.close()
            raise TestbedError(f"loading the {protocol} host programs failed: {e}") from None

    def close(self) -> None:
        try:
            self._stop_loader()
        finally:
            self._leave_cgroup()
            self._tmp.cleanup()

    def _stop_loader(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
                for line in self.proc.stdout.read().splitlines()[::-1]:
                    try:
                        self.counters = json.loads(line)
                        break
                    except ValueError:
                        continue
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            finally:
                for stream in (self.proc.stdout, self.proc.stderr):
                    stream.close()
            self.proc = None

    def _leave_cgroup(self) -> None:
        if self.cgroup is not None:
            try:
                (self._home / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                pass
            try:
                self.cgroup.rmdir()
            except OSError:
                pass
            self.cgroup = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
