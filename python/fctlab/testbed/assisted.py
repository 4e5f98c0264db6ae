"""The router-assisted protocols on the testbed, one entry each (``PROTOCOLS``): the
parameters of its switch-port program (``feedback.py``), its host object and congestion
control (``hostprog.py``), and how a run's flows set both, with the socket marks its host
program reads.

A sized RACS or SDC flow's socket mark carries its size (``FB_MARK_SIZED``, as
``kernel/fb_host.h`` reads it): RACS's eq. 4.1 weight and SDC's class follow its remaining
size (``kernel/host_rules.h``). A RACS flow with a fixed ``weight`` carries that weight x 256
instead; a long-lived flow carries nothing (RACS's w_min, SDC's class C).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .. import _core
from .feedback import RacsParams, RcpParams, SdcParams
from .shell import TestbedError

#: The socket mark's bit that says the rest is the flow's size (kernel/fb_host.h).
FB_MARK_SIZED = 1 << 31
#: Entries of RACS's eq. 4.1 table (kernel/host_rules.h, RACS_WEIGHT_TABLE).
RACS_WEIGHT_TABLE = 1024
#: SDC's keys whose values the kernel programs are built with (sdc_host.bpf.c, sdc_port.bpf.c):
#: the simulator's defaults (`fctlab._core.protocols()`, null where a key has none).
SDC_BUILT_IN = (
    "r_a_segments",
    "r_b_segments",
    "gain_ac",
    "gain_bc",
    "alpha_c",
    "beta_c",
    "beta_max",
    "gamma",
    "alpha",
    "beta",
    "stamp",
)


def sdc_built_in() -> dict:
    """The values the testbed's SDC programs are built with, by key."""
    defaults = next(r for r in _core.protocols() if "sdc" in r["names"])["defaults"]
    return {k: defaults.get(k) for k in SDC_BUILT_IN}


@dataclass(frozen=True)
class Protocol:
    """What the testbed runs for one router-assisted protocol."""

    #: the port program's parameters (a feedback.*Params class: its source and .rodata)
    port: type
    #: the host object: source, and the congestion control it registers
    host_source: str
    congestion_control: str
    #: ``(plan) -> (port keys, host keys)``: the port keys besides the capacity, and the
    #: host object's .rodata values by name; sets each flow's ``mark``
    plan_params: Callable
    #: the host object's .rodata parameters: symbol, struct layout (little endian) and the
    #: keys packed in order (a list value fills the rest of the layout's last array)
    host_params: Optional[tuple] = None


def _initial_rtt(plan) -> float:
    return float(plan.flows[0].params["initial_rtt"]) * 1e-9


def _rcp(plan) -> tuple[dict, dict]:
    p = plan.flows[0].params
    ports = dict(
        alpha=float(p["alpha"]),
        beta=float(p["beta"]),
        initial_rtt_s=_initial_rtt(plan),
        initial_rate_fraction=float(p["initial_rate_fraction"]),
    )
    return ports, {}


def _mark_size(fl, so) -> None:
    """A sized flow's mark: its size, for the host program to follow its remaining size."""
    if fl.size_bytes is None:
        return
    if fl.size_bytes >= FB_MARK_SIZED:
        raise TestbedError(
            f"flows[{fl.flow_id}]: {fl.size_bytes} bytes: the testbed's host programs track sizes below 2 GiB"
        )
    so.mark = FB_MARK_SIZED | fl.size_bytes


def _eq41(params: dict) -> tuple:
    return float(params["w_min"]), float(params["w_max"]), float(params["a"])


