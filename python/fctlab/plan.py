"""The plan: a scenario as every engine runs it.

fctlab's parser resolves a scenario once (defaults, profile, overrides, workloads drawn with
the scenario's seed) and writes it as the plan (``fctlab_scenario::plan``, docs/plan.md). The
simulator runs the scenario itself; ns-2, htsim, ns-3, the namespace testbed and the socket
scheduler read this module's :class:`Plan`, so every engine starts the same flows, at the same
times, on the same network. An engine says which parts it cannot run by raising
:class:`Unsupported` naming the scenario key.

The one helper every producer of a flows table uses is :func:`rows_for`: it turns what an
engine measured into rows of the results schema, so a column added to the schema reaches every
producer, null where the engine does not measure it.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from . import _core
from .api import ScenarioError, ScenarioLike, _source

#: The plan version this module reads (``PLAN_VERSION`` in crates/scenario/src/plan.rs).
PLAN_VERSION = 1


class Unsupported(ScenarioError):
    """The scenario uses something an engine cannot run; the message names the scenario key
    and says why."""


def refuse_lossless(plan: "Plan", engine: str) -> None:
    """Raises Unsupported when `plan` is lossless (``network.pfc``) or shares a buffer per switch
    (``network.switch_buffer``), which `engine` does not run."""
    if plan.pfc is not None:
        raise Unsupported(f"network.pfc: {engine} does not run priority flow control; fctlab runs it alone")
    if plan.switch_buffer is not None:
        raise Unsupported(f"network.switch_buffer: {engine} does not run a shared-buffer switch; fctlab runs it alone")


def refuse_balancing(plan: "Plan", engine: str, runs: tuple = ()) -> None:
    """Raises Unsupported when `plan`'s packets choose their paths per packet
    (``network.load_balancing``) by a policy `engine` does not run (`runs`: those it does)."""
    lb = plan.load_balancing
    if lb is not None and lb["policy"] not in runs:
        if runs:
            raise Unsupported(
                f'network.load_balancing: {engine} does not run "{lb["policy"]}" (of the per-packet policies it '
                f"runs {', '.join(runs)}); fctlab runs it alone"
            )
        raise Unsupported(
            f"network.load_balancing: {engine} routes each flow on one path and does not run "
            f'"{lb["policy"]}"; fctlab runs it alone'
        )


def refuse_scaled_red(plan: "Plan", engine: str) -> None:
    """Raises Unsupported when `plan`'s RED thresholds scale with each port's rate
    (``network.red_threshold_rate``): `engine` is given one setting for every port."""
    for nic in (False, True):
        if plan.queue(nic=nic).get("threshold_rate_bps") is not None:
            raise Unsupported(
                f"network.red_threshold_rate: {engine} is given one RED setting for every port; "
                "fctlab scales the thresholds with each port's rate"
            )


@dataclass
class Port:
    """One direction of a link: the output queue of `src` toward `dst`."""

    src: str
    dst: str
    #: the link's index (both directions share it)
    link: int
    rate_bps: int
    delay_s: float
    #: ("pkts", n), ("bytes", n) or None (unlimited)
    buffer: Optional[tuple]
    #: the queue discipline: {"kind": ..., and its parameters} (docs/plan.md)
    queue: dict
    #: the link's level; "nic" for a host's own port
    level: str
    #: whether `src` is a host (this is a NIC queue)
    nic: bool


@dataclass
class Flow:
    """A flow as the simulator starts it."""

    flow_id: int
    src: str
    dst: str
    #: None: long-lived
    size_bytes: Optional[int]
    start_s: float
    protocol: str
    ecn: bool
    #: the protocol's settings, every one resolved (its defaults included)
    params: dict
    tag: str
    group: str
    #: the group whose completion this flow waits for (then `start_s` is the delay after it)
    after: Optional[str]
    deadline_s: Optional[float] = None


@dataclass
class Plan:
    name: str
    seed: int
    stop_time_s: Optional[float]
    #: the topology's kind (`network.topology`)
    topology: str
    hosts: list
    switches: list
    ports: list
    flows: list
    #: the resolved transport settings (`profile`, `mss_bytes`, ...; times in seconds, `_s`)
    tcp: dict
    #: "waiting" or "ns2" (`network.buffer_model`)
    buffer_model: str
    #: the flow scheduling layer (`policy`, `priority_then`, `priority_tags`,
    #: `send_buffer_bytes`) or None
    scheduler: Optional[dict]
    #: `cwnd_interval_s`, `cwnd_flows` (None: every flow), `queue_interval_s`, `drops`, `pcap`
    monitor: dict
    #: the scenario's file name (as fctlab was given it), its overrides and removed keys
    file: str = ""
    overrides: list = field(default_factory=list)
    unset: list = field(default_factory=list)
    scenario_sha256: str = ""
    #: where an engine runs the scenario differently from fctlab, one sentence each
    notes: list = field(default_factory=list)
    #: protocol parameters the scenario left out and how they were filled in, one sentence each
    #: (``workloads[0]: pias_thresholds derived from ...``)
    derived: list = field(default_factory=list)
    #: priority flow control (``[network] pfc = true``): ``{"xoff", "xon", "headroom"}`` in bytes
    #: as given (None: from each link), or None for a lossy network
    pfc: Optional[dict] = None
    #: a buffer per switch shared by its output queues (``[network] switch_buffer``):
    #: ``{"bytes", "alpha", "pfc_alpha"}``
    switch_buffer: Optional[dict] = None
    #: per-packet path choice (``[network] load_balancing``): {"policy": name, and
    #: "flowlet_gap_ns" for flowlets}, or None for per-flow ECMP
    load_balancing: Optional[dict] = None
    #: the scenario as it was given (a path or a dict), for an engine that reads it itself
    #: (the testbed); None for a plan read from JSON
    source: object = None

    def groups(self) -> dict:
        """group name -> flow ids of its members."""
        out: dict = {}
        for f in self.flows:
            if f.group:
                out.setdefault(f.group, []).append(f.flow_id)
        return out

    def queue(self, nic: bool) -> dict:
        """The discipline of the host NICs (`nic`) or of the switch ports."""
        for p in self.ports:
            if p.nic == nic:
                return p.queue
        return {"kind": "droptail"}

    def links(self) -> list:
        """The links as (port a -> b, port b -> a), in the topology's order."""
        by: dict = {}
        for p in self.ports:
            by.setdefault(p.link, []).append(p)
        return [tuple(by[i]) for i in sorted(by)]


