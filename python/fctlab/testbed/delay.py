"""A delay line: forwards Ethernet frames between two interfaces after a fixed delay.

The kernels the testbed targets have no netem, so a link's propagation delay is emulated
in user space: a node ``dl`` sits in the middle of the link with two veths, and this
program (run inside that node's namespace as its own process) reads every frame arriving
on one veth with an AF_PACKET socket and sends it out of the other ``delay`` seconds after
it arrived, in arrival order (no reordering, no loss unless a socket buffer overflows,
which is counted). Both directions are handled, each with its own FIFO. Frames are read and
written with their virtio-net header (PACKET_VNET_HDR), which carries the checksum-offload
state: without it, TCP segments whose checksum the sender left to the (virtual) hardware
would leave the delay line with a wrong checksum.

    python -m fctlab.testbed.delay NAMESPACE DEV_A DEV_B DELAY_SECONDS

The process runs until it receives SIGTERM or SIGINT (or its parent dies), then prints one
JSON line with its counters: frames forwarded per direction, the largest lateness of a
frame past its due time, and receive-buffer overflows.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_VNET_HDR = 15
PR_SET_PDEATHSIG = 1
BUF_BYTES = 8 << 20
MAX_FRAME = 65536


def _open(dev: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # Frames come and go with their virtio-net header, so a packet whose checksum the
    # sender left to offload (CHECKSUM_PARTIAL on veths) keeps that state when sent on.
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUF_BYTES)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUF_BYTES)
    s.bind((dev, 0))
    s.setblocking(False)
    return s


def _drops(s: socket.socket) -> int:
    try:
        raw = s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        return struct.unpack("II", raw)[1]
    except OSError:
        return 0


def serve(dev_a: str, dev_b: str, delay_s: float, stop) -> dict:
    a, b = _open(dev_a), _open(dev_b)
    peer = {a.fileno(): b, b.fileno(): a}
    queues = {a.fileno(): collections.deque(), b.fileno(): collections.deque()}
    counts = {dev_a: 0, dev_b: 0}
    names = {a.fileno(): dev_a, b.fileno(): dev_b}
    late_max = 0.0
    drops = 0
    mono = time.monotonic
    socks = [a, b]
    try:
        while not stop():
            now = mono()
            due = min((q[0][0] for q in queues.values() if q), default=None)
            timeout = 0.05 if due is None else max(0.0, due - now)
            ready, _, _ = select.select(socks, [], [], timeout)  # microsecond timeout, unlike epoll
            for s in ready:
                q = queues[s.fileno()]
                while True:
                    try:
                        frame, addr = s.recvfrom(MAX_FRAME)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:  # our own transmissions on this device
                        continue
                    q.append((mono() + delay_s, frame))
            now = mono()
            for fd, q in queues.items():
                out = peer[fd]
                while q and q[0][0] <= now:
                    t_due, frame = q.popleft()
                    late_max = max(late_max, now - t_due)
                    try:
                        out.send(frame)
                        counts[names[fd]] += 1
                    except (BlockingIOError, OSError):
                        drops += 1
    finally:
        drops += _drops(a) + _drops(b)
        a.close()
        b.close()
    return {"forwarded_from": counts, "late_max_s": round(late_max, 6), "drops": drops}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4:
        print("usage: python -m fctlab.testbed.delay NAMESPACE DEV_A DEV_B DELAY_SECONDS", file=sys.stderr)
        return 2
    ns, dev_a, dev_b, delay = argv
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        from .netns import enter

        enter(ns)
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
        print("ready", flush=True)
        stats = serve(dev_a, dev_b, float(delay), lambda: bool(stopping))
    except Exception as e:  # noqa: BLE001 - one line for the parent
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
