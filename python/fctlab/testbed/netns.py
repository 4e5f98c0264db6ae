"""Network namespaces, veth links, bridges and TBF queues for the testbed.

Every object the testbed creates lives inside a namespace named ``fctlab-<pid>-<node>``;
deleting those namespaces (``Network.destroy``) removes the veths, bridges and qdiscs with
them, so the host's own network is never touched. Threads enter a namespace with setns(2)
(``enter``), so one process can run the senders and receivers of every host.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import kernel as K
from .delay import binary as delay_binary
from . import priority
from .ecn import Marker, Threshold, marks
from .shell import TestbedError, ip, run  # noqa: F401 (TestbedError: imported from here too)

PREFIX = "fctlab-"
NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
ETH_OVERHEAD = 14  # bytes per packet beyond the IP MTU on a veth
MTU = 1500

_libc = ctypes.CDLL(None, use_errno=True)


def enter(ns: str) -> None:
    """Moves the calling thread into network namespace ``ns`` (setns(2))."""
    fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise TestbedError(f"setns({ns}) failed: {os.strerror(e)}")
    finally:
        os.close(fd)


def list_namespaces(prefix: str = PREFIX) -> list[str]:
    p = ip("netns", "list", check=False)
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(prefix)]


def stale_namespaces() -> list[str]:
    """``fctlab-<pid>-*`` namespaces whose creating process is gone."""
    out = []
    for n in list_namespaces():
        m = re.match(r"fctlab-(\d+)-", n)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            out.append(n)
    return out


def delete_namespaces(names: list[str]) -> list[str]:
    """Deletes namespaces; returns those that could not be deleted."""
    failed = []
    for n in names:
        p = ip("netns", "del", n, check=False)
        if p.returncode != 0 and (NETNS_DIR / n).exists():
            failed.append(n)
    return failed


def tbf_args(rate_bps: float, limit_bytes: int) -> list[str]:
    """TBF shaping a link to ``rate_bps`` with a queue of ``limit_bytes``. The bucket holds
    1 ms of traffic (at least 4 full frames): small enough to act as a link, large enough
    for the timer resolution."""
    limit = max(limit_bytes, MTU + ETH_OVERHEAD)
    return ["tbf", "rate", f"{int(rate_bps)}bit", "burst", str(port_burst(rate_bps)), "limit", str(limit)]


def port_burst(rate_bps: float) -> int:
    """A port's token bucket in bytes: 1 ms of traffic, at least 4 full frames."""
    return max(4 * (MTU + ETH_OVERHEAD), int(rate_bps / 8 * 1e-3))


@dataclass
class Port:
    ns: str
    dev: str
    rate_bps: float
    limit_bytes: int
    link: str  # "a->b", direction of traffic leaving through this port
    ecn: object = None  # ecn.Threshold when the port marks CE, else None
    bands: int = 1  # 1: a TBF; more: a strict-priority HTB (priority.py)


#: Interface indexes of the testbed's veths start above this (each namespace has its own).
VETH_INDEX_BASE = 1000