def _buffer(b) -> Optional[tuple]:
    return None if b is None else (b[0], int(b[1]))


def _queue(q: dict) -> dict:
    """A discipline with its buffers as tuples, as Python code compares them."""
    return {
        k: (_buffer(v) if isinstance(v, list) and len(v) == 2 and v[0] in ("pkts", "bytes") else v)
        for k, v in q.items()
    }


def _seconds(ns) -> Optional[float]:
    return None if ns is None else ns * 1e-9


def from_json(text: str, overrides: Sequence[str] = (), unset: Sequence[str] = ()) -> Plan:
    """A plan from the JSON `_core.plan` writes."""
    d = json.loads(text)
    if d.get("plan_version") != PLAN_VERSION:
        raise ScenarioError(f"plan version {d.get('plan_version')!r}: this fctlab reads version {PLAN_VERSION}")
    mon = d["monitor"]
    return Plan(
        name=d["name"],
        seed=int(d["seed"]),
        stop_time_s=_seconds(d["stop_time_ns"]),
        topology=d["topology"],
        hosts=[n["name"] for n in d["nodes"] if n["kind"] == "host"],
        switches=[n["name"] for n in d["nodes"] if n["kind"] != "host"],
        ports=[
            Port(
                p["src"],
                p["dst"],
                p["link"],
                p["rate_bps"],
                p["delay_ns"] * 1e-9,
                _buffer(p["buffer"]),
                _queue(p["queue"]),
                p["level"],
                p["nic"],
            )
            for p in d["ports"]
        ],
        flows=[
            Flow(
                f["flow_id"],
                f["src"],
                f["dst"],
                f["size_bytes"],
                f["start_ns"] * 1e-9,
                f["protocol"],
                bool(f["ecn"]),
                dict(f["params"] or {}),
                f["tag"],
                f["group"],
                f["after"],
                _seconds(f["deadline_ns"]),
            )
            for f in d["flows"]
        ],
        tcp=dict(d["transport"]),
        buffer_model=d["buffer_model"],
        scheduler=d["scheduler"],
        derived=list(d.get("derived", [])),
        pfc=d.get("pfc"),
        switch_buffer=d.get("switch_buffer"),
        load_balancing=d.get("load_balancing"),
        monitor={
            "cwnd_interval_s": _seconds(mon["cwnd_interval_ns"]),
            "cwnd_flows": mon["cwnd_flows"],
            "queue_interval_s": _seconds(mon["queue_interval_ns"]),
            "drops": mon["drops"],
            "pcap": mon["pcap"],
        },
        file=d["file"],
        overrides=list(overrides),
        unset=list(unset),
        scenario_sha256=d["scenario_sha256"],
    )


