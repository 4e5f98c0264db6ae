"""ATCP as a BPF struct_ops congestion control (fctlab.kernel).

The pure-Python parts (parameters, .rodata patching, error messages) always run. The parts
that register the congestion control need root, clang/bpftool/libbpf-dev and a kernel that
permits struct_ops; without them they skip and say which is missing. Every registration is
removed again in a finally block. Traffic stays on loopback.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import threading
import time

import pytest

from fctlab import kernel as K


_UNAVAILABLE: list = []


def _skip_reason() -> str | None:
    """Why this machine cannot register BPF congestion controls (asked once), or None. When
    it can, a failing registration is a failure of the program, never a skip."""
    if not _UNAVAILABLE:
        _UNAVAILABLE.append(K.bpf_unavailable())
    return _UNAVAILABLE[0]


def _load(params=None):
    """Registers the instances; a rejection fails the test with the kernel's log."""
    try:
        return K.load(params)
    except K.KernelError as e:
        pytest.fail(f"{e}\n--- bpftool / verifier output ---\n{e.log[-6000:]}", pytrace=False)


# ---------------------------------------------------------------- no root needed


def test_parse_bytes():
    assert K.parse_bytes("10MB") == 10_000_000
    assert K.parse_bytes("500KB") == 500_000
    assert K.parse_bytes("1MiB") == 1 << 20
    assert K.parse_bytes("1234") == 1234
    with pytest.raises(ValueError):
        K.parse_bytes("ten MB")


def test_params_pack_roundtrip():
    p = K.AtcpParams(
        function="linear",
        w_high=2.5,
        w_low=0.5,
        threshold_low=1000,
        threshold_high=5000,
        w_fixed=(1, 2, 4),
        halving="per-window",
    )
    raw = p.pack()
    assert len(raw) == struct.calcsize(K.PARAMS_FORMAT) == 56
    q = K.AtcpParams.unpack(raw)
    assert q.function == "linear" and q.w_high == 2.5 and q.w_low == 0.5
    assert q.halving == "per-window" and K.AtcpParams.unpack(K.AtcpParams().pack()).halving == "per-episode"
    assert (q.threshold_low, q.threshold_high) == (1000, 5000)
    assert q.w_fixed == (1.0, 2.0, 4.0)


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(function="exponential"), "unknown weight function"),
        (dict(halving="never"), "unknown halving rule"),
        (dict(w_high=0), "w_high"),
        (dict(function="linear", threshold_low=10, threshold_high=5), "threshold_high"),
        (dict(w_fixed=(1, 2)), "three weights"),
    ],
)
def test_params_rejected(kw, msg):
    with pytest.raises(ValueError, match=msg):
        K.AtcpParams(**kw).validate()


def test_cli_bad_parameter_exits_2(capsys):
    assert K.main_kernel(["load", "--threshold", "lots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fctlab kernel load: error:") and "\n" not in err


def test_cli_not_root_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert K.main_kernel(["load"]) == 2
    assert "needs root" in capsys.readouterr().err


def test_cli_missing_tool_names_package(monkeypatch, capsys):
    import shutil

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "bpftool" else real(t))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert K.main_kernel(["load"]) == 2
    assert "bpftool (apt package bpftool)" in capsys.readouterr().err


