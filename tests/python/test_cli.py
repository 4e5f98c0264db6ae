"""The fctlab command: exit codes, messages, files."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "scenarios" / "examples" / "demo.toml"
FCTLAB = [sys.executable, "-c", "from fctlab.cli import entry; entry()"]

GOOD = """
name = "t"
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
link_delay = "10us"
[[flows]]
src = "s0"
dst = "r1"
size = "100KB"
"""


def fctlab(*args, **kw):
    return subprocess.run(FCTLAB + [str(a) for a in args], capture_output=True, text=True, cwd=ROOT, **kw)


def test_run_writes_files_and_prints_summary(tmp_path):
    p = fctlab("run", DEMO, "--out", tmp_path / "o")
    assert p.returncode == 0, p.stderr
    for f in ("flows.parquet", "links.parquet", "summary.json", "queues.parquet"):
        assert (tmp_path / "o" / f).exists(), f
    assert "completed" in p.stdout and "FCT" in p.stdout


def test_validate_ok():
    p = fctlab("validate", DEMO)
    assert p.returncode == 0, p.stderr
    assert "ok" in p.stdout


@pytest.mark.parametrize(
    "change, key, expected",
    [
        (("link_rate", "link_rat"), "network.link_rat", "unknown key"),
        (('"1Gbps"', '"1Gbs"'), "network.link_rate", "expected a rate"),
        (('"100KB"', '"-100KB"'), "flows[0].size", "negative"),
        (('dst = "r1"', 'dst = "r7"'), "flows[0].dst", 'unknown host "r7"'),
        (('"10us"', "10"), "network.link_delay", "bare number"),
        (('topology = "dumbbell"', 'topology = "dumbell"'), "network.topology", "unknown topology"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(tmp_path, change, key, expected):
    f = tmp_path / "bad.toml"
    f.write_text(GOOD.replace(*change))
    for cmd in (("validate", f), ("run", f, "--out", tmp_path / "o")):
        p = fctlab(*cmd)
        assert p.returncode == 2, (p.stdout, p.stderr)
        err = p.stderr.strip()
        assert "Traceback" not in err and "panicked" not in err
        assert len(err.splitlines()) == 1, err
        assert str(f) in err and key in err and expected in err, err


def test_disconnected_topology(tmp_path):
    f = tmp_path / "islands.toml"
    f.write_text(
        """
[network]
topology = "custom"
nodes = [{name = "a", kind = "host"}, {name = "x", kind = "switch"}, {name = "b", kind = "host"}, {name = "y", kind = "switch"}]
links = [{a = "a", b = "x"}, {a = "b", b = "y"}]
[[flows]]
src = "a"
dst = "b"
size = "1KB"
"""
    )
    p = fctlab("validate", f)
    assert p.returncode == 2
    assert "disconnected" in p.stderr and "network" in p.stderr


def test_missing_file_and_bad_override(tmp_path):
    p = fctlab("run", tmp_path / "nope.toml", "--out", tmp_path / "o")
    assert p.returncode == 2 and "no such scenario file" in p.stderr
    p = fctlab("run", DEMO, "--out", tmp_path / "o", "--set", "flows.99.size=1")
    assert p.returncode == 2 and "out of range" in p.stderr
    p = fctlab("run", DEMO)
    assert p.returncode == 2 and "--out" in p.stderr


def test_a_run_ends_without_teardown_yet_with_its_output_and_files_whole(tmp_path):
    """`fctlab run` ends its process without the interpreter's teardown (NO_TEARDOWN): what it
    printed to a file (block-buffered, not a terminal) is all there, its tables read back
    whole, and its exit status is the command's."""
    from fctlab import cli
    from fctlab import run as api_run
    from fctlab.rundir import check_run_dir

    assert "run" in cli.NO_TEARDOWN
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        rc = subprocess.run(FCTLAB + ["run", str(DEMO), "--out", str(tmp_path / "o")], stdout=out, stderr=err, cwd=ROOT)
    printed = (tmp_path / "out.txt").read_text().splitlines()
    assert rc.returncode == 0, (tmp_path / "err.txt").read_text()
    assert printed[-1].startswith("  wrote      ") and "flows.parquet" in printed[-1]
    assert check_run_dir(tmp_path / "o") == []
    flows = pq.read_table(tmp_path / "o" / "flows.parquet")
    assert flows.num_rows == len(api_run(DEMO).flows)
    with open(tmp_path / "err2.txt", "w") as err:
        rc = subprocess.run(
            FCTLAB + ["run", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "p")], stderr=err, cwd=ROOT
        )
    assert rc.returncode == 2 and "no such scenario file" in (tmp_path / "err2.txt").read_text()


