"""The part of a scenario file the testbed uses: topology, rates, buffers and flows."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .netns import ETH_OVERHEAD, MTU, TestbedError

_RATE = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}
_TIME = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_SIZE = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
FRAME = MTU + ETH_OVERHEAD
#: Shorter one-way delays are not emulated: a veth path has about 20-50 us of its own.
MIN_EMULATED_DELAY_S = 100e-6


def _num_unit(key: str, v, units: dict, what: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]+)\s*", str(v))
    if not m or m.group(2).lower() not in units:
        raise TestbedError(f"`{key}`: expected {what}, got {v!r}")
    return float(m.group(1)) * units[m.group(2).lower()]


def rate_bps(key: str, v) -> float:
    return _num_unit(key, v, _RATE, "a rate such as 100Mbps")


def seconds(key: str, v) -> float:
    return _num_unit(key, v, _TIME, "a time such as 10ms")


def size_bytes(key: str, v) -> int:
    return int(round(_num_unit(key, v, _SIZE, "a size such as 10MB")))


def buffer_bytes(key: str, v) -> int:
    """``"100pkt"`` -> 100 full frames; ``"150KB"`` -> bytes."""
    m = re.fullmatch(r"\s*([0-9]+)\s*pkts?\s*", str(v))
    if m:
        return int(m.group(1)) * FRAME
    return size_bytes(key, v)


@dataclass
class Link:
    a: str
    b: str
    rate_a: float  # a -> b
    rate_b: float  # b -> a
    buf_a: int  # output port of a toward b, bytes
    buf_b: int
    level: str
    delay_s: float


@dataclass
class Flow:
    flow_id: int
    src: str
    dst: str
    size: Optional[int]
    start_s: float
    protocol: str  # as in the scenario: "tcp" or "atcp"
    cc: str = ""  # kernel congestion control name
    weight_function: str = ""
    params: dict = field(default_factory=dict)
    tag: str = ""
    group: str = ""
    deadline_s: Optional[float] = None
    ecn: bool = False  # ECN-capable (the sending host's net.ipv4.tcp_ecn = 1)


@dataclass
class Plan:
    name: str
    seed: int
    topology: str
    hosts: list
    switches: list
    links: list
    flows: list
    stop_time_s: Optional[float]
    notes: list = field(default_factory=list)
    ecn_threshold: object = None  # ecn.Threshold for queue = "ecn", else None (drop-tail)
    cwnd_interval_s: Optional[float] = None  # [monitor] cwnd_interval
    cwnd_flows: Optional[list] = None  # [monitor] cwnd_flows (None: every flow)
    delay_s: float = 0.0  # one-way delay emulated on the bottleneck link by a delay line


def apply_overrides(doc: dict, overrides: Sequence[str]) -> dict:
    """``network.link_rate="1Gbps"``, ``flows.0.size="1MB"``, ``seed=2`` (values in TOML syntax;
    a bare word is taken as a string)."""
    for ov in overrides:
        if "=" not in ov:
            raise TestbedError(f"--set {ov!r}: expected key=value")
        key, raw = ov.split("=", 1)
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        parts = key.strip().split(".")
        cur = doc
        for i, p in enumerate(parts[:-1]):
            if isinstance(cur, list):
                cur = cur[int(p)]
            else:
                cur = cur.setdefault(p, [] if parts[i + 1].isdigit() else {})
        last = parts[-1]
        if isinstance(cur, list):
            cur[int(last)] = value
        else:
            cur[last] = value
    return doc


#: The testbed opens two threads and two sockets per flow.
MAX_FLOWS = 1000


def _scenario_flows(path: Path, overrides: Sequence[str]) -> list[dict]:
    """The scenario's flows as the simulator generates them (explicit flows and workloads,
    with the scenario's seed), from fctlab._core.flows."""
    from .. import _core

    try:
        return _core.flows(Path(path).read_text(encoding="utf-8"), str(path), "toml", list(overrides))
    except _core.ScenarioError as e:
        raise TestbedError(str(e)) from None


