"""SCHED_TCP over real sockets (fctlab.sched, the fctlab-sched-tokio library): byte-identical
delivery over loopback under every policy, SRPT's effect, and clear errors."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import fctlab.sched as sched
from fctlab.cli import main


def test_every_policy_delivers_every_message_over_loopback():
    rng = np.random.default_rng(3)
    sizes = [0, 1, 1448, 16384, 16385] + list(rng.integers(1, 400_000, 25))
    starts = sorted(rng.uniform(0, 0.2, len(sizes)))
    for policy in sched.POLICIES:
        df = sched.loopback(
            sizes,
            starts,
            policy=policy,
            tags=["a", "b"] * 15,
            priority_tags=["b"],
            send_buffer_bytes=32768,
            chunk_bytes=4096,
        )
        assert len(df) == len(sizes)
        assert df["error"].isna().all(), (policy, df["error"].dropna().tolist())
        assert df["completed"].all() and (df["fct_s"] > 0).all()
        assert (df["scheduler"] == policy).all()
        assert list(df["size_bytes"]) == [int(s) for s in sizes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scenario(tmp_path, count: int = 20, seed: int = 4):
    scen = tmp_path / f"w{seed}.toml"
    scen.write_text(
        f'seed = {seed}\n[network]\ntopology = "dumbbell"\nsenders = 1\nreceivers = 1\nlink_rate = "1Gbps"\n'
        'link_delay = "10us"\n[transport]\nscheduler = "srpt"\n[[workloads]]\nkind = "poisson"\nsenders = "s0"\n'
        'receivers = "r0"\nsizes = { dist = "pareto_c", alpha = 3, c = 1e-5 }\narrival_rate = "200/s"\n'
        f"count = {count}\n"
    )
    return scen


def _cli(*args) -> list:
    return [sys.executable, "-m", "fctlab.cli", "sched", *map(str, args)]


def _start_receiver(port: int, *args, **popen):
    """`fctlab sched recv` in a process of its own, once it accepts connections. SIGINT is
    restored to its default in the child: a test run started in the background inherits it
    ignored, and Python then installs no KeyboardInterrupt handler."""
    import signal

    popen.setdefault("preexec_fn", lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    p = subprocess.Popen(
        _cli("recv", "--listen", f"127.0.0.1:{port}", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and p.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise AssertionError(f"the receiver did not start: {p.communicate()}")


def _stop(p):
    if p.poll() is None:
        p.kill()
        p.wait()


def _open_by_hand(port: int, sizes) -> socket.socket:
    """A session opened from Python, byte by byte as docs/schedtcp.md gives the format."""
    import os
    import struct
    import zlib

    head = b"FCSS" + bytes([2, 1, 0, 0]) + os.urandom(16) + struct.pack(">I", len(sizes))
    body = head + b"".join(struct.pack(">Q", n) for n in sizes)
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(body + struct.pack(">I", zlib.crc32(body)))
    assert s.recv(8)[:6] == b"FCSR" + bytes([2, 0])
    return s


def _forge(port: int) -> None:
    """A third party's connections: a frame with no session (message 0, as a real sender's
    first message), a join of a session never opened, garbage, a corrupted session table."""
    import os
    import struct
    import zlib

    chunk = bytes(range(200))
    head = b"FCSQ" + bytes([1, 0, 0, 0]) + struct.pack(">QQIQ", 0, 0, len(chunk), len(chunk))
    frame = head + struct.pack(">I", zlib.crc32(head + chunk)) + chunk
    join = b"FCSS" + bytes([2, 2, 0, 0]) + os.urandom(16)
    table = b"FCSS" + bytes([2, 1, 0, 0]) + os.urandom(16) + struct.pack(">IQ", 1, 10) + b"\0\0\0\0"
    for payload in (frame, join + frame, os.urandom(64), table):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            # The receiver may refuse and close before all is written: that ends it too.
            try:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):
                    pass
            except OSError:
                pass


def test_one_receiver_serves_senders_in_a_row_and_at_once_and_refuses_forgeries(tmp_path):
    import json

    import pandas as pd

    port = _free_port()
    recv = _start_receiver(port, "--expect", 100, "--timeout", 120, "--out", tmp_path / "r")
    to = f"127.0.0.1:{port}"
    try:
        # Three senders one after another, each numbering its messages from 0...
        for k in range(3):
            subprocess.run(
                _cli("send", _scenario(tmp_path, seed=k), "--to", to, "--out", tmp_path / f"s{k}"),
                check=True,
                timeout=120,
                capture_output=True,
            )
        # ...then two at once, while a third party forges frames.
        both = [
            subprocess.Popen(
                _cli("send", _scenario(tmp_path, seed=k), "--to", to, "--out", tmp_path / f"s{k}"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for k in (3, 4)
        ]
        _forge(port)
        for p in both:
            sout, serr = p.communicate(timeout=120)
            assert p.returncode == 0, (sout, serr)
        out, err = recv.communicate(timeout=60)
    finally:
        _stop(recv)
    assert recv.returncode == 0, (out, err)
    assert "received 100 messages in 5 sessions, 0 errors" in out, out
    got = pd.read_parquet(tmp_path / "r" / "received.parquet")
    delivered = got[got["kind"] == "delivered"]
    # Every message of every session exactly once, with the bytes its sender sent.
    assert delivered["error"].isna().all() and len(delivered) == 100
    assert delivered.groupby("session")["message"].apply(sorted).map(list).tolist() == [list(range(20))] * 5
    for k in range(5):
        flows = pd.read_parquet(tmp_path / f"s{k}" / "flows.parquet")
        assert len(flows) == 20 and flows["completed"].all()
        sizes = dict(zip(flows["flow_id"], flows["size_bytes"]))
    # The forgeries: each refused and counted, none delivered or counted toward --expect.
    info = json.loads((tmp_path / "r" / "receiver.json").read_text())
    # (The fifth refusal is the connection the test made to see the receiver was up.)
    assert info["counters"]["refused"] == 5 and info["counters"]["sessions_opened"] == 5, info
    refused = got.loc[got["kind"] == "refused", "error"].tolist()
    for text in (
        "before any session preamble",
        "which is not open here",
        "not a fctlab scheduling connection",
        "checksum mismatch in the session's message table",
    ):
        assert any(text in e for e in refused), (text, refused)
    assert all(s["failed"] == 0 and s["delivered"] == 20 for s in info["sessions"]), info["sessions"]
    assert sizes  # the last sender's sizes were read


def test_sigint_writes_what_was_received_and_abandons_open_sessions(tmp_path):
    import json
    import signal

    import pandas as pd

    port = _free_port()
    recv = _start_receiver(port, "--out", tmp_path / "r")
    try:
        subprocess.run(
            _cli("send", _scenario(tmp_path, count=5), "--to", f"127.0.0.1:{port}", "--out", tmp_path / "s"),
            check=True,
            timeout=120,
            capture_output=True,
        )
        # A session still open, its two messages never sent.
        held = _open_by_hand(port, [1000, 0])
        time.sleep(0.5)
        recv.send_signal(signal.SIGINT)
        out, err = recv.communicate(timeout=20)
        held.close()
    finally:
        _stop(recv)
    assert recv.returncode == 130, (out, err)
    got = pd.read_parquet(tmp_path / "r" / "received.parquet")
    assert (got["kind"] == "delivered").sum() == 5
    abandoned = got.loc[got["kind"] == "failed", "error"].tolist()
    assert len(abandoned) == 2 and all("when the receiver was interrupted" in e for e in abandoned), abandoned
    assert json.loads((tmp_path / "r" / "receiver.json").read_text())["interrupted"] is True


class _PeakMemory:
    """The peak resident memory (VmHWM) of process `pid`, sampled every 50 ms while it lives
    (a process that has exited no longer reports it)."""

    def __init__(self, pid: int):
        import threading

        self.pid, self.peak_mb, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.peak_mb = max(self.peak_mb, int(line.split()[1]) / 1024)
            except OSError:
                return
            self._stop.wait(0.05)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.peak_mb


def test_idle_connections_under_a_descriptor_limit_do_not_stop_a_sender(tmp_path):
    import json
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 700:
        pytest.skip(f"this test holds 500 connections and the descriptor limit is {hard}")
    resource.setrlimit(
        resource.RLIMIT_NOFILE,
        (max(soft, 1024) if hard == resource.RLIM_INFINITY else max(soft, min(hard, 4096)), hard),
    )
    port = _free_port()
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # noqa: E731
    recv = _start_receiver(port, "--expect", 20, "--timeout", 120, "--out", tmp_path / "r", preexec_fn=limit)
    memory = _PeakMemory(recv.pid)
    idle = []
    try:
        for _ in range(500):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(1.0)
        t0 = time.monotonic()
        sent = subprocess.run(
            _cli("send", _scenario(tmp_path), "--to", f"127.0.0.1:{port}", "--out", tmp_path / "s"),
            timeout=120,
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - t0
        out, err = recv.communicate(timeout=60)
    finally:
        peak = memory.stop()
        for s in idle:
            s.close()
        _stop(recv)
    assert sent.returncode == 0, (sent.stdout, sent.stderr)
    assert recv.returncode == 0 and "received 20 messages in 1 session, 0 errors" in out, (out, err)
    assert 0 < peak <= 300, f"the receiver peaked at {peak:.0f} MB"
    info = json.loads((tmp_path / "r" / "receiver.json").read_text())
    assert info["counters"]["evicted"] > 0, info
    print(f"send under 500 idle connections: {took:.1f} s, receiver peak {peak:.0f} MB, {info['counters']}")


def test_bad_arguments_are_named(tmp_path, capsys):
    with pytest.raises(sched.SchedError, match="not an address HOST:PORT"):
        sched.recv("nowhere")
    with pytest.raises(ValueError, match="policy: unknown scheduler"):
        sched.loopback([10], [0.0], policy="sjf")
    with pytest.raises(ValueError, match=r"starts_s\[0\]"):
        sched.loopback([10], [-1.0])
    scen = tmp_path / "two.toml"
    scen.write_text(
        '[network]\ntopology = "dumbbell"\nsenders = 2\nreceivers = 2\nlink_rate = "1Gbps"\nlink_delay = "10us"\n'
        '[[flows]]\nsrc = "s0"\ndst = "r0"\nsize = "1MB"\n[[flows]]\nsrc = "s1"\ndst = "r1"\nsize = "1MB"\n'
    )
    assert main(["sched", "send", str(scen), "--to", "127.0.0.1:9", "--out", str(tmp_path / "o")]) == 2
    assert "2 host pairs (s0->r0, s1->r1)" in capsys.readouterr().err
    # A receiver that is not there: every message fails, naming the address.
    scen.write_text(
        '[network]\ntopology = "dumbbell"\nsenders = 1\nreceivers = 1\nlink_rate = "1Gbps"\nlink_delay = "10us"\n'
        '[[flows]]\nsrc = "s0"\ndst = "r0"\nsize = "10KB"\n'
    )
    port = _free_port()
    assert (
        main(["sched", "send", str(scen), "--to", f"127.0.0.1:{port}", "--timeout", "2", "--out", str(tmp_path / "o")])
        == 1
    )
    assert f"connecting to 127.0.0.1:{port}" in capsys.readouterr().out
