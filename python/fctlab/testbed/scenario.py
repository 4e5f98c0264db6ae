"""The part of a scenario file the testbed uses: topology, rates, buffers and flows."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Optional, Sequence

from ..api import ScenarioError
from ..plan import Flow, Plan, load_file
from .ecn import Threshold
from .netns import ETH_OVERHEAD, MTU, TestbedError

FRAME = MTU + ETH_OVERHEAD
#: Shorter one-way delays are not emulated: a veth path has about 20-50 us of its own.
MIN_EMULATED_DELAY_S = 100e-6
#: A testbed queue with no limit still needs one: TBF's limit, in bytes.
UNLIMITED_BYTES = 64 << 20


def queue_bytes(buffer) -> int:
    """A buffer from fctlab._core (``("pkts", n)``, ``("bytes", n)`` or None) as a TBF limit:
    N packets are N full frames."""
    if buffer is None:
        return UNLIMITED_BYTES
    unit, n = buffer
    return int(n) * FRAME if unit == "pkts" else int(n)


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
class Sockopts:
    """How the testbed opens one flow's sockets (set by programs.resolve_congestion_controls,
    set_bands and assisted.feedback_params)."""

    cc: str = ""  # kernel congestion control name
    weight_function: str = ""
    tos: int = 0  # the sockets' IP_TOS: the flow's band on strict-priority ports (programs.set_bands)
    mark: int = 0  # the sender socket's SO_MARK: a RACS weight x 256 or a size (assisted.feedback_params)


@dataclass
class TestbedPlan(Plan):
    """A plan (``fctlab.plan.Plan``) with what the testbed builds for it."""

    links: list = field(default_factory=list)
    ecn_threshold: object = None  # ecn.Threshold for queue = "ecn" (or "priority"), else None
    bands: int = 1  # switch ports: 1 (TBF) or a strict-priority port's bands (queue = "priority")
    nic_bands: int = 1  # host NICs, likewise (nic_queue)
    priority_tags: list = field(default_factory=list)  # the flows' bands by tag, highest first
    cwnd_interval_s: Optional[float] = None  # [monitor] cwnd_interval
    cwnd_flows: Optional[list] = None  # [monitor] cwnd_flows (None: every flow)
    delay_s: float = 0.0  # one-way delay emulated on the bottleneck link by a delay line
    #: flow id -> its sockets' settings
    sockopts: dict = field(default_factory=dict)

    def path(self, src: str, dst: str) -> list:
        """The links from ``src`` to ``dst``, each with the node it is left from: ``[(Link,
        node)]``. The plan's topology is a tree (``load_plan`` checks), so the path is unique."""
        via = {src: None}
        todo = [src]
        while todo and dst not in via:
            n = todo.pop()
            for l in self.links:
                for a, b in ((l.a, l.b), (l.b, l.a)):
                    if a == n and b not in via:
                        via[b] = (l, a)
                        todo.append(b)
        hops = []
        n = dst
        while via.get(n) is not None:
            l, a = via[n]
            hops.append((l, a))
            n = a
        return hops[::-1]


#: The testbed opens two threads and two sockets per flow.
MAX_FLOWS = 1000


def _links(plan: Plan, notes: list) -> tuple:
    """The plan's links (a host's end first, the dumbbell's bottleneck first of all) and the
    one-way delay the delay line emulates (0: none); what cannot be emulated goes to `notes`."""
    topo, hosts = plan.topology, set(plan.hosts)
    links = []
    for pa, pb in plan.links():
        if pb.src in hosts and pa.src not in hosts:
            pa, pb = pb, pa
        # a host's own end is its NIC (nic_buffer); a switch's end uses the link's buffer
        level = pb.level if pa.nic else pa.level
        links.append(
            Link(
                pa.src,
                pa.dst,
                pa.rate_bps,
                pb.rate_bps,
                queue_bytes(pa.buffer),
                queue_bytes(pb.buffer),
                level,
                pa.delay_s,
            )
        )
    if topo == "dumbbell":  # the bottleneck first: the testbed's path rate and delay line use it
        links.sort(key=lambda l: l.level != "bottleneck")
    delay_s = 0.0
    if topo == "dumbbell":
        host_delay = max((l.delay_s for l in links if l.level == "host"), default=0.0)
        one_way = host_delay + links[0].delay_s + host_delay  # s -> left -> right -> r
        if any(l.delay_s != host_delay for l in links if l.level == "host"):
            notes.append("host links of different delays: the delay line uses the largest")
        if one_way >= MIN_EMULATED_DELAY_S:
            delay_s = one_way
            notes.append(
                f"the one-way propagation delay of a sender-receiver path ({one_way * 1e3:g} ms: two host "
                "links and the bottleneck) is emulated by a delay line on the bottleneck link"
            )
        elif one_way > 0:
            notes.append(
                f"path delay {one_way * 1e6:g} us is below {MIN_EMULATED_DELAY_S * 1e6:g} us and not "
                "emulated: the base RTT is that of the veths"
            )
    elif any(l.delay_s > 0 for l in links):
        notes.append(f"link delays are not emulated on {topo} topologies: the base RTT is that of the veths")
    return links, delay_s


def _threshold(t) -> Optional[Threshold]:
    if t is None:
        return None
    unit, n = t
    return Threshold(pkts=int(n)) if unit == "pkts" else Threshold(bytes=int(n))


def _priority_bands(q: dict, key: str) -> int:
    """A strict-priority queue's bands, after checking that the testbed builds it as the
    simulator runs it."""
    unsupported = (
        (q["pushout"], "priority_pushout (the shared buffer drops the arriving packet)"),
        (q["band_buffer"] is not None, "priority_band_buffer (the bands share the port's buffer)"),
        (
            q["ecn_threshold"] is not None and not q["ecn_per_port"],
            "per-band ECN marking (set priority_ecn_per_port = true: the marker reads the whole port)",
        ),
    )
    for bad, what in unsupported:
        if bad:
            raise TestbedError(f'network.{key} = "priority" with {what} is not available on the testbed')
    return int(q["bands"])