def load_plan(path: Path, overrides: Sequence[str] = ()) -> Plan:
    doc = apply_overrides(tomllib.loads(Path(path).read_text(encoding="utf-8")), overrides)
    net = doc.get("network", {})
    topo = net.get("topology")
    notes = []
    queue = net.get("queue", "droptail")
    ecn_threshold = None
    if queue == "ecn":
        from .ecn import Threshold

        if "ecn_threshold" not in net:
            raise TestbedError("network.ecn_threshold: queue = \"ecn\" needs the marking threshold (e.g. \"20pkt\")")
        raw = net["ecn_threshold"]
        m = re.fullmatch(r"\s*([0-9]+)\s*pkts?\s*", str(raw))
        ecn_threshold = Threshold(pkts=int(m.group(1))) if m else Threshold(bytes=size_bytes("network.ecn_threshold", raw))
    elif queue != "droptail":
        raise TestbedError(f"network.queue = {queue!r}: the testbed has drop-tail (TBF) and ecn (TBF with a BPF marker) queues")

    link_rate = rate_bps("network.link_rate", net.get("link_rate", "1Gbps"))
    link_delay = seconds("network.link_delay", net.get("link_delay", "10us"))
    host_rate = rate_bps("network.host_link_rate", net.get("host_link_rate", link_rate))
    host_delay = seconds("network.host_link_delay", net.get("host_link_delay", link_delay))
    buf = buffer_bytes("network.buffer", net.get("buffer", "100pkt"))
    nic = buffer_bytes("network.nic_buffer", net.get("nic_buffer", net.get("buffer", "100pkt")))

    links = []
    if topo == "dumbbell":
        ns, nr = int(net["senders"]), int(net["receivers"])
        hosts = [f"s{i}" for i in range(ns)] + [f"r{i}" for i in range(nr)]
        switches = ["left", "right"]
        br = rate_bps("network.bottleneck_rate", net.get("bottleneck_rate", link_rate))
        bd = seconds("network.bottleneck_delay", net.get("bottleneck_delay", link_delay))
        bb = buffer_bytes("network.bottleneck_buffer", net.get("bottleneck_buffer", net.get("buffer", "100pkt")))
        links.append(Link("left", "right", br, br, bb, bb, "bottleneck", bd))
        for h in hosts:
            links.append(Link(h, "left" if h[0] == "s" else "right", host_rate, host_rate, nic, buf, "host", host_delay))
    elif topo == "star":
        n = int(net["hosts"])
        hosts = [f"h{i}" for i in range(n)]
        switches = ["sw0"]
        for h in hosts:
            links.append(Link(h, "sw0", host_rate, host_rate, nic, buf, "host", host_delay))
    else:
        raise TestbedError(f"network.topology = {topo!r}: the testbed supports dumbbell and star")
    if len(hosts) > 250:
        raise TestbedError(f"{len(hosts)} hosts: the testbed supports at most 250")
    delay_s = 0.0
    if topo == "dumbbell":
        one_way = host_delay + links[0].delay_s + host_delay  # s -> left -> right -> r
        if one_way >= MIN_EMULATED_DELAY_S:
            delay_s = one_way
            notes.append(f"the one-way propagation delay of a sender-receiver path ({one_way * 1e3:g} ms: two host "
                         "links and the bottleneck) is emulated by a delay line on the bottleneck link")
        elif one_way > 0:
            notes.append(f"path delay {one_way * 1e6:g} us is below {MIN_EMULATED_DELAY_S * 1e6:g} us and not "
                         "emulated: the base RTT is that of the veths")
    elif any(l.delay_s > 0 for l in links):
        notes.append("link delays are not emulated on star topologies: the base RTT is that of the veths")

    flows = []
    for f in _scenario_flows(path, overrides):
        i = f["flow_id"]
        where = f"flows[{i}]" if i < len(doc.get("flows", [])) else f"flow {i} (from [[workloads]])"
        if f["after"] is not None:
            raise TestbedError(f"{where}: waits for group {f['after']!r}; closed-loop workloads (incast rounds, "
                               "partition_aggregate, shuffle) and `after` are not supported by the testbed")
        fl = Flow(
            flow_id=i,
            src=f["src"],
            dst=f["dst"],
            size=f["size_bytes"],
            start_s=f["start_s"],
            protocol=f["protocol"],
            params=dict(f["params"]),
            tag=f["tag"],
            group=f["group"],
            deadline_s=f["deadline_s"],
            ecn=bool(f["ecn"]),
        )
        for h in (fl.src, fl.dst):
            if h not in hosts:
                raise TestbedError(f"{where}: unknown host {h!r}")
        flows.append(fl)
    if len(flows) > MAX_FLOWS:
        raise TestbedError(f"{len(flows)} flows: the testbed runs at most {MAX_FLOWS} (two threads and a socket "
                           "pair each); shorten the workload (`count`, `until`) or run it in the simulator")
    if not flows:
        raise TestbedError("no flows to run (no [[flows]], and the [[workloads]] generate none)")
    by_host: dict = {}
    for fl in flows:
        if by_host.setdefault(fl.src, fl.ecn) != fl.ecn:
            raise TestbedError(f"flows[{fl.flow_id}]: host {fl.src} sends both ECN-capable and other flows; "
                               "the testbed sets ECN per sending host (net.ipv4.tcp_ecn)")
    stop = doc.get("stop_time")
    stop_s = seconds("stop_time", stop) if stop is not None else None
    if stop_s is None and any(f.size is None for f in flows):
        raise TestbedError("long-lived flows (no `size`) need `stop_time`")
    mon = doc.get("monitor", {})
    cwnd_interval = seconds("monitor.cwnd_interval", mon["cwnd_interval"]) if "cwnd_interval" in mon else None
    if cwnd_interval is not None and cwnd_interval < 1e-3:
        notes.append(f"cwnd samples every {cwnd_interval * 1e3:g} ms requested; the testbed samples at most every 1 ms")
        cwnd_interval = 1e-3
    cwnd_flows = mon.get("cwnd_flows")
    if cwnd_flows == "all":
        cwnd_flows = None
    if mon.get("queue_interval") is not None:
        notes.append("queue samples (monitor.queue_interval) are not taken by the testbed")
    return Plan(
        name=doc.get("name", Path(path).stem),
        seed=int(doc.get("seed", 1)),
        topology=topo,
        hosts=hosts,
        switches=switches,
        links=links,
        flows=flows,
        stop_time_s=stop_s,
        notes=notes,
        ecn_threshold=ecn_threshold,
        cwnd_interval_s=cwnd_interval,
        cwnd_flows=cwnd_flows,
        delay_s=delay_s,
    )
