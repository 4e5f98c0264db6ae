"""The switch-port programs on hand-made frames, through BPF_PROG_TEST_RUN (``bpftool prog
run``): kernel/rcp_port.bpf.c lowers the feedback option's rate to the port's and keeps the
TCP checksum valid; it leaves echoes, lower rates, other protocols, segments without the
option and malformed options alone, counted, and never drops one. Needs root and BPF; a
machine without them skips saying which, and a verifier rejection fails with the log."""

from __future__ import annotations

import struct

import pytest

from fctlab import kernel as K
from fctlab.testbed.feedback import PORT_STATS, LoadedProgram, PortPrograms, RcpParams, option, parse_option

SRC, DST = bytes([10, 88, 0, 1]), bytes([10, 88, 0, 2])
TIMESTAMPS = bytes([1, 1, 8, 10]) + struct.pack("!II", 12345, 0)  # NOP NOP TS, as Linux sends it


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(options: bytes, payload: bytes = b"x" * 100) -> bytes:
    """Ethernet, IPv4 and TCP with these option bytes (padded to 4) and a valid checksum."""
    options += b"\0" * (-len(options) % 4)
    doff = (20 + len(options)) // 4
    tcp = struct.pack("!HHIIBBHHH", 40000, 5001, 1000, 1, doff << 4, 0x18, 65535, 0, 0) + options + payload
    pseudo = SRC + DST + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, SRC, DST)
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp


def _tcp_ok(frame: bytes) -> bool:
    tcp = frame[34:]
    return _csum(SRC + DST + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) == 0


def _options(frame: bytes) -> bytes:
    doff = frame[34 + 12] >> 4
    return frame[34 + 20 : 34 + doff * 4]


@pytest.fixture(scope="module")
def port():
    why = K.bpf_unavailable()
    if why:
        pytest.skip(f"running BPF port programs needs BPF: {why}")
    ports = PortPrograms(RcpParams)
    # 100 Mbps, 1 ms initial RTT: a fresh port offers 0.05 C = 5 Mbps, raised to one packet per
    # RTT, 12 Mbps
    obj = ports.object(RcpParams(capacity_bps=100_000_000))
    try:
        with LoadedProgram(obj) as prog:
            yield prog
    except K.KernelError as e:
        pytest.fail(f"{e}\n{e.log}")  # a rejection is a failure, with the verifier's log
    finally:
        ports.close()


def test_a_data_segment_gets_the_ports_rate_with_a_valid_checksum(port):
    before = _frame(TIMESTAMPS + option(rtt_ns=200_000))
    after = port.run(before)
    assert len(after) == len(before) and _tcp_ok(after)
    assert parse_option(_options(before))["rate_kbps"] == 0xFFFFFFFF
    got = parse_option(_options(after))
    assert got["rate_kbps"] == 12_000 and got["offset"] == 12, got
    assert after[:34] == before[:34]  # only the option's rate and the checksum change


@pytest.mark.parametrize(
    "what, opts",
    [
        ("a lower rate upstream", TIMESTAMPS + option(rate_kbps=5_000)),
        ("an echo on an ACK", TIMESTAMPS + option(echo=True, echo_kbps=9_000)),
        ("another protocol's option", TIMESTAMPS + option("racs")),
        ("no option", TIMESTAMPS),
        ("the option shortened to 16 bytes", TIMESTAMPS + bytes([253, 16]) + option()[2:16]),
        ("a length running past the header", TIMESTAMPS + bytes([253, 40]) + option()[2:]),
        ("a zero length", bytes([253, 0]) + option()[2:]),
        ("a misaligned option", bytes([1, 1]) + option() + bytes([0, 0])),
        ("random bytes", bytes(range(7, 47))),
    ],
)
def test_segments_it_must_not_stamp_pass_unchanged(port, what, opts):
    before = _frame(opts)
    assert port.run(before) == before, what


def test_every_case_is_counted(port):
    c = port.counters("fb_port_stats", PORT_STATS)
    assert c["seen"] >= 10 and c["lowered"] >= 1 and c["echo"] >= 1 and c["data"] >= 2, c
    assert c["no_option"] >= 1 and c["other_protocol"] >= 1 and c["malformed"] >= 4, c
