"""The rows of finished flows leave the core while the run goes on (`_core.run`'s
`on_flows`), and `fctlab.run` assembles the same flows table as a run that keeps every row to
the end."""

from __future__ import annotations

import fctlab
from fctlab import _core, api


def scenario(count: int) -> dict:
    return {
        "name": "streamed",
        "seed": 3,
        "stop_time": "40ms",
        "network": {
            "topology": "leafspine",
            "leaves": 4,
            "spines": 2,
            "hosts_per_leaf": 8,
            "link_rate": "10Gbps",
            "fabric_link_rate": "40Gbps",
            "link_delay": "1us",
            "buffer": "30pkt",
        },
        "transport": {"min_rto": "1ms"},
        "workloads": [
            {
                "kind": "poisson",
                "senders": "h*",
                "receivers": "h*",
                "sizes": {"dist": "pareto", "shape": 1.2, "mean": "5KB"},
                "load": 0.6,
                "count": count,
            }
        ],
    }


def test_a_streamed_run_has_the_flows_table_of_one_that_keeps_every_row():
    """100,000 flows: the streamed table is the in-memory one, row for row, and most rows
    came out during the run."""
    sc = scenario(100_000)
    text, name, fmt = api._source(sc)
    batches: list = []
    streamed = _core.run(text, name, fmt, [], None, 0.5, [], batches.append)
    kept = _core.run(text, name, fmt, [], None, 0.5, [])
    schema = api._schema("flows")
    whole = api._table(kept["flows"], schema)
    out_during_run = sum(b[0][0] for b in batches)
    assert len(batches) > 3 and out_during_run > 0.9 * whole.num_rows, (len(batches), out_during_run)
    assert out_during_run + streamed["flows"][0][0] == whole.num_rows
    assembled = api._flows_table(batches, streamed["flows"])
    assert assembled.equals(whole)
    # and what `fctlab.run` returns
    res = fctlab.run(sc)
    assert res.flows_table.equals(whole)
    assert not res.flows["completed"].all()  # the stop time cut some off; they come at the end
