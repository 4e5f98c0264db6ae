"""Per-packet load balancing and trimming from the front end: the tutorial's comparison
(docs/tutorial.md, section 7) draws the figure it shows, and NDP fills a k = 8 permutation
where ECMP DCTCP does not."""


def test_the_tutorials_load_balancing_runs_draw_the_figure_it_shows(tmp_path, monkeypatch):
    from pathlib import Path

    from fctlab.cli import main

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "tutorial.md").read_text()
    scenario = str(root / "scenarios" / "tutorial" / "permutation.toml")
    ndp = [
        "--set", "network.load_balancing=permutation", "--set", "network.queue=trim",
        "--unset", "network.ecn_threshold", "--set", "network.nic_queue=trim",
        "--set", "transport.protocol=ndp", "--set", "transport.ndp.ndp_initial_window=30",
    ]  # fmt: skip
    runs = {
        "ecmp": [],
        "flowlet": ["--set", "network.load_balancing=flowlet"],
        "spray": ["--set", "network.load_balancing=spray"],
        "ndp": ndp,
    }
    # the doc's commands are these (the NDP one split over lines there)
    assert "fctlab report out/ecmp out/flowlet out/spray out/ndp --out out/lb-report" in doc
    assert "img/tutorial_load_balancing.png" in doc
    for arg in ndp[1::2]:
        assert arg in doc, arg
    monkeypatch.chdir(tmp_path)
    for name, args in runs.items():
        assert main(["run", scenario, *args, "--out", f"out/{name}", "-q"]) == 0
    assert main(["report", *(f"out/{n}" for n in runs), "--out", "out/lb-report"]) == 0
    png = (tmp_path / "out" / "lb-report" / "fct_cdf.png").read_bytes()
    assert png == (root / "docs" / "img" / "tutorial_load_balancing.png").read_bytes(), "redraw docs/img's figure"
    import pandas as pd

    share = {}
    for name in runs:
        f = pd.read_parquet(tmp_path / "out" / name / "flows.parquet")
        assert f["completed"].all()
        share[name] = (f["size_bytes"] * 8 / f["fct_s"] / 10e9).mean()
    # the k = 8 run of what the k = 4 test in crates/sim/tests/ndp.rs checks: NDP at least 90%
    # of the hosts' link rate on average, ECMP DCTCP not (its flows collide)
    assert share["ndp"] >= 0.90 and share["ecmp"] < 0.90, share
