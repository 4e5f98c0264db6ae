"""A scenario as another simulator must run it: nodes, one port per link direction with its
queue, the expanded flow list and the resolved TCP settings.

The plan is target-neutral: it holds what the scenario says, after fctlab's own parser has
resolved defaults, profiles, overrides and workloads (so both simulators run the identical
flow list: endpoints, sizes, start times, dependencies). A target (``ns2.py``) turns it into its
own input and says which parts it cannot express (:class:`Unsupported`, naming the key).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .. import _core
from ..api import ScenarioError, ScenarioLike, _source


class Unsupported(ScenarioError):
    """The scenario uses something the target simulator cannot run; the message names the
    scenario key and says why."""


@dataclass
class Port:
    """One direction of a link: the output queue of `src` toward `dst`."""

    src: str
    dst: str
    rate_bps: float
    delay_s: float
    #: ("pkts", n), ("bytes", n) or None (unlimited)
    buffer: Optional[tuple]
    #: the queue discipline: {"kind": "droptail" | "ecn" | "red", ...} (see `queue_of`)
    queue: dict
    level: str
    #: whether `src` is a host (this is a NIC queue)
    nic: bool


@dataclass
class Flow:
    flow_id: int
    src: str
    dst: str
    size_bytes: Optional[int]
    start_s: float
    protocol: str
    ecn: bool
    params: dict
    tag: str
    group: str
    after: Optional[str]


@dataclass
class Plan:
    name: str
    seed: int
    stop_time_s: Optional[float]
    hosts: list
    switches: list
    ports: list
    flows: list
    tcp: dict
    network: dict
    #: where the target runs the scenario differently from fctlab, one sentence each
    notes: list = field(default_factory=list)
    #: the scenario as given (a path or a dict) and its overrides, for a target that reads the
    #: scenario itself (the testbed)
    source: object = None
    overrides: tuple = ()
    unset: tuple = ()

    def groups(self) -> dict:
        """group name -> flow ids of its members."""
        out: dict = {}
        for f in self.flows:
            if f.group:
                out.setdefault(f.group, []).append(f.flow_id)
        return out


def load(scenario: ScenarioLike, overrides: Sequence[str] = (), unset: Sequence[str] = ()) -> Plan:
    """The plan of a scenario, as fctlab's parser resolves it (errors are ScenarioError)."""
    text, name, fmt = _source(scenario)
    net = _core.network(text, name, fmt, list(overrides), list(unset))
    val = _core.validate(text, name, fmt, list(overrides), list(unset))
    flows = _core.flows(text, name, fmt, list(overrides), list(unset))
    kinds = {n["name"]: n["kind"] for n in net["nodes"]}
    ports = []
    for ln in net["links"]:
        for a, b in ((ln["a"], ln["b"]), (ln["b"], ln["a"])):
            nic = kinds[a] == "host"
            buffer = net["nic_buffer"] if nic else ln["buffer"]
            queue = queue_of(net, nic)
            ports.append(Port(a, b, ln["rate_bps"], ln["delay_s"], buffer, queue, "nic" if nic else ln["level"], nic))
    return Plan(
        name=net["name"],
        seed=net["seed"],
        stop_time_s=net["stop_time_s"],
        hosts=[n["name"] for n in net["nodes"] if n["kind"] == "host"],
        switches=[n["name"] for n in net["nodes"] if n["kind"] != "host"],
        ports=ports,
        flows=[
            Flow(
                f["flow_id"],
                f["src"],
                f["dst"],
                f["size_bytes"],
                f["start_s"],
                f["protocol"],
                bool(f["ecn"]),
                dict(f["params"] or {}),
                f["tag"],
                f["group"],
                f["after"],
            )
            for f in flows
        ],
        tcp=dict(val["transport"]),
        network=net,
        source=scenario,
        overrides=tuple(overrides),
        unset=tuple(unset),
    )


def queue_of(net: dict, nic: bool) -> dict:
    """The discipline of a port: a host's NIC runs `nic_queue` (DropTail, or the switches' one
    with `network.nic_queue = "switch"`), the others `queue`."""
    return dict(net["nic_queue"] if nic else net["queue"])


def single_paths(plan: Plan) -> None:
    """Checks that every flow's endpoints are joined by exactly one shortest path (hop count),
    so that a simulator without fctlab's per-flow ECMP hash routes each flow as fctlab does.
    Raises Unsupported naming `network.topology` otherwise."""
    adj: dict = {}
    for p in plan.ports:
        adj.setdefault(p.src, []).append(p.dst)
    hosts = set(plan.hosts)
    seen_src = {}
    for f in plan.flows:
        if f.src not in seen_src:
            seen_src[f.src] = _path_counts(adj, f.src, hosts)
        dist, count = seen_src[f.src]
        if count.get(f.dst, 0) > 1:
            raise Unsupported(
                f"network.topology: {plan.network['topology']} joins {f.src} and {f.dst} (flow {f.flow_id}) by "
                f"{count[f.dst]} equal-cost paths; fctlab spreads flows over them by a hash and ns-2's static "
                "routing takes one, so the two would not carry the same flows on the same links. Use a "
                "single-path topology (star, dumbbell, chain, tree, leafspine with one spine, or a custom tree)"
            )


def _path_counts(adj: dict, src: str, hosts: set) -> tuple:
    """Hop distances and numbers of shortest paths from `src`; hosts do not forward."""
    dist = {src: 0}
    count = {src: 1}
    q = deque([src])
    while q:
        u = q.popleft()
        if u != src and u in hosts:
            continue
        for v in adj.get(u, ()):
            if v not in dist:
                dist[v] = dist[u] + 1
                count[v] = count[u]
                q.append(v)
            elif dist[v] == dist[u] + 1:
                count[v] += count[u]
    return dist, count