def racs_weight_table(w_min: float, w_max: float, a: float) -> list:
    """Eq. 4.1 x 256 (the option's unit) at 0, 1, 2, ... segments left, from the simulator's
    own definition (``fctlab._core.racs_weight``), as far as it differs from w_min; the host
    program interpolates between entries and takes w_min past the end. Raises TestbedError
    when the weight is still above w_min after ``RACS_WEIGHT_TABLE`` segments (a small `a`)."""
    ws = [round(w * 256) for w in _core.racs_weight(w_min, w_max, a, [float(i) for i in range(RACS_WEIGHT_TABLE)])]
    floor = round(w_min * 256)
    if ws[-1] != floor:
        raise TestbedError(
            f"RACS a = {a:g}: eq. 4.1's weight is still {ws[-1] / 256:g} (w_min {w_min:g}) after "
            f"{RACS_WEIGHT_TABLE} segments left, past the host program's table; use a larger `a`"
        )
    if max(ws) > 0xFFFF:
        raise TestbedError(f"RACS w_min + w_max = {w_min + w_max:g}: the option carries weights up to 255")
    n = next(i for i, w in enumerate(ws) if w == floor) + 1
    return ws[:n]


def _racs(plan) -> tuple[dict, dict]:
    """A fixed ``weight`` is the mark (x 256); a sized flow without one marks its size and
    takes eq. 4.1 from the table; all flows of a run share (w_min, w_max, a)."""
    eq41 = _eq41(plan.flows[0].params)
    for fl in plan.flows:
        if _eq41(fl.params) != eq41:
            raise TestbedError(f"flows[{fl.flow_id}]: all RACS flows of a testbed run must share w_min, w_max and a")
        w = fl.params.get("weight")
        if w is None:
            _mark_size(fl, plan.sockopts[fl.flow_id])
            continue
        if not 1 / 256 <= float(w) < 256:
            raise TestbedError(f"flows[{fl.flow_id}]: RACS weight {float(w):g}: the option carries 1/256 to 255")
        plan.sockopts[fl.flow_id].mark = round(float(w) * 256)
    if not 1 / 256 <= eq41[0] < 256:
        raise TestbedError(f"RACS w_min {eq41[0]:g}: the option carries weights of 1/256 to 255")
    table = racs_weight_table(*eq41) if any(so.mark & FB_MARK_SIZED for so in plan.sockopts.values()) else []
    host = {"w_min": round(eq41[0] * 256), "table_len": len(table), "table": table}
    return dict(initial_rtt_s=_initial_rtt(plan)), host


def _sdc(plan) -> tuple[dict, dict]:
    """Sized flows mark their size (their class follows it); the host program is built with
    the simulator's default classes and load-factor stamp, so other values of those keys are
    refused."""
    built_in = sdc_built_in()
    for fl in plan.flows:
        changed = [k for k, v in built_in.items() if fl.params.get(k) != v]
        if changed:
            raise TestbedError(
                f"flows[{fl.flow_id}]: SDC's {', '.join(changed)}: the testbed runs SDC's default classes and stamp"
            )
        _mark_size(fl, plan.sockopts[fl.flow_id])
    t_p = plan.flows[0].params.get("t_p")
    return dict(initial_rtt_s=_initial_rtt(plan), t_p_s=float(t_p) * 1e-9 if t_p else 0.0), {}


PROTOCOLS = {
    "rcp": Protocol(RcpParams, "rcp_host.bpf.c", "fctlab_rcp", _rcp),
    "racs": Protocol(
        RacsParams,
        "racs_host.bpf.c",
        "fctlab_racs",
        _racs,
        ("racs_host_params", f"<II{RACS_WEIGHT_TABLE}H", ("w_min", "table_len", "table")),
    ),
    "sdc": Protocol(SdcParams, "sdc_host.bpf.c", "fctlab_sdc", _sdc),
}


def feedback_params(plan) -> tuple[dict, dict]:
    """The switch ports' parameters (besides the capacity) and the host programs' of the
    run's router-assisted protocol, from its flows' keys (the simulator checks that flows
    agree on the keys ports read); sets the flows' marks."""
    return PROTOCOLS[plan.flows[0].protocol].plan_params(plan)