def test_patch_params_writes_rodata(tmp_path):
    if K.missing_tools():
        pytest.skip("missing " + ", ".join(K.missing_tools()))
    obj = K.build()
    p = K.AtcpParams(threshold=1234567, w_fixed=(1, 2, 5))
    out = tmp_path / "patched.o"
    K.patch_params(obj, p, out)
    data = out.read_bytes()
    assert len(data) == obj.stat().st_size
    assert p.pack() in data
    assert K.AtcpParams().pack() in obj.read_bytes()  # the source object is untouched
    # the bytes land exactly on the symbol: read back through the object's own symbol table
    from elftools.elf.elffile import ELFFile

    with open(out, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name(K.PARAMS_SYMBOL)[0]
        rodata = elf.get_section(sym["st_shndx"])
        at = rodata["sh_offset"] + sym["st_value"]
    assert data[at : at + sym["st_size"]] == p.pack()
    # objects that are not what the loader expects are named, not patched
    with pytest.raises(K.KernelError, match="not a valid ELF object"):
        K.patch_params(_write(tmp_path / "junk.o", b"not an object"), p, tmp_path / "x.o")
    with pytest.raises(K.KernelError, match="nosuch not found"):
        K.patch_symbol(obj, "nosuch", b"x", tmp_path / "x.o")
    with pytest.raises(K.KernelError, match="disagree"):
        K.patch_symbol(obj, K.PARAMS_SYMBOL, p.pack() + b"\0", tmp_path / "x.o")


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- root + BPF


@pytest.fixture
def loaded():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    if K.registered():
        pytest.skip(f"fctlab instances already registered by someone else: {K.registered()}")
    params = K.AtcpParams(threshold=4_000_000, w_fixed=(1, 2, 3))
    try:
        names = _load(params)
        yield names, params
    finally:
        if K.registered():
            K.unload()


def _transfer(cc: str, nbytes: int, timeout_s: float = 20.0):
    """Sends nbytes of a pseudo-random pattern over loopback with congestion control `cc`.
    Returns (sender cc, receiver byte count, digest match, seconds)."""
    block = hashlib.sha256(cc.encode()).digest() * 2048  # 64 KiB
    want = hashlib.sha256()
    result = {}
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        srv.settimeout(timeout_s)
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)

        def receive():
            conn, _ = srv.accept()
            with conn:
                conn.settimeout(timeout_s)
                h, n = hashlib.sha256(), 0
                while True:
                    b = conn.recv(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    n += len(b)
                result["n"], result["digest"] = n, h.digest()
                conn.sendall(b"A")

        th = threading.Thread(target=receive, daemon=True)
        th.start()
        cli.settimeout(timeout_s)
        cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        cli.connect(srv.getsockname())
        used = K.socket_congestion(cli)
        t0 = time.monotonic()
        left = nbytes
        while left > 0:
            chunk = block[: min(len(block), left)]
            cli.sendall(chunk)
            want.update(chunk)
            left -= len(chunk)
        cli.shutdown(socket.SHUT_WR)
        assert cli.recv(1) == b"A"
        secs = time.monotonic() - t0
        th.join(timeout_s)
        assert not th.is_alive()
        return used, result.get("n"), result.get("digest") == want.digest(), secs
    finally:
        cli.close()
        srv.close()


def test_load_registers_all_instances(loaded):
    names, params = loaded
    assert names == list(K.INSTANCES)
    avail = K.available_congestion_controls()
    for n in K.INSTANCES:
        assert n in avail
    got = K.loaded_params()
    assert got is not None and got.threshold == params.threshold and got.w_fixed == (1.0, 2.0, 3.0)


@pytest.mark.parametrize("cc", ["atcp", "atcp_w2"])
def test_transfer_20mb_over_loopback(loaded, cc):
    used, n, same, secs = _transfer(cc, 20_000_000)
    assert used == cc
    assert n == 20_000_000
    assert same
    assert secs < 20


def test_status_cli(loaded, capsys):
    assert K.main_kernel(["status"]) == 0
    out = capsys.readouterr().out
    assert "atcp, atcp_w1, atcp_w2, atcp_w3" in out and "T=4000000 B" in out


def test_unload_removes_and_frees():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    if K.registered():
        pytest.skip(f"fctlab instances already registered by someone else: {K.registered()}")
    # maps unregistered earlier but still held by closing sockets of earlier runs (e.g. in a
    # namespace the kernel is still tearing down) are not this test's
    earlier = [m["id"] for m in K.struct_ops_maps()]
    try:
        _load()
        used, n, same, _ = _transfer("atcp_w1", 2_000_000)
        assert (used, n, same) == ("atcp_w1", 2_000_000, True)
        assert sorted(K.unload()) == sorted(K.INSTANCES)
        # the names go at once...
        assert not set(K.INSTANCES) & set(K.available_congestion_controls())
        # ...the maps when the last socket using them is gone (bounded poll)
        assert K.wait_freed(15.0, ignore=earlier), f"struct_ops maps still held: {K.struct_ops_maps()}"
        with socket.socket() as s, pytest.raises(OSError):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"atcp")
    finally:
        if K.registered():
            K.unload()


def test_weight_at_follows_the_weight_size_function():
    step = K.AtcpParams(threshold=1000)
    assert (step.weight_at(1000), step.weight_at(1001)) == (3.0, 1.0)
    lin = K.AtcpParams(function="linear", w_high=3, w_low=1, threshold_low=100, threshold_high=300)
    assert [lin.weight_at(b) for b in (0, 100, 200, 300, 10**9)] == [3, 3, 2.0, 1, 1]


def test_dctcp_registers_carries_a_transfer_and_unregisters_alone():
    """kernel/dctcp.bpf.c passes the verifier, carries 2 MB over loopback (ECN negotiated by
    TCP_CONG_NEEDS_ECN), shows in `fctlab kernel status`, and goes again without touching the
    ATCP instances."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    if K.dctcp_registered():
        pytest.skip(f"{K.DCTCP} already registered by someone else")
    try:
        K.load_dctcp()
        assert K.DCTCP in K.available_congestion_controls()
        assert K.DCTCP in K.status()["registered"]
        used, n, same, _ = _transfer(K.DCTCP, 2_000_000)
        assert (used, n, same) == (K.DCTCP, 2_000_000, True)
        atcp_before = K.registered()
        K.unload_dctcp()
        assert not K.dctcp_registered() and K.registered() == atcp_before
    finally:
        if K.dctcp_registered():
            K.unload_dctcp()
