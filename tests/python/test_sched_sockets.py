"""SCHED_TCP over real sockets (fctlab.sched, the fctlab-sched-tokio library): byte-identical
delivery over loopback under every policy, SRPT's effect, and clear errors."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import fctlab.sched as sched
from fctlab.cli import main


def test_every_policy_delivers_every_message_over_loopback():
    rng = np.random.default_rng(3)
    sizes = [0, 1, 1448, 16384, 16385] + list(rng.integers(1, 400_000, 25))
    starts = sorted(rng.uniform(0, 0.2, len(sizes)))
    for policy in sched.POLICIES:
        df = sched.loopback(
            sizes,
            starts,
            policy=policy,
            tags=["a", "b"] * 15,
            priority_tags=["b"],
            send_buffer_bytes=32768,
            chunk_bytes=4096,
        )
        assert len(df) == len(sizes)
        assert df["error"].isna().all(), (policy, df["error"].dropna().tolist())
        assert df["completed"].all() and (df["fct_s"] > 0).all()
        assert (df["scheduler"] == policy).all()
        assert list(df["size_bytes"]) == [int(s) for s in sizes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_send_and_recv_between_two_processes(tmp_path):
    scen = tmp_path / "w.toml"
    scen.write_text(
        'seed = 4\n[network]\ntopology = "dumbbell"\nsenders = 1\nreceivers = 1\nlink_rate = "1Gbps"\n'
        'link_delay = "10us"\n[transport]\nscheduler = "srpt"\n[[workloads]]\nkind = "poisson"\nsenders = "s0"\n'
        'receivers = "r0"\nsizes = { dist = "pareto_c", alpha = 3, c = 1e-5 }\narrival_rate = "200/s"\ncount = 20\n'
    )
    port = _free_port()
    recv = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fctlab.cli",
            "sched",
            "recv",
            "--listen",
            f"127.0.0.1:{port}",
            "--expect",
            "20",
            "--timeout",
            "30",
            "--out",
            str(tmp_path / "r"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        rc = main(["sched", "send", str(scen), "--to", f"127.0.0.1:{port}", "--out", str(tmp_path / "s")])
        out, err = recv.communicate(timeout=60)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    assert rc == 0 and recv.returncode == 0, (out, err)
    assert "received 20 messages, 0 errors" in out
    import pandas as pd

    flows = pd.read_parquet(tmp_path / "s" / "flows.parquet")
    assert len(flows) == 20 and flows["completed"].all() and (flows["scheduler"] == "srpt").all()


def test_bad_arguments_are_named(tmp_path, capsys):
    with pytest.raises(sched.SchedError, match="not an address HOST:PORT"):
        sched.recv("nowhere")
    with pytest.raises(ValueError, match="policy: unknown scheduler"):
        sched.loopback([10], [0.0], policy="sjf")
    with pytest.raises(ValueError, match=r"starts_s\[0\]"):
        sched.loopback([10], [-1.0])
    scen = tmp_path / "two.toml"
    scen.write_text(
        '[network]\ntopology = "dumbbell"\nsenders = 2\nreceivers = 2\nlink_rate = "1Gbps"\nlink_delay = "10us"\n'
        '[[flows]]\nsrc = "s0"\ndst = "r0"\nsize = "1MB"\n[[flows]]\nsrc = "s1"\ndst = "r1"\nsize = "1MB"\n'
    )
    assert main(["sched", "send", str(scen), "--to", "127.0.0.1:9", "--out", str(tmp_path / "o")]) == 2
    assert "2 host pairs (s0->r0, s1->r1)" in capsys.readouterr().err
    # A receiver that is not there: every message fails, naming the address.
    scen.write_text(
        '[network]\ntopology = "dumbbell"\nsenders = 1\nreceivers = 1\nlink_rate = "1Gbps"\nlink_delay = "10us"\n'
        '[[flows]]\nsrc = "s0"\ndst = "r0"\nsize = "10KB"\n'
    )
    port = _free_port()
    assert (
        main(["sched", "send", str(scen), "--to", f"127.0.0.1:{port}", "--timeout", "2", "--out", str(tmp_path / "o")])
        == 1
    )
    assert f"connecting to 127.0.0.1:{port}" in capsys.readouterr().out