@dataclass
class Network:
    """Namespaces and links of one run. Use as a context manager: ``destroy`` always runs."""

    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}-")
    namespaces: list = field(default_factory=list)
    ports: list = field(default_factory=list)
    addresses: dict = field(default_factory=dict)
    delay_lines: list = field(default_factory=list)  # (node, Popen) of running delay lines
    delay_stats: dict = field(default_factory=dict)  # node -> counters printed by its delay line
    veths: int = 0  # veth pairs made so far (their interface indexes follow VETH_INDEX_BASE)

    def ns(self, node: str) -> str:
        return self.tag + node

    def add_node(self, node: str, *, switch: bool) -> None:
        name = self.ns(node)
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")
        if switch:
            ip("-n", name, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
            ip("-n", name, "link", "set", "br0", "up")

    def add_link(
        self,
        a: str,
        b: str,
        dev_a: str,
        dev_b: str,
        *,
        a_switch: bool,
        b_switch: bool,
        rate_a_bps: float,
        limit_a: int,
        rate_b_bps: float,
        limit_b: int,
        marker=None,
        ecn_threshold=None,
        bands: int = 1,
        nic_bands: int = 1,
        port_program=None,
    ) -> None:
        """A veth between nodes a and b, created directly inside their namespaces. Each end's
        egress gets a TBF: the output port of that node toward the other. With ``marker``
        (an ecn.Marker) and ``ecn_threshold``, switch ports also mark CE above the threshold.
        Switch ports with ``bands`` > 1 (host ends: ``nic_bands``) are strict-priority ports
        instead (``priority.py``), whose shared buffer ``marker`` keeps. ``port_program(ns, dev,
        rate_bps)``, when given, runs for each switch port after its queue is built.

        Segmentation offload is turned off on both ends (``gso_max_segs 1``): TCP then hands
        the stack wire-sized packets, so queues hold, drop and mark packets as a switch
        does, instead of 64 KB bursts that the TBF splits on arrival."""
        na, nb = self.ns(a), self.ns(b)
        # The two ends get different interface indexes. Ends of equal index (likely, each
        # namespace numbering its own from 2) make the kernel treat their carrier change as
        # not urgent (linkwatch_urgent_event: ifindex == iflink), which it applies up to 1 s
        # later: until then the bridge port stays disabled and the first frames are lost.
        self.veths += 1
        ia, ib = VETH_INDEX_BASE + 2 * self.veths, VETH_INDEX_BASE + 2 * self.veths + 1
        peer = ["peer", "name", dev_b, "index", str(ib), "netns", nb]
        ip("link", "add", dev_a, "index", str(ia), "netns", na, "type", "veth", *peer)
        for n, dev, sw, rate, limit, to in (
            (na, dev_a, a_switch, rate_a_bps, limit_a, b),
            (nb, dev_b, b_switch, rate_b_bps, limit_b, a),
        ):
            if sw:
                ip("-n", n, "link", "set", dev, "master", "br0")
            ip("-n", n, "link", "set", dev, "mtu", str(MTU), "gso_max_segs", "1", "up")
            if rate is None:  # a delay line's end: no queue of its own
                continue
            n_bands = bands if sw else nic_bands
            ecn = ecn_threshold if sw and marker is not None else None
            self._add_queue(n, dev, rate, limit, n_bands, ecn, marker)
            if sw and port_program is not None:
                port_program(n, dev, rate)
            node_from = a if n == na else b
            self.ports.append(Port(n, dev, rate, limit, f"{node_from}->{to}", ecn, n_bands))

    @staticmethod
    def _add_queue(ns: str, dev: str, rate: float, limit: int, bands: int, ecn, marker) -> None:
        """The output port's queue: a TBF, or a strict-priority HTB whose shared buffer (and
        ECN threshold ``ecn``, if any) the marker keeps."""
        if bands <= 1:
            run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate, limit)])
            if ecn is not None:
                marker.attach(ns, dev, ecn)
            return
        if marker is None:
            raise TestbedError("a strict-priority port needs the BPF marker for its shared buffer")
        limit = max(limit, MTU + ETH_OVERHEAD)
        priority.install(ns, dev, rate, limit, bands, port_burst(rate), MTU + ETH_OVERHEAD)
        t = ecn or Threshold()
        marker.attach(ns, dev, Threshold(t.pkts, t.bytes, limit_bytes=limit))

    def add_delay_line(self, node: str, dev_a: str, dev_b: str, delay_s: float) -> None:
        """Starts a delay line (testbed/delayline.c) forwarding between two veths of
        ``node`` with ``delay_s`` each way; it runs until ``destroy``."""

        cmd = [str(delay_binary()), self.ns(node), dev_a, dev_b, str(int(round(delay_s * 1e9)))]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.delay_lines.append((node, p))
        line = p.stdout.readline().strip()  # "ready" once its sockets are bound
        if line != "ready":
            err = (line + " " + (p.stderr.read() if p.poll() is not None else "")).strip()
            raise TestbedError(f"delay line in {node} did not start: {err.splitlines()[-1] if err else 'no output'}")

    def stop_delay_lines(self) -> None:
        for node, p in self.delay_lines:
            if p.poll() is None:
                p.terminate()
            try:
                out, _ = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            for line in (out or "").splitlines()[::-1]:
                try:
                    self.delay_stats[node] = json.loads(line)
                    break
                except ValueError:
                    continue
        self.delay_lines = []

    def relabel_ports(self, via: str, a: str, b: str) -> None:
        """Names the ports of a link a - via - b as ports of the link a - b."""
        for p in self.ports:
            if p.link == f"{a}->{via}":
                p.link = f"{a}->{b}"
            elif p.link == f"{b}->{via}":
                p.link = f"{b}->{a}"

    def set_sysctls(self, node: str, values: dict) -> None:
        """Sets per-namespace sysctls (``{"net.ipv4.tcp_ecn": "1"}``) inside ``node``'s
        namespace, with one command."""
        script = "; ".join(f"echo {v} > /proc/sys/{k.replace('.', '/')}" for k, v in values.items())
        run(["ip", "netns", "exec", self.ns(node), "sh", "-ec", script])

    def add_address(self, host: str, dev: str, addr: str, prefix: int) -> None:
        ip("-n", self.ns(host), "addr", "add", f"{addr}/{prefix}", "dev", dev)
        self.addresses[host] = addr

    def port_stats(self) -> dict:
        """Per port: bytes and packets sent, drops (from ``tc -s -j qdisc``; on a priority
        port also the marker's drops at the shared buffer)."""
        out = {}
        for p in self.ports:
            r = run(["tc", "-n", p.ns, "-s", "-j", "qdisc", "show", "dev", p.dev], check=False)
            root = "tbf" if p.bands <= 1 else "htb"
            try:
                q = next(x for x in json.loads(r.stdout or "[]") if x.get("kind") == root)
                out[p.link] = {
                    "bytes": q.get("bytes", 0),
                    "packets": q.get("packets", 0),
                    "drops": q.get("drops", 0),
                    "port": p,
                }
            except (ValueError, StopIteration):
                out[p.link] = {"bytes": 0, "packets": 0, "drops": 0, "port": p}
            out[p.link]["ecn_marks"] = 0
            if p.ecn is not None or p.bands > 1:
                m = marks(p.ns, p.dev)
                if p.ecn is not None:
                    out[p.link]["ecn_marks"] = m["marked"] if m else None
                if p.bands > 1 and m:
                    out[p.link]["drops"] += m["dropped"]
        return out

    def destroy(self) -> list[str]:
        """Deletes every namespace of this run (and with them their links and qdiscs)."""
        self.stop_delay_lines()  # a process inside a namespace would keep it alive
        failed = delete_namespaces(list(reversed(self.namespaces)))
        # anything left under our tag, e.g. from an interrupted add_node
        failed += delete_namespaces([n for n in list_namespaces(self.tag) if n not in failed])
        self.namespaces = []
        return failed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False


