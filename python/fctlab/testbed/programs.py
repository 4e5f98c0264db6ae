"""What the kernel runs for a plan: each flow's congestion control (the kernel's own, or
fctlab's BPF ones: DCTCP, ATCP, the router-assisted protocols' host and port programs), the
flows' bands on strict-priority ports and the PIAS tagger, and the programs' lifetime: loaded
before the traffic, removed after it, also on failure."""

from __future__ import annotations

from typing import Optional


from .. import kernel as K
from ..kernel import parse_bytes
from ..plan import Flow
from .assisted import PROTOCOLS as ASSISTED
from .assisted import feedback_params
from .ecn import Marker
from .feedback import PortPrograms, port_counters
from .hostprog import STATS as HOST_STATS
from .hostprog import HostPrograms
from .netns import Network, TestbedError
from .pias import Tagger
from .scenario import Sockopts, TestbedPlan
from .shell import note_registered


#: Why the simulator's other protocols do not run on the testbed.
NOT_ON_THE_TESTBED = {
    "pfabric": ": its switch ports send the packet with the least remaining first and drop the one with the most, "
    "which no Linux qdisc here does",
    "homa": ": Homa is a transport of its own, not TCP; the testbed runs the kernel's TCP",
}


#: CUBIC's parameters as the kernel's tcp_cubic module has them (its defaults: beta 717/1024,
#: bic_scale 41 for C = 0.4, fast convergence and TCP friendliness on); they are the module's,
#: for every socket of the machine, so a run can only use them.
KERNEL_CUBIC = {"cubic_beta": 0.7, "cubic_c": 0.4, "cubic_fast_convergence": True, "cubic_reno_friendly": True}


def _kernel_cubic(f: Flow, so: Sockopts) -> None:
    """A ``cubic`` flow runs the kernel's own CUBIC (tcp_cubic), whose parameters are the
    module's: a flow that sets others is refused, naming the key."""
    for key, value in f.params.items():
        if KERNEL_CUBIC.get(key) != value:
            raise TestbedError(
                f"flows[{f.flow_id}].cubic.{key}: the kernel's CUBIC runs with {key} = {KERNEL_CUBIC.get(key)!r} "
                f"(its module's parameters, for the whole machine), not {value!r}"
            )
    if "cubic" not in K.available_congestion_controls():
        raise TestbedError(
            'protocol "cubic" needs the kernel\'s tcp_cubic (not in net.ipv4.tcp_available_congestion_control)'
        )
    so.cc = "cubic"
    f.protocol = "cubic"


