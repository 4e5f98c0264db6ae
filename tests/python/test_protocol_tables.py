"""Each protocol's parameters in a table of its own (`[transport.rcp]`, `rcp = {...}` in a flow):
a key the protocol does not read, a table no flow uses, a table of another protocol than the
entry's and a parameter outside its table are one-line errors naming the key; a sweep that
varies the protocol leaves out the tables of the protocols a run does not use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fctlab
from fctlab.plan import load_file
from fctlab.sweeps import load_sweep, sweep

BASE = """
seed = 1
stop_time = "20ms"
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
link_delay = "10us"
buffer = "100pkt"
queue = "ecn"
ecn_threshold = "20pkt"
[transport]
protocol = "{protocol}"
{tables}
[[flows]]
src = "s0"
dst = "r0"
size = "200KB"
{flow}
[[flows]]
src = "s1"
dst = "r1"
size = "200KB"
"""


def _scenario(tmp_path, protocol="dctcp", tables="", flow=""):
    p = tmp_path / "s.toml"
    p.write_text(BASE.format(protocol=protocol, tables=tables, flow=flow))
    return p


def test_a_protocol_table_sets_its_flows_and_an_entry_table_overrides_it(tmp_path):
    f = fctlab.validate(_scenario(tmp_path), set=[])
    assert f["transport"]["protocols"] == {"dctcp": 2}
    # the table's value reaches every DCTCP flow, the flow's own table overrides it
    p = _scenario(tmp_path, tables="[transport.dctcp]\ndctcp_g = 0.5", flow="dctcp = { dctcp_g = 0.25 }")
    flows = load_file(p).flows
    assert [fl.params["dctcp_g"] for fl in flows] == [0.25, 0.5]


@pytest.mark.parametrize(
    "tables, flow, key, message",
    [
        (
            "[transport.dctcp]\nweight = 2",
            "",
            "transport.dctcp.weight",
            "unknown key (dctcp's parameters: dctcp_g, dctcp_alpha_init)",
        ),
        ("[transport.rcp]\nalpha = 0.2", "", "transport.rcp.alpha", "no flow uses rcp (the flows' protocols: dctcp)"),
        ("dctcp_g = 0.5", "", "transport.dctcp_g", "a protocol parameter goes in its protocol's table: `dctcp = {"),
        ("", "dctcp_g = 0.5", "flows[0].dctcp_g", "a protocol parameter goes in its protocol's table"),
        ("", "weight = 2", "flows[0].weight", "`atcp = { weight = ... }` or `racs = { weight = ... }`"),
        ("", "rcp = { alpha = 0.2 }", "flows[0].rcp", 'parameters of rcp, but this entry\'s protocol is "dctcp"'),
        ("", "dctcp = 3", "flows[0].dctcp", "expected a table of dctcp's parameters"),
        ("", "colour = 1", "flows[0].colour", "unknown key `colour` (not one of this table's keys"),
        ("", 'sze = "1KB"', "flows[0].sze", "unknown key `sze` (did you mean `size`?)"),
        ("[transport.dctcp]\ndctcp_g = 2.0", "", "transport.dctcp.dctcp_g", ""),
    ],
)
def test_misplaced_parameters_exit_2_with_one_line_naming_the_key(tmp_path, tables, flow, key, message):
    p = _scenario(tmp_path, tables=tables, flow=flow)
    r = subprocess.run(
        [sys.executable, "-m", "fctlab.cli", "validate", str(p)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stdout
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{p}: {key}: " in line and message in line, line


def test_a_protocol_switched_by_an_override_may_leave_its_table_unused(tmp_path):
    """Comparing with TCP on the same file (--set transport.protocol=tcp, or a sweep with the
    protocol on an axis) needs no --unset; the file as written must use every table."""
    base = _scenario(tmp_path, tables="[transport.dctcp]\ndctcp_g = 0.125")
    assert fctlab.validate(base, set=["transport.protocol=tcp"])["transport"]["protocols"] == {"tcp": 2}
    assert fctlab.validate(base, set=["flows.0.protocol=tcp"])["transport"]["protocols"] == {"tcp": 1, "dctcp": 1}
    f = tmp_path / "sweep.toml"
    f.write_text(f'base = "{base.name}"\n[axes]\n"transport.protocol" = ["tcp", "dctcp"]\n')
    assert len(sweep(f, tmp_path / "out", workers=1, log=lambda m: None)) == 2
    # a file whose own protocol uses no table stays an error, also under other overrides
    base.write_text(base.read_text().replace('protocol = "dctcp"', 'protocol = "tcp"'))
    with pytest.raises(fctlab.ScenarioError, match=r"transport.dctcp.dctcp_g: no flow uses dctcp"):
        fctlab.validate(base, set=["seed=2"])
    g = tmp_path / "seeds.toml"
    g.write_text(f'base = "{base.name}"\nseeds = 2\n')
    with pytest.raises(Exception, match=r"transport.dctcp.dctcp_g: no flow uses dctcp"):
        load_sweep(g)
