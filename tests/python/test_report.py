"""write_report and main_report on small fake run directories."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest


from fctlab import report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _flows(n: int, *, completed: bool = True, protocol: str = "tcp") -> pd.DataFrame:
    sizes = [2_000, 50_000, 300_000, 5_000_000, 20_000_000, None][:n]
    fct = [0.0004 * (i + 1) * (1 if s is None else 1 + s / 1e6) for i, s in enumerate(sizes)]
    done = [completed and s is not None for s in sizes]
    return pd.DataFrame(
        {
            "flow_id": pd.array(range(n), dtype="int64"),
            "src": [f"h{i}" for i in range(n)],
            "dst": ["h9"] * n,
            "size_bytes": pd.array(sizes, dtype="Int64"),
            "bytes_delivered": pd.array([s or 1_000 for s in sizes], dtype="int64"),
            "start_s": [0.001 * i for i in range(n)],
            "finish_s": [0.001 * i + f if d else None for i, (f, d) in enumerate(zip(fct, done))],
            "fct_s": [f if d else None for f, d in zip(fct, done)],
            "ideal_fct_s": [None if s is None else f / 2 for f, s in zip(fct, sizes)],
            "slowdown": [2.0 if d else None for d in done],
            "completed": done,
            "protocol": [protocol] * n,
            "retransmits": pd.array([0] * n, dtype="int64"),
            "timeouts": pd.array([0] * n, dtype="int64"),
            "deadline_s": [0.01] + [None] * (n - 1),
            "tag": ["web"] * n,
            "group": ["incast:1", "incast:1"] + [""] * (n - 2),
        }
    )


def _summary(flows: pd.DataFrame, name: str) -> dict:
    return {
        "sim_time_s": 0.05,
        "wall_time_s": 0.2,
        "events": 1000,
        "events_per_s": 5000.0,
        "data_packets_delivered": 100,
        "flows_total": len(flows),
        "flows_completed": int(flows["completed"].sum()),
        "drops": 3,
        "ecn_marks": 1,
        "seed": 7,
        "version": "0.1.0",
        "scenario_sha256": "0" * 64,
        "scenario_name": name,
    }


def _make_run(root: Path, name: str, flows: pd.DataFrame, *, extras: bool) -> Path:
    d = root / name
    d.mkdir()
    flows.to_parquet(d / "flows.parquet", index=False)
    (d / "summary.json").write_text(json.dumps(_summary(flows, name)))
    if extras:
        pd.DataFrame(
            {
                "link_id": pd.array([0, 1, 2], dtype="int64"),
                "src": ["h0", "s0", "s0"],
                "dst": ["s0", "h9", "h1"],
                "rate_bps": [1e9] * 3,
                "delay_s": [1e-6] * 3,
                "buffer_pkts": pd.array([100, 100, 100], dtype="Int64"),
                "buffer_bytes": pd.array([None, None, None], dtype="Int64"),
                "tx_packets": pd.array([100, 95, 5], dtype="int64"),
                "tx_bytes": pd.array([150_000, 142_500, 7_500], dtype="int64"),
                "drops": pd.array([0, 3, 0], dtype="int64"),
                "ecn_marks": pd.array([0, 1, 0], dtype="int64"),
                "utilization": [0.024, 0.0228, 0.0012],
                "max_queue_pkts": pd.array([2, 40, 1], dtype="int64"),
                "mean_queue_pkts": [0.1, 12.0, 0.01],
            }
        ).to_parquet(d / "links.parquet", index=False)
        times = [0.0, 0.01, 0.02, 0.03, 0.04]
        pd.DataFrame(
            {
                "time_s": times * 2,
                "link_id": pd.array([1] * 5 + [0] * 5, dtype="int64"),
                "link": ["s0->h9"] * 5 + ["h0->s0"] * 5,
                "queue_pkts": pd.array([0, 20, 40, 10, 0, 0, 1, 2, 1, 0], dtype="int64"),
                "queue_bytes": pd.array([q * 1500 for q in [0, 20, 40, 10, 0, 0, 1, 2, 1, 0]], dtype="int64"),
            }
        ).to_parquet(d / "queues.parquet", index=False)
        pd.DataFrame(
            {
                "time_s": times * 2,
                "flow_id": pd.array([0] * 5 + [1] * 5, dtype="int64"),
                "cwnd_bytes": pd.array([14_600, 29_200, 58_400, 29_200, 43_800] * 2, dtype="int64"),
                "rate_bps": [None] * 10,
                "weight": [None] * 10,
            }
        ).to_parquet(d / "cwnd.parquet", index=False)
    return d


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    mixed = _flows(6).assign(protocol=["tcp"] * 3 + ["dctcp"] * 3)  # two protocols: a per-protocol table
    good = _make_run(tmp_path, "tcp", mixed, extras=True)
    stuck = _make_run(tmp_path, "stuck", _flows(4, completed=False, protocol="dctcp"), extras=False)
    return good, stuck


EXPECTED_PNGS = {
    "fct_cdf.png",
    "fct_by_bucket.png",
    "slowdown_by_bucket.png",
    "active_flows.png",
    "link_utilization.png",
    "queues_tcp.png",
    "cwnd_tcp.png",
}


def test_write_report_html(runs, tmp_path):
    import matplotlib

    backend = matplotlib.get_backend()
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = report.write_report(list(runs), out, title="Two runs")
    assert not [str(w.message) for w in caught]
    assert matplotlib.get_backend() == backend
    assert path == out / "report.html" and path.is_file()
    text = path.read_text(encoding="utf-8")
    assert "<h1>Two runs</h1>" in text
    for heading in ("Runs", "Flow completion times", "Deadlines", "Jobs", "Links", "Queues", "Congestion windows"):
        assert f"<h2>{heading}</h2>" in text
    assert "stuck: no completed flows (4 flows, none completed)." in text
    assert "By protocol" in text and "By tag" in text
    pngs = {p.name for p in out.glob("*.png")}
    assert pngs == EXPECTED_PNGS
    for name in pngs:
        assert (out / name).read_bytes().startswith(PNG_SIGNATURE), name
    assert text.count('src="data:image/png;base64,') == len(EXPECTED_PNGS)
    assert "http://" not in text and "https://" not in text  # self-contained


def test_write_report_markdown(runs, tmp_path):
    out = tmp_path / "md"
    path = report.write_report(runs[0], out, fmt="md")
    assert path == out / "report.md"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# fctlab report: tcp")
    assert "## Flow completion times" in text and "## Queues" in text
    linked = set(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text))
    assert linked == EXPECTED_PNGS
    for name in linked:
        assert (out / name).read_bytes().startswith(PNG_SIGNATURE)


def test_write_report_only_incomplete_flows(runs, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = report.write_report([runs[1]], tmp_path / "stuck")
    assert not [str(w.message) for w in caught]
    text = path.read_text(encoding="utf-8")
    assert "no completed flows" in text
    assert "No link statistics (links.parquet) in any run." in text
    assert {p.name for p in (tmp_path / "stuck").glob("*.png")} == {"active_flows.png"}


def test_write_report_missing_files(runs, tmp_path):
    (runs[1] / "flows.parquet").unlink()
    with pytest.raises(report.RunLoadError, match=r"run directory '.*stuck' has no flows\.parquet"):
        report.write_report(list(runs), tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(report.RunLoadError, match="does not exist"):
        report.write_report([tmp_path / "nope"], tmp_path / "x")
    with pytest.raises(ValueError, match="fmt"):
        report.write_report([runs[0]], tmp_path / "x", fmt="pdf")


def test_main_report(runs, tmp_path, capsys):
    out = tmp_path / "cli"
    assert report.main_report([str(runs[0]), "--out", str(out), "--format", "md", "--title", "T"]) == 0
    assert (out / "report.md").is_file()
    assert capsys.readouterr().out.strip() == str(out / "report.md")

    (runs[0] / "summary.json").unlink()
    assert report.main_report([str(runs[0]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "summary.json" in err and "Traceback" not in err

    assert report.main_report([str(tmp_path / "missing"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing" in err

    assert report.main_report([str(runs[1])]) == 2  # --out is required
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err


def test_timeouts_are_attributed_to_what_led_to_them(tmp_path):
    """Per flow: a flow that lost packets counts its timeouts as after a loss; one that lost
    none, as a wait past the RTO (a starved low band, a long queue). The report's table gives
    both, and the two add up to the run's timeouts."""
    import fctlab
    from fctlab import metrics

    flows = pd.DataFrame(
        {
            "timeouts": [3, 2, 0, 1],
            "drops": [5, 0, 4, 0],
            "first_timeouts": [1, 0, 0, 1],
            "ecn_timeouts": [0, 2, 0, 0],
        }
    )
    c = metrics.timeout_causes(flows)
    assert c == {
        "timeouts": 6,
        "after_loss": 3,
        "without_loss": 3,
        "flows_without_loss": 2,
        "first": 2,
        "after_ecn_cut": 2,
    }
    assert metrics.timeout_causes(flows.drop(columns="ecn_timeouts"))["after_ecn_cut"] is None
    demo = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "demo.toml"
    fctlab.run(demo).write(tmp_path / "demo")
    text = report.write_report([tmp_path / "demo"], tmp_path / "r", fmt="md").read_text()
    assert "Timeouts by cause" in text
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    after = text[text.index("Timeouts by cause") :]
    row = next(line for line in after.splitlines() if line.startswith("| demo"))
    cells = [x.strip() for x in row.strip("|").split("|")]
    flows = pd.read_parquet(tmp_path / "demo" / "flows.parquet")
    want = metrics.timeout_causes(flows)
    assert int(cells[1]) == want["timeouts"] == int(flows["timeouts"].sum()) > 0, (cells, summary)
    assert int(cells[2].replace(",", "")) + int(cells[3].split()[0]) == want["timeouts"]