def _queues(plan: Plan, notes: list) -> tuple:
    """The switch ports' ECN threshold and bands, and the host NICs' bands."""
    queue = plan.queue(nic=False)
    ecn_threshold, bands, nic_bands = None, 1, 1
    if queue["kind"] == "ecn":
        ecn_threshold = _threshold(queue["threshold"])
    elif queue["kind"] == "priority":
        bands = _priority_bands(queue, "queue")
        ecn_threshold = _threshold(queue["ecn_threshold"])
    elif queue["kind"] != "droptail":
        raise TestbedError(
            f"network.queue = {queue['kind']!r}: the testbed has drop-tail (TBF), ecn (TBF with a BPF "
            "marker) and priority (HTB bands) queues"
        )
    nic = plan.queue(nic=True)
    if nic["kind"] == "priority":
        nic_bands = _priority_bands(nic, "nic_queue")
    elif nic["kind"] != "droptail":
        notes.append(f'host NICs run drop-tail: nic_queue = "{nic["kind"]}" is not built on the testbed')
    if nic_bands > 1 and nic["ecn_threshold"] is not None:
        notes.append("host NICs do not mark ECN on the testbed")
    return ecn_threshold, bands, nic_bands


def _check_flows(plan: Plan) -> None:
    if len(plan.flows) > MAX_FLOWS:
        raise TestbedError(
            f"{len(plan.flows)} flows: the testbed runs at most {MAX_FLOWS} (two threads and a socket "
            "pair each); shorten the workload (`count`, `until`) or run it in the simulator"
        )
    if not plan.flows:
        raise TestbedError("no flows to run (no [[flows]], and the [[workloads]] generate none)")
    by_host: dict = {}
    for fl in plan.flows:
        if by_host.setdefault(fl.src, fl.ecn) != fl.ecn:
            raise TestbedError(
                f"flow {fl.flow_id}: host {fl.src} sends both ECN-capable and other flows; "
                "the testbed sets ECN per sending host (net.ipv4.tcp_ecn)"
            )
    if plan.stop_time_s is None and any(f.size_bytes is None for f in plan.flows):
        raise TestbedError("long-lived flows (no `size`) need `stop_time`")


def _scheduler_notes(plan: Plan, notes: list) -> None:
    sched = plan.scheduler
    if sched is None:
        return
    longs = [f.flow_id for f in plan.flows if f.size_bytes is None]
    if longs:
        notes.append(f"flows {longs[:5]} are long-lived: each keeps its own connection, outside the scheduling layer")
    afters = [f.flow_id for f in plan.flows if f.size_bytes is not None and f.after]
    if afters:
        raise TestbedError(
            f"flows {afters[:5]} wait for a group; the testbed's scheduling layer starts flows at fixed times"
        )
    notes.append(
        f"flows of each host pair scheduled by {sched['policy']} over real sockets (fctlab sched: "
        "one connection per flow, chunks chosen by the policy)"
    )


def load_plan(path: Path, overrides: Sequence[str] = ()) -> TestbedPlan:
    """The testbed's plan of a scenario file (after ``overrides``, as ``fctlab run --set``)."""
    try:
        plan = load_file(path, overrides)
    except ScenarioError as e:
        raise TestbedError(str(e)) from None
    if plan.pfc is not None:
        raise TestbedError("network.pfc: the testbed's switches (Linux bridges) do not send pause frames")
    topo = plan.topology
    notes: list = []
    ecn_threshold, bands, nic_bands = _queues(plan, notes)
    tags = list(plan.queue(nic=False).get("tags") or [])
    n_links = len(plan.ports) // 2
    if n_links != len(plan.hosts) + len(plan.switches) - 1:
        raise TestbedError(
            f"network.topology = {topo!r}: {n_links} links join {len(plan.hosts) + len(plan.switches)} nodes, so "
            "some pairs have several paths; the testbed's switches are learning bridges and need one path per "
            "pair (dumbbell, star, tree, or a leaf-spine with one spine)"
        )
    if len(plan.hosts) > 250:
        raise TestbedError(f"{len(plan.hosts)} hosts: the testbed supports at most 250")
    links, delay_s = _links(plan, notes)
    _check_flows(plan)
    cwnd_interval = plan.monitor["cwnd_interval_s"]
    if cwnd_interval is not None and cwnd_interval < 1e-3:
        notes.append(f"cwnd samples every {cwnd_interval * 1e3:g} ms requested; the testbed samples at most every 1 ms")
        cwnd_interval = 1e-3
    if plan.monitor["queue_interval_s"] is not None:
        notes.append("queue samples (monitor.queue_interval) are not taken by the testbed")
    _scheduler_notes(plan, notes)
    return TestbedPlan(
        **{f.name: getattr(plan, f.name) for f in fields(Plan) if f.name != "notes"},
        notes=notes,
        links=links,
        ecn_threshold=ecn_threshold,
        bands=bands,
        nic_bands=nic_bands,
        priority_tags=tags,
        cwnd_interval_s=cwnd_interval,
        cwnd_flows=plan.monitor["cwnd_flows"],
        delay_s=delay_s,
        sockopts={f.flow_id: Sockopts() for f in plan.flows},
    )


def path_rate(plan: TestbedPlan, f: Flow) -> float:
    """Slowest rate on the flow's path (the testbed's topologies have one path per pair)."""
    return min(l.rate_a if l.a == a else l.rate_b for l, a in plan.path(f.src, f.dst))