def test_sample_queues_flag(tmp_path):
    f = tmp_path / "g.toml"
    f.write_text(GOOD)
    p = fctlab("run", f, "--out", tmp_path / "o", "--sample-queues", "50us")
    assert p.returncode == 0, p.stderr
    q = pq.read_table(tmp_path / "o" / "queues.parquet").to_pandas()
    assert len(q) > 0 and set(q["link"]) >= {"left->right"}


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery needs POSIX")
def test_ctrl_c_writes_partial_results(tmp_path):
    f = tmp_path / "long.toml"
    flows = "".join(f'[[flows]]\nsrc = "s{i}"\ndst = "r{i}"\n' for i in range(8))
    f.write_text(
        'stop_time = "100s"\n[network]\ntopology = "dumbbell"\nsenders = 8\nreceivers = 8\nlink_rate = "10Gbps"\n'
        '[[flows]]\nsrc = "s0"\ndst = "r1"\nsize = "100GB"\n' + flows
    )
    # SIGINT at its default in the child, as on a terminal, even when this test runs from a
    # background job (which starts with SIGINT ignored, and Python then installs no handler)
    proc = subprocess.Popen(
        FCTLAB + ["run", str(f), "--out", str(tmp_path / "o")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(3.0)  # well into the simulation loop (start-up takes well under a second)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    t = pq.read_table(tmp_path / "o" / "flows.parquet").to_pandas()
    assert len(t) == 9
    assert not t["completed"].any()
    assert t["finish_s"].isna().all()
    assert t["bytes_delivered"].sum() > 0


def test_light_commands_do_not_import_heavy_libraries():
    """`import fctlab` and `fctlab validate` load neither pyarrow nor pandas nor matplotlib, and
    `fctlab run` not pandas or matplotlib: they only load where a command needs them. (A run
    whose flows all finished hands its results out as they finish and has none left at the end:
    its empty tables must not load pandas either.)"""
    import subprocess
    import sys

    probe = (
        "import sys; from fctlab.cli import main; main({argv!r}[1:])\n"
        "print(sorted(m for m in ('pyarrow', 'pandas', 'matplotlib') if m in sys.modules))"
    )
    demo = str(DEMO)

    def heavy(argv):
        p = subprocess.run([sys.executable, "-c", probe.format(argv=argv)], capture_output=True, text=True, timeout=120)
        return p.stdout.strip().splitlines()[-1]

    p = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fctlab; print(sorted(m for m in ('pyarrow', 'pandas', 'matplotlib') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.stdout.strip() == "[]"
    assert heavy(["fctlab", "validate", demo]) == "[]"
    import tempfile

    for scenario in (demo, str(ROOT / "scenarios" / "examples" / "incast_rounds.toml")):
        with tempfile.TemporaryDirectory() as td:
            assert heavy(["fctlab", "run", scenario, "--out", td]) == "['pyarrow']", scenario


def test_validate_prints_the_resolved_transport_settings():
    out = subprocess_run(
        ["validate", str(DEMO), "--set", 'transport.profile="ns2"', "--set", "transport.initial_cwnd=4"]
    )
    line = [l for l in out.splitlines() if l.strip().startswith("transport:")][0]
    # the ns2 profile's values, with the explicitly given key overriding it
    for part in (
        "profile ns2",
        "tcp (9 flows)",
        "mss 1000 B",
        "initial window 4",
        "initial ssthresh 20,000 B",
        "rwnd 20,000 B",
        "SACK off",
        "initial 3 s",
        "tick 10 ms",
        "handshake on",
    ):
        assert part in line, (part, line)
    line = [l for l in subprocess_run(["validate", str(DEMO)]).splitlines() if "transport:" in l][0]
    assert "profile linux" in line and "SACK on" in line and "initial ssthresh unlimited" in line, line


def subprocess_run(args):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "fctlab.cli", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_unset_makes_an_invalid_override_valid_and_is_recorded(tmp_path):
    import json
    import subprocess
    import sys

    sc = tmp_path / "ecn.toml"
    sc.write_text(
        'stop_time = "20ms"\n[network]\ntopology = "dumbbell"\nsenders = 2\nreceivers = 2\nqueue = "ecn"\n'
        'ecn_threshold = "20pkt"\n[transport]\nprotocol = "dctcp"\n[[flows]]\nsrc = "s0"\ndst = "r0"\n'
    )

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "fctlab.cli", *args], capture_output=True, text=True, timeout=60)

    p = cli("run", str(sc), "--out", str(tmp_path / "a"), "--set", "network.queue=droptail")
    assert p.returncode == 2 and "network.ecn_threshold: only used with queue" in p.stderr
    p = cli(
        "run",
        str(sc),
        "--out",
        str(tmp_path / "b"),
        "--set",
        "network.queue=droptail",
        "--unset",
        "network.ecn_threshold",
    )
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["unset"] == ["network.ecn_threshold"] and summary["overrides"] == ["network.queue=droptail"]
    p = cli("validate", str(sc), "--unset", "network.ecn_treshold")
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"fctlab validate: error: {sc}: --unset network.ecn_treshold: no key `ecn_treshold` in `network` "
        "to remove (its keys: ecn_threshold, queue, receivers, senders, topology)"
    ), p.stderr


def test_validate_writes_times_in_their_unit(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text('stop_time = "210ms"\n[network]\ntopology = "star"\nhosts = 2\n[[flows]]\nsrc = "h0"\ndst = "h1"\n')
    assert "stops 210ms" in subprocess_run(["validate", str(sc)])


def test_progress_line_shows_a_bar_and_an_estimate():
    import io

    from fctlab.cli import _progress_printer

    out = io.StringIO()
    cb = _progress_printer(out, 0.21)
    cb(0.105, 3, 8)
    line = out.getvalue()
    assert (
        "[############............]  50%" in line and "simulated 105ms of 210ms" in line and "3/8 flows done" in line
    ), line
    assert "left" in line  # an estimate of the wall time left once a few percent are done
    out = io.StringIO()
    _progress_printer(out, None)(0.5, 2, 8)  # no stop time: the share of flows completed
    assert " 25%" in out.getvalue() and " of " not in out.getvalue()


def test_validate_says_which_flows_are_ecn_capable_and_warns_when_no_queue_marks():
    out = subprocess_run(["validate", str(DEMO), "--set", 'transport.protocol="dctcp"'])
    assert "ECN off (on for dctcp, which requires it;" in out, out
    assert "the data packets of dctcp flows are ECN-capable whatever transport.ecn says" in out, out
    warning = [l for l in out.splitlines() if "warning:" in l]
    assert len(warning) == 1 and "no queue marks (switch queue droptail, NIC queue droptail)" in warning[0], out
    # A marking queue: no warning. Plain TCP without ECN: neither line.
    marked = subprocess_run(
        [
            "validate",
            str(DEMO),
            "--set",
            'transport.protocol="dctcp"',
            "--set",
            'network.queue="ecn"',
            "--set",
            'network.ecn_threshold="20pkt"',
        ]
    )
    assert "warning" not in marked and "ECN-capable whatever" in marked, marked
    plain = subprocess_run(["validate", str(DEMO)])
    assert "ECN" not in plain.replace("ECN off (linux reaction", ""), plain


def test_validate_reads_the_plan_without_listing_the_flows(monkeypatch, capsys):
    """`fctlab validate`'s notes on queues and buffers need the network only: it reads the plan
    without its flows (a million drawn flows took seconds to list), and still notes a lossless
    fabric."""
    from fctlab import cli, plan

    asked = []

    def load(*a, **kw):
        asked.append(kw.get("flows", True))
        return plan.load(*a, **kw)

    monkeypatch.setattr(cli, "load", load)
    sc = ROOT / "scenarios" / "examples" / "incast_rounds.toml"
    assert cli.main(["validate", str(sc), "--set", "network.pfc=true", "--set", "transport.ecn=true"]) == 0
    out = capsys.readouterr().out
    assert asked and not any(asked), asked
    assert "lossless" in out