def load(
    scenario: ScenarioLike, overrides: Sequence[str] = (), unset: Sequence[str] = (), *, flows: bool = True
) -> Plan:
    """The plan of a scenario (a path, TOML/JSON text or a dict), with `overrides` (``key=value``,
    as ``fctlab run --set``) and `unset` keys; errors are ScenarioError naming the key. With
    ``flows=False`` the plan's ``flows`` is empty: for what needs only the network and the
    transport (listing a million drawn flows takes seconds)."""
    text, name, fmt = _source(scenario)
    plan = from_json(_core.plan(text, name, fmt, list(overrides), list(unset), flows), overrides, unset)
    plan.source = scenario
    return plan


def load_file(path, overrides: Sequence[str] = (), unset: Sequence[str] = ()) -> Plan:
    """:func:`load` of a scenario file, read as UTF-8 (TOML, or JSON by its suffix)."""
    return load(Path(path), overrides, unset)


def rows_for(schema, measured: Sequence[dict], *, where: str = "") -> list:
    """Rows of a results table (`schema`: a pyarrow schema, e.g. ``fctlab.api._schema("flows")``)
    from what an engine measured: every column of the schema is present, null where the engine
    did not measure it. A measured key that is not a column is an error naming it, so an engine
    cannot report a figure under a name the results do not have."""
    names = list(schema.names)
    known = set(names)
    out = []
    for r in measured:
        extra = set(r) - known
        if extra:
            raise ValueError(
                f"{where or 'rows_for'}: {sorted(extra)} are not columns of the table ({', '.join(names)})"
            )
        out.append({n: r.get(n) for n in names})
    return out


def single_paths(plan: Plan, engine: str = "ns-2") -> None:
    """Checks that every flow's endpoints are joined by exactly one shortest path (hop count),
    so that an engine without fctlab's per-flow ECMP hash routes each flow as fctlab does.
    Raises Unsupported naming `network.topology` otherwise."""
    adj = adjacency(plan)
    hosts = set(plan.hosts)
    seen_src = {}
    for f in plan.flows:
        if f.src not in seen_src:
            seen_src[f.src] = path_counts(adj, f.src, hosts)
        dist, count = seen_src[f.src]
        if count.get(f.dst, 0) > 1:
            raise Unsupported(
                f"network.topology: {plan.topology} joins {f.src} and {f.dst} (flow {f.flow_id}) by "
                f"{count[f.dst]} equal-cost paths; fctlab spreads flows over them by a hash and {engine}'s static "
                "routing takes one, so the two would not carry the same flows on the same links. Use a "
                "single-path topology (star, dumbbell, chain, tree, leafspine with one spine, or a custom tree)"
            )


def adjacency(plan: Plan) -> dict:
    """node -> the nodes its ports lead to."""
    adj: dict = {}
    for p in plan.ports:
        adj.setdefault(p.src, []).append(p.dst)
    return adj


def path_counts(adj: dict, src: str, hosts: set) -> tuple:
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
