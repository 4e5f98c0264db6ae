"""SCHED_TCP over real sockets (fctlab.sched, the fctlab-sched-tokio library): byte-identical
delivery over loopback under every policy, SRPT's effect, and clear errors."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from typing import Optional

import numpy as np
import pandas as pd
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


def _start_receiver(port: int, *args, descriptors: Optional[int] = None, sigint_ignored: bool = False):
    """`fctlab sched recv` in a process of its own, once it accepts connections; limited to
    `descriptors` file descriptors when given (set from here with prlimit: a function run in
    the child between fork and exec can deadlock it when this process has threads). The
    receiver handles SIGINT itself, also when a test run started in the background hands it
    down ignored (`sigint_ignored`: started so)."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
    try:
        p = subprocess.Popen(
            _cli("recv", "--listen", f"127.0.0.1:{port}", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        if sigint_ignored:
            signal.signal(signal.SIGINT, before)
    if descriptors is not None:
        resource.prlimit(p.pid, resource.RLIMIT_NOFILE, (descriptors, descriptors))
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


VERSION = 3


def _mac(key, nonce: bytes, body: bytes) -> bytes:
    """HMAC-SHA256 of the receiver's nonce and the bytes of an open or join; zeros without a key."""
    return hmac.new(key, nonce + body, hashlib.sha256).digest() if key else bytes(32)


def _challenge(s: socket.socket) -> bytes:
    """The receiver's first 24 bytes on a connection: its nonce."""
    c = b""
    while len(c) < 24:
        more = s.recv(24 - len(c))
        assert more, f"the receiver closed before its challenge ({c!r})"
        c += more
    assert c[:5] == b"FCSC" + bytes([VERSION]), c
    return c[8:24]


def _open_by_hand(port: int, sizes, key=None, sid=None, expect_reply=b"FCSR" + bytes([VERSION, 0])):
    """A session opened from Python, byte by byte as docs/schedtcp.md gives the format: the
    control connection and the session id."""
    sid = sid or os.urandom(16)
    head = b"FCSS" + bytes([VERSION, 1, 0, 0]) + sid + struct.pack(">I", len(sizes))
    body = head + b"".join(struct.pack(">Q", n) for n in sizes)
    body += struct.pack(">I", zlib.crc32(body))
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(body + _mac(key, _challenge(s), body))
        assert s.recv(8)[:6] == expect_reply[:6]
    except BaseException:
        s.close()
        raise
    return s, sid


def _frame(message: int, offset: int, total: int, chunk: bytes) -> bytes:
    head = b"FCSQ" + bytes([1, 0, 0, 0]) + struct.pack(">QQIQ", message, offset, len(chunk), total)
    return head + struct.pack(">I", zlib.crc32(head + chunk)) + chunk


def _pattern(message: int, n: int) -> bytes:
    """Message `message`'s test content (``fctlab_sched_tokio::pattern``): a xorshift stream."""
    m = (1 << 64) - 1
    x = ((message * 0x9E3779B97F4A7C15) & m) | 1
    out = bytearray(n)
    for i in range(n):
        x ^= (x << 13) & m
        x ^= x >> 7
        x ^= (x << 17) & m
        out[i] = x & 0xFF
    return bytes(out)


def _join(port: int, sid: bytes, key=None):
    """A connection joined to session `sid` (with the MAC of its own nonce): the connection and
    the join's bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        pre = b"FCSS" + bytes([VERSION, 2, 0, 0]) + sid
        join = pre + _mac(key, _challenge(s), pre)
        s.sendall(join)
    except BaseException:
        s.close()
        raise
    return s, join


def _finish(s: socket.socket, payload: bytes = b"") -> None:
    """Sends `payload`, closes the sending side and reads until the receiver closes."""
    try:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except OSError:
        pass
    finally:
        s.close()


def _forge(port: int) -> None:
    """A third party's connections: a frame with no session (message 0, as a real sender's
    first message), a join of a session never opened, garbage, a corrupted session table."""
    chunk = bytes(range(200))
    frame = _frame(0, 0, len(chunk), chunk)
    join = b"FCSS" + bytes([VERSION, 2, 0, 0]) + os.urandom(16) + bytes(32)
    table = b"FCSS" + bytes([VERSION, 1, 0, 0]) + os.urandom(16) + struct.pack(">IQ", 1, 10) + bytes(4 + 32)
    for payload in (frame, join + frame, os.urandom(64), table):
        # The receiver may refuse and close before all is written: that ends it too.
        _finish(socket.create_connection(("127.0.0.1", port), timeout=5), payload)


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
    # Started with SIGINT ignored, as a shell starts a background job: recv handles it itself.
    recv = _start_receiver(port, "--out", tmp_path / "r", sigint_ignored=True)
    try:
        subprocess.run(
            _cli("send", _scenario(tmp_path, count=5), "--to", f"127.0.0.1:{port}", "--out", tmp_path / "s"),
            check=True,
            timeout=120,
            capture_output=True,
        )
        # A session still open, its two messages never sent.
        held, _ = _open_by_hand(port, [1000, 0])
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
    recv = _start_receiver(port, "--expect", 20, "--timeout", 120, "--out", tmp_path / "r", descriptors=64)
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


KEY = b"a pre-shared key for the scheduling tests\n"


def _key_file(tmp_path, secret: bytes = KEY):
    path = tmp_path / "sched.key"
    path.write_bytes(secret)
    return path


def test_a_keyed_receiver_refuses_forged_opens_forged_joins_and_replayed_joins(tmp_path):
    key_file = _key_file(tmp_path)
    key = KEY.strip()
    (tmp_path / "other").mkdir()
    other_key = _key_file(tmp_path / "other", b"another key, not the receiver's")
    port = _free_port()
    to = f"127.0.0.1:{port}"
    # 10 messages from a real sender, 1 from a session opened by hand.
    recv = _start_receiver(port, "--key-file", key_file, "--expect", 11, "--timeout", 60, "--out", tmp_path / "r")
    try:
        # A sender without the key, and one with another key: refused, each message saying so.
        for extra, text in (
            ((), "the receiver requires a key"),
            (("--key-file", other_key), "MAC does not match"),
        ):
            nokey = subprocess.run(
                _cli("send", _scenario(tmp_path, count=3), "--to", to, "--out", tmp_path / "n", *extra),
                timeout=60,
                capture_output=True,
                text=True,
                env={k: v for k, v in os.environ.items() if k != sched.KEY_ENV},
            )
            assert nokey.returncode == 1 and text in nokey.stdout, (nokey.stdout, nokey.stderr)
        # A forged open by hand: refused with the reason.
        _open_by_hand(port, [100], key=b"another key of enough bytes", expect_reply=b"FCSR" + bytes([VERSION, 1]))[
            0
        ].close()
        # A real session by hand; message 0 on a real join, whose bytes an observer captures.
        control, sid = _open_by_hand(port, [1000], key=key)
        real, join = _join(port, sid, key)
        # Replayed on a new connection (another nonce), and a join with a zero MAC (an observer
        # who knows the session id): both refused, neither delivers anything.
        replay = socket.create_connection(("127.0.0.1", port), timeout=5)
        _challenge(replay)
        _finish(replay, join + _frame(0, 0, 1000, bytes(1000)))
        forged, _ = _join(port, sid, None)
        _finish(forged, _frame(0, 0, 1000, bytes(1000)))
        _finish(real, _frame(0, 0, 1000, _pattern(0, 1000)))
        # The real sender, with the key from the environment.
        sent = subprocess.run(
            _cli("send", _scenario(tmp_path, count=10), "--to", to, "--out", tmp_path / "s"),
            timeout=120,
            capture_output=True,
            text=True,
            env={**os.environ, sched.KEY_ENV: KEY.decode()},
        )
        assert sent.returncode == 0 and "10 completed" in sent.stdout, (sent.stdout, sent.stderr)
        control.sendall(b"c")
        out, err = recv.communicate(timeout=60)
        control.close()
    finally:
        _stop(recv)
    info = json.loads((tmp_path / "r" / "receiver.json").read_text())
    c = info["counters"]
    assert (c["forged_opens"], c["forged_joins"], c["replayed_joins"]) == (2, 1, 1), (c, out)
    assert "2 forged opens, 1 forged joins, 1 replayed joins" in out, out
    # The hand-made session's message 0 came once, from the real join, with its bytes.
    assert recv.returncode == 0 and "received 11 messages in 2 sessions, 0 errors" in out, (out, err)
    assert sorted(s["messages"] for s in info["sessions"]) == [1, 10], info["sessions"]
    assert sum(s["delivered"] for s in info["sessions"]) == 11, info["sessions"]


def _raise_descriptors(want: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        top = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_a_sender_completes_while_one_client_holds_the_descriptors_and_another_floods_one_byte_chunks(tmp_path):
    # The receiver may hold 256 descriptors; the hog tries 1,030 joined connections of a
    # session of its own (no key: anyone on loopback may open one), and the flood writes an
    # 8 MiB message one byte per frame.
    if _raise_descriptors(2400) < 2400:
        pytest.skip("this test holds 1,030 connections and needs 2,400 file descriptors")
    port = _free_port()
    recv = _start_receiver(port, "--out", tmp_path / "r", descriptors=256)
    memory = _PeakMemory(recv.pid)
    held, stop_flood, flooded = [], threading.Event(), [0]
    flood_size = 8 << 20

    def flood():
        try:
            control, sid = _open_by_hand(port, [flood_size])
            held.append(control)
            s, _ = _join(port, sid)
            held.append(s)
        except (OSError, AssertionError):
            return  # the flood's own connections closed to make room: flooded stays 0
        deadline = time.monotonic() + 30
        while not stop_flood.is_set() and flooded[0] < flood_size and time.monotonic() < deadline:
            batch = b"".join(_frame(0, i, flood_size, bytes([i & 0xFF])) for i in range(flooded[0], flooded[0] + 2048))
            try:
                s.sendall(batch)
            except OSError:
                return
            flooded[0] += 2048

    def beat(control):
        # The hog's session stays open: a heartbeat a second.
        while not stop_flood.wait(1.0):
            try:
                control.sendall(b"h")
            except OSError:
                return

    flooder = threading.Thread(target=flood, daemon=True)
    try:
        hog, hog_sid = _open_by_hand(port, [1000] * 1000)
        held.append(hog)
        threading.Thread(target=beat, args=(hog,), daemon=True).start()
        deadline = time.monotonic() + 30
        for _ in range(1030):
            if time.monotonic() > deadline:
                break
            try:
                held.append(_join(port, hog_sid)[0])
            except (OSError, AssertionError):
                pass  # closed to make room before its challenge
        flooder.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        sent = subprocess.run(
            _cli("send", _scenario(tmp_path, count=10), "--to", f"127.0.0.1:{port}", "--out", tmp_path / "s"),
            timeout=120,
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - t0
        stop_flood.set()
        flooder.join(timeout=10)
        recv.send_signal(signal.SIGTERM)
        out, err = recv.communicate(timeout=30)
    finally:
        stop_flood.set()
        peak = memory.stop()
        for s in held:
            s.close()
        _stop(recv)
    assert recv.returncode == 130, (out, err)
    info = json.loads((tmp_path / "r" / "receiver.json").read_text())
    assert sent.returncode == 0 and "10 completed" in sent.stdout, (sent.stdout, sent.stderr, info, out)
    real = [s for s in info["sessions"] if s["messages"] == 10]
    assert len(real) == 1 and real[0]["delivered"] == 10, info["sessions"]
    # Its own accounting: the flood's message reserves its size and bookkeeping, however small
    # its chunks (1.13 B per byte; 95 B per one-byte chunk before), the real messages theirs.
    c = info["counters"]
    assert c["peak_reserved_bytes"] <= 1.13 * flood_size + 16 * (1 << 20), c
    assert c["evicted"] > 0 or c["accept_errors"] > 0, c
    # Its resident memory, read by itself and from outside.
    assert 0 < info["peak_rss_bytes"] <= 300 << 20, info["peak_rss_bytes"]
    assert 0 < peak <= 300, f"the receiver peaked at {peak:.0f} MB"
    assert flooded[0] >= 20_000, flooded
    # The hog's 1,000 messages, none started, fail as one row when its session is abandoned.
    got = pd.read_parquet(tmp_path / "r" / "received.parquet")
    hog_rows = got[(got["kind"] == "failed") & (got["last_message"] > got["message"])]
    assert list(zip(hog_rows["message"], hog_rows["last_message"])) == [(0, 999)], hog_rows
    assert "none of their bytes arrived when the receiver was interrupted" in hog_rows["error"].iloc[0]
    print(
        f"send among 1,030 hogging joins and a one-byte flood ({flooded[0]} B): {took:.1f} s, peak {peak:.0f} MB, {c}"
    )


def test_without_a_key_recv_listens_on_loopback_only(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != sched.KEY_ENV}
    p = subprocess.run(
        _cli("recv", "--listen", "0.0.0.0:1", "--timeout", 5), capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert "loopback only" in lines[0] and "0.0.0.0:1" in lines[0] and "--key-file PATH or FCTLAB_SCHED_KEY" in lines[0]


@pytest.mark.parametrize(
    "case, text",
    [
        ("missing", "no such key file"),
        ("empty", "empty (a key has at least 16 bytes)"),
        ("short", "5 bytes, a key has at least 16"),
        ("directory", "is a directory, expected a key file"),
    ],
)
def test_a_bad_key_file_is_one_line_naming_it(tmp_path, capsys, monkeypatch, case, text):
    path = {
        "missing": lambda: tmp_path / "nothing.key",
        "empty": lambda: _key_file(tmp_path, b"\n"),
        "short": lambda: _key_file(tmp_path, b"short\n"),
        "directory": lambda: tmp_path,
    }[case]()
    monkeypatch.delenv(sched.KEY_ENV, raising=False)
    for argv in (
        ["sched", "recv", "--listen", "127.0.0.1:1", "--key-file", str(path)],
        [
            "sched",
            "send",
            str(_scenario(tmp_path)),
            "--to",
            "127.0.0.1:1",
            "--key-file",
            str(path),
            "--out",
            str(tmp_path / "o"),
        ],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--key-file {path}: {text}" in err[0], err


def test_a_bad_key_in_the_environment_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(sched.KEY_ENV, "too short")
    assert main(["sched", "recv", "--listen", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "FCTLAB_SCHED_KEY: 9 bytes, a key has at least 16" in err, err
    monkeypatch.setenv(sched.KEY_ENV, "a key from the environment")
    assert sched.load_key() == b"a key from the environment"
    assert sched.load_key(_key_file(tmp_path)) == KEY.strip()
