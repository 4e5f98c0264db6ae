"""docs/protocols.md lists exactly the protocols the simulator is built with."""

from pathlib import Path

from fctlab import _core

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"


def documented():
    """{name: (aliases, keys with defaults, ecn, transport)} from the table under '## The protocols'."""
    rows, on = {}, False
    for line in DOC.read_text().splitlines():
        if line.startswith("| protocol | also |"):
            on = True
            continue
        if on and not line.startswith("|"):
            break
        if on and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[1:5]
    return rows


def fmt(v):
    return f'"{v}"' if isinstance(v, str) else str(v)


def test_the_table_matches_the_registry():
    rows = documented()
    registry = _core.protocols()
    assert sorted(rows) == sorted(p["names"][0] for p in registry), "protocols in docs/protocols.md vs the registry"
    for p in registry:
        also, params, ecn, transport = rows[p["names"][0]]
        assert also == ", ".join(f"`{n}`" for n in p["names"][1:]), p["names"][0]
        want = (
            ", ".join(f"`{k}` ({fmt(p['defaults'][k])})" if k in p["defaults"] else f"`{k}`" for k in p["keys"])
            or "none"
        )
        assert params == want, p["names"][0]
        assert ecn == ("always" if p["requires_ecn"] else "as `[transport] ecn`"), p["names"][0]
        assert transport == ", ".join(f"`{t}`" for t in p["transports"]), p["names"][0]