def resolve_congestion_controls(plan: TestbedPlan, halving: Optional[str] = None) -> Optional[K.AtcpParams]:
    """Sets each flow's kernel congestion control; returns the ATCP parameters to load, or
    None when no flow uses ATCP. ``tcp`` (and its aliases) is the kernel's ``reno``. The
    kernel ATCP's halving rule is the ATCP flows' ``halving`` key (all alike; the simulator's
    default ``per-episode`` when absent), or ``halving`` when given."""
    fixed: list[float] = []
    fn_params: Optional[dict] = None
    halvings: set = set()
    for f in plan.flows:
        so = plan.sockopts[f.flow_id]
        p = f.protocol.lower()
        if p in ("tcp", "newreno", "reno"):
            so.cc = "reno"
            f.protocol = "tcp"
        elif p == "cubic":
            _kernel_cubic(f, so)
        elif p in ("dctcp", "pias"):
            # fctlab's DCTCP (kernel/dctcp.bpf.c): the receivers' sockets run it too, for its
            # echo of CE marks. PIAS is DCTCP whose senders' packets are tagged (pias.py).
            so.cc = K.DCTCP
            f.protocol = p
        elif p in ASSISTED:
            # a router-assisted protocol whose hosts and switch ports run BPF programs
            # (assisted.py: hostprog.py, feedback.py); its receivers run it too, to echo the feedback
            so.cc = ASSISTED[p].congestion_control
            f.protocol = p
        elif p == "atcp":
            wf = f.params.get("weight_function", "step")
            so.weight_function = wf
            halvings.add(f.params.get("halving") or "per-episode")
            if wf == "fixed":
                if "weight" not in f.params:
                    raise TestbedError(f'flows[{f.flow_id}]: weight_function "fixed" needs `weight`')
                w = float(f.params["weight"])
                if w not in fixed:
                    fixed.append(w)
                if len(fixed) > 3:
                    raise TestbedError("at most three distinct fixed ATCP weights per run (atcp_w1..atcp_w3)")
            elif wf in ("step", "linear"):
                mine = {k: f.params.get(k) for k in ("w_high", "w_low", "threshold", "threshold_low", "threshold_high")}
                mine["function"] = wf
                if fn_params is not None and fn_params != mine:
                    raise TestbedError(f"flows[{f.flow_id}]: all step/linear ATCP flows of a run must share parameters")
                fn_params = mine
                so.cc = "atcp"
            else:
                raise TestbedError(
                    f"flows[{f.flow_id}]: ATCP weight_function {wf!r} is not available in the kernel (step, linear, fixed)"
                )
        else:
            why = NOT_ON_THE_TESTBED.get(p, "")
            raise TestbedError(
                f"flows[{f.flow_id}]: protocol {f.protocol!r} is not supported by the testbed (tcp, cubic, dctcp, pias, atcp, rcp, racs, sdc){why}"
            )
    if not fixed and fn_params is None:
        return None
    if halving is None:
        if len(halvings) > 1:
            raise TestbedError(
                f"all ATCP flows of a run must share `halving` (the kernel object has one rule): {sorted(halvings)}"
            )
        halving = halvings.pop()
    w_fixed = (fixed + [1.0, 2.0, 3.0])[:3] if fixed else [1.0, 2.0, 3.0]
    # keep the default mapping (w -> atcp_w<w>) when the weights allow it
    if all(w in (1.0, 2.0, 3.0) for w in fixed):
        w_fixed = [1.0, 2.0, 3.0]
    for f in plan.flows:
        so = plan.sockopts[f.flow_id]
        if f.protocol == "atcp" and so.weight_function == "fixed":
            so.cc = f"atcp_w{w_fixed.index(float(f.params['weight'])) + 1}"
    fp = fn_params or {}

    def num(k, default):
        v = fp.get(k)
        return default if v is None else v

    def size(k, default):
        v = fp.get(k)
        return default if v is None else (int(v) if isinstance(v, (int, float)) else parse_bytes(str(v)))

    return K.AtcpParams(
        function=fp.get("function", "step"),
        w_high=float(num("w_high", 3.0)),
        w_low=float(num("w_low", 1.0)),
        threshold=size("threshold", 10_000_000),
        threshold_low=size("threshold_low", 1_000_000),
        threshold_high=size("threshold_high", 10_000_000),
        w_fixed=tuple(w_fixed),
        halving=halving,
    ).validate()


def load_dctcp(plan: TestbedPlan) -> bool:
    """Registers fctlab's DCTCP when a flow needs it and it is not registered yet; returns
    whether this call registered it (and must unregister it)."""
    if not any(so.cc == K.DCTCP for so in plan.sockopts.values()) or K.dctcp_registered():
        return False
    try:
        K.load_dctcp()
    except K.KernelError as e:
        raise TestbedError(f"loading DCTCP: {e}") from None
    return True


def load_atcp(atcp) -> bool:
    """Loads the kernel ATCP with `atcp`'s parameters unless it is registered with the same
    ones already; returns whether this call loaded it (and must unload it)."""
    try:
        if K.registered():
            have = K.loaded_params()
            if have is None or have.pack() != atcp.pack():
                raise TestbedError("ATCP is already registered with other parameters; run `fctlab kernel unload` first")
            return False
        K.load(atcp)
        return True
    except K.KernelError as e:
        raise TestbedError(f"loading ATCP: {e}") from None


def set_bands(plan: TestbedPlan) -> None:
    """On strict-priority ports, each flow's band as the simulator gives it: a PIAS flow's
    packets are tagged as they leave (DSCP 0 until then: its handshake and ACKs in band 0);
    any other flow's packets and ACKs all take the band of its tag, the first of
    `priority_tags` band 0 and so on, other tags the last band. The band is the sockets'
    DSCP (``IP_TOS``), which the ports classify."""
    if plan.bands < 2:
        return
    for f in plan.flows:
        if f.protocol == "pias":
            continue
        tags = plan.priority_tags
        band = tags.index(f.tag) if f.tag in tags else plan.bands - 1
        plan.sockopts[f.flow_id].tos = min(band, plan.bands - 1) << 2