def check_machine() -> list[str]:
    """Problems that stop the testbed on this machine (empty when it can run)."""
    probs = []
    if os.geteuid() != 0:
        return ["needs root (network namespaces, veth and qdiscs need CAP_NET_ADMIN)"]
    for tool, pkg in (("ip", "iproute2"), ("tc", "iproute2")):
        if shutil.which(tool) is None:
            probs.append(f"{tool} not found (apt package {pkg})")
    if probs:
        return probs
    net = Network(tag=f"{PREFIX}{os.getpid()}-check-")
    try:
        net.add_node("sw", switch=True)
        net.add_node("h", switch=False)
        net.add_link(
            "sw",
            "h",
            "p0",
            "eth0",
            a_switch=True,
            b_switch=False,
            rate_a_bps=100e6,
            limit_a=100_000,
            rate_b_bps=100e6,
            limit_b=100_000,
        )
    except TestbedError as e:
        probs.append(f"cannot build a namespace network: {e}")
    finally:
        left = net.destroy()
        if left:
            probs.append(f"could not delete namespaces {', '.join(left)}")
    return probs


def check_features() -> dict:
    """What beyond plain TBF queues works here, tried for real in a throw-away namespace pair:
    ``{"ecn": ..., "priority": ..., "delay": ..., "atcp": ...}``, each None (works) or the
    reason it does not. ATCP is only checked for its build tools: registering it would affect
    the whole host."""
    out = {"ecn": None, "priority": None, "delay": None, "atcp": None}
    miss = K.missing_tools()
    if miss:
        out["atcp"] = out["ecn"] = "missing " + ", ".join(miss)
    net = Network(tag=f"{PREFIX}{os.getpid()}-feat-")
    marker = None
    try:
        net.add_node("a", switch=True)
        net.add_node("dl", switch=False)
        net.add_node("b", switch=True)
        net.add_link(
            "a",
            "dl",
            "p0",
            "a0",
            a_switch=True,
            b_switch=False,
            rate_a_bps=100e6,
            limit_a=100_000,
            rate_b_bps=None,
            limit_b=0,
        )
        net.add_link(
            "dl",
            "b",
            "a1",
            "p0",
            a_switch=False,
            b_switch=True,
            rate_a_bps=None,
            limit_a=0,
            rate_b_bps=100e6,
            limit_b=100_000,
        )
        if out["ecn"] is None:
            try:
                marker = Marker()
                marker.attach(net.ns("a"), "p0", Threshold(pkts=20))
            except TestbedError as e:
                out["ecn"] = str(e)
        out["priority"] = out["ecn"]
        if marker is not None and out["ecn"] is None:
            try:  # the port toward dl as a strict-priority port
                net._add_queue(net.ns("b"), "p0", 100e6, 100_000, 2, None, marker)
            except TestbedError as e:
                out["priority"] = str(e)
        try:
            net.add_delay_line("dl", "a0", "a1", 0.001)
        except TestbedError as e:
            out["delay"] = str(e)
    except TestbedError as e:
        for k in ("ecn", "priority", "delay"):
            out[k] = out[k] or str(e)
    finally:
        net.destroy()
        if marker is not None:
            marker.close()
    return out