def pias_thresholds(plan: TestbedPlan) -> Optional[list]:
    """The demotion thresholds (bytes) of the plan's PIAS flows, or None when it has none.
    The tagger has one set per run and tags every connection of a host, so the PIAS flows
    must share their thresholds, their hosts must send nothing else, and the ports must have
    the bands to serve them."""
    pias = [f for f in plan.flows if f.protocol == "pias"]
    if not pias:
        return None
    ts = [int(x) for x in pias[0].params.get("pias_thresholds", [])]
    for f in pias:
        if [int(x) for x in f.params.get("pias_thresholds", [])] != ts:
            raise TestbedError(f"flows[{f.flow_id}]: all PIAS flows of a testbed run must share pias_thresholds")
    senders = {f.src for f in pias}
    other = next((f for f in plan.flows if f.src in senders and f.protocol != "pias"), None)
    if other is not None:
        raise TestbedError(
            f"flows[{other.flow_id}]: host {other.src} sends PIAS flows and a {other.protocol} flow; on the "
            "testbed the PIAS tagger tags every connection of its host"
        )
    if plan.bands < 2:
        raise TestbedError('protocol "pias" needs strict-priority ports: network.queue = "priority"')
    return ts


class Programs:
    """What a run loads besides its namespaces, and unloads after them: the port marker, the
    PIAS tagger, and the kernel ATCP and DCTCP when this run registered them."""

    def __init__(self) -> None:
        self.marker = self.tagger = self.ports = self.hosts = None
        self.port_params: dict = {}
        self.stamping: list = []  # (ns, dev) of the ports running the protocol's program
        self.atcp_here = self.dctcp_here = False

    def load(self, plan: TestbedPlan, atcp) -> None:
        thresholds = pias_thresholds(plan)
        set_bands(plan)
        if plan.ecn_threshold is not None or max(plan.bands, plan.nic_bands) > 1:
            self.marker = Marker()
        if thresholds is not None:
            self.tagger = Tagger(thresholds)
        # noted before registering: a run killed in between leaves the note for `clean`
        will = set()
        if atcp is not None and not K.registered():
            will.add("atcp")
        if any(so.cc == K.DCTCP for so in plan.sockopts.values()) and not K.dctcp_registered():
            will.add(K.DCTCP)
        note_registered(will)
        if atcp is not None:
            self.atcp_here = load_atcp(atcp)
        self.dctcp_here = load_dctcp(plan)
        note_registered(({"atcp"} if self.atcp_here else set()) | ({K.DCTCP} if self.dctcp_here else set()))
        assisted = sorted({f.protocol for f in plan.flows if f.protocol in ASSISTED})
        if assisted:
            proto = assisted[0]
            if any(f.protocol != proto for f in plan.flows):
                raise TestbedError(
                    f"a testbed run with {proto} flows runs {proto} only (its switch ports stamp every flow)"
                )
            self.port_params, host_params = feedback_params(plan)
            self.ports = PortPrograms(ASSISTED[proto].port)
            self.hosts = HostPrograms(proto, host_params)

    def port_program(self, ns: str, dev: str, rate_bps: float) -> None:
        """Attaches the protocol's switch-port program, if the run has one."""
        if self.ports is not None:
            self.ports.attach(ns, dev, self.ports.params(capacity_bps=int(rate_bps), **self.port_params))
            self.stamping.append((ns, dev))

    def port_counters(self, net: Network) -> Optional[dict]:
        """The stamping ports' counters, by link (None: the run has none)."""
        if self.ports is None:
            return None
        links = {(p.ns, p.dev): p.link for p in net.ports}
        return {links.get(k, f"{k[0]}:{k[1]}"): port_counters(*k) for k in self.stamping}

    def host_counters(self) -> Optional[dict]:
        """The host programs' counters, once ``close`` has unloaded them."""
        if self.hosts is None:
            return None
        return dict(zip(HOST_STATS, self.hosts.counters.get("fb_host_stats", [])))

    def close(self) -> None:
        for prog in (self.marker, self.tagger, self.ports, self.hosts):
            if prog is not None:
                prog.close()
        for here, unload in ((self.atcp_here, K.unload), (self.dctcp_here, K.unload_dctcp)):
            if here:
                try:
                    unload()
                except K.KernelError:
                    pass
        if self.atcp_here or self.dctcp_here:
            note_registered(set())
