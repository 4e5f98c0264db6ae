"""Packet captures, the drop trace and the flows table's RTT and drop columns: a capture is
read back by scapy (and tshark when it is installed) with the packets, sequence numbers and
ECN marks the run's own tables say it must have."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

import fctlab

scapy = pytest.importorskip("scapy.all", reason="scapy (requirements-dev.txt) reads the captures back")

MSS = 1460

# Two DCTCP flows from s0 and one TCP flow from s1 through a dumbbell whose bottleneck marks
# above 10 packets and holds 30: ECN marks on the DCTCP flows, drops of the TCP one, SACK
# blocks on its ACKs, and a handshake on every flow.
SCENARIO = """
seed = 3
stop_time = "200ms"
[network]
topology = "dumbbell"
senders = 2
receivers = 2
link_rate = "1Gbps"
bottleneck_rate = "1Gbps"
link_delay = "10us"
buffer = "30pkt"
queue = "ecn"
ecn_threshold = "10pkt"
[transport]
protocol = "dctcp"
handshake = true
sack = true
min_rto = "5ms"
[monitor]
drops = true
pcap = ["s0", "s1", "left->right"]
[[flows]]
src = "s0"
dst = "r0"
size = "300KB"
[[flows]]
src = "s0"
dst = "r1"
size = "200KB"
start = "50us"
[[flows]]
src = "s1"
dst = "r0"
size = "400KB"
start = "20us"
protocol = "tcp"
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("pcap")
    res = fctlab.run(SCENARIO_FILE(d))
    res.write(d / "out")
    return res, d / "out"


def SCENARIO_FILE(d):
    p = d / "s.toml"
    p.write_text(SCENARIO)
    return p


def _packets(path):
    """(time, ip.src, ip.dst, ecn, sport, dport, seq, ack, flags, payload length, options)
    of each packet of a pcap file, as scapy reads them."""
    rows = []
    for p in scapy.rdpcap(str(path)):
        ip, tcp = p[scapy.IP], p[scapy.TCP]
        rows.append(
            dict(
                t=float(p.time),
                src=ip.src,
                dst=ip.dst,
                ecn=ip.tos & 3,
                sport=tcp.sport,
                dport=tcp.dport,
                seq=tcp.seq,
                ack=tcp.ack,
                flags=str(tcp.flags),
                payload=ip.len - 4 * ip.ihl - 4 * tcp.dataofs,
                options=dict((k, v) for k, v in tcp.options if k != "NOP"),
            )
        )
    return pd.DataFrame(rows)


def test_a_link_capture_has_every_packet_sequence_number_and_mark(run):
    res, out = run
    assert res.flows["completed"].all()
    links = res.links.set_index(["src", "dst"])
    bottleneck = links.loc[("left", "right")]
    pk = _packets(out / "pcap" / "left-right.pcap")
    # every packet that left `left` toward `right`, in time order
    assert len(pk) == bottleneck["tx_packets"] > 500
    assert pk["t"].is_monotonic_increasing
    # the CE marks the port made, on the ECN-capable packets only
    assert (pk["ecn"] == 3).sum() == bottleneck["ecn_marks"] > 0
    assert set(pk.loc[pk["sport"] == 1026, "ecn"]) == {0}, "the TCP flow is not ECN-capable"
    assert set(pk.loc[(pk["sport"] != 1026) & (pk["payload"] > 0), "ecn"]) <= {2, 3}
    # each flow's data: sequence numbers 1 + k x MSS up to its size, all present
    for f, size in enumerate(res.flows["size_bytes"]):
        data = pk[(pk["sport"] == 1024 + f) & (pk["payload"] > 0)]
        assert sorted(set(data["seq"])) == [1 + k * MSS for k in range(-(-int(size) // MSS))]
        assert data["payload"].sum() >= size
        syn = pk[(pk["sport"] == 1024 + f) & (pk["flags"] == "S")]
        assert list(syn["seq"]) == [0], "one SYN, sequence number 0"


def _hosts(out) -> dict:
    """Host name to IPv4 address, from the run directory's pcap/hosts."""
    lines = (out / "pcap" / "hosts").read_text().splitlines()
    return {name: ip for ip, name in (ln.split() for ln in lines if not ln.startswith("#"))}


def test_a_host_capture_has_what_it_sent_and_received(run):
    res, out = run
    links = res.links.set_index(["src", "dst"])
    ip = _hosts(out)
    assert sorted(ip) == ["r0", "r1", "s0", "s1"]
    pk = _packets(out / "pcap" / "s0.pcap")
    sent = pk[pk["src"] == ip["s0"]]
    received = pk[pk["dst"] == ip["s0"]]
    assert len(sent) + len(received) == len(pk)
    assert len(sent) == links.loc[("s0", "left"), "tx_packets"]
    assert len(received) == links.loc[("left", "s0"), "tx_packets"]
    # ACKs acknowledge up to each flow's size + 1, and echo the marks (ECE) for DCTCP
    for f in (0, 1):
        acks = received[received["dport"] == 1024 + f]
        assert acks["ack"].max() == res.flows.loc[f, "size_bytes"] + 1
    assert received["flags"].str.contains("E").any()


def test_sack_blocks_and_drops_agree_with_the_tables(run):
    res, out = run
    drops = res.drops
    assert len(drops) == res.summary["drops"] > 0
    assert drops.groupby("flow_id").size().reindex(res.flows["flow_id"], fill_value=0).tolist() == list(
        res.flows["drops"]
    )
    assert set(drops["cause"]) == {"buffer_full"}
    assert (drops["link"] == "left->right").all()
    # the dropped data segments were retransmitted: each appears twice on the link after the drop
    pk = _packets(out / "pcap" / "left-right.pcap")
    lost = drops[drops["kind"] == "data"].iloc[0]
    again = pk[(pk["sport"] == 1024 + lost["flow_id"]) & (pk["seq"] == lost["seq"] + 1)]
    assert len(again) >= 1 and again["t"].min() > lost["time_s"]
    # the TCP flow's receiver reported its holes: ACKs to s1 with SACK blocks above the ACK
    acks = _packets(out / "pcap" / "s1.pcap")
    acks = acks[acks["dst"] == _hosts(out)["s1"]]
    sacked = acks[acks["options"].map(lambda o: "SAck" in o)]
    assert res.flows.loc[2, "drops"] > 0 and len(sacked) > 0
    assert all(left > ack for left, ack in zip(sacked["options"].map(lambda o: o["SAck"][0]), sacked["ack"]))
    drops_file = pd.read_parquet(out / "drops.parquet")
    assert len(drops_file) == len(drops)


def test_rtt_columns(run):
    res, _ = run
    f = res.flows
    assert (f["rtt_min_s"] > 0).all() and (f["rtt_mean_s"] >= f["rtt_min_s"]).all()
    # the path's round trip without queueing: 6 x 10 us of propagation plus serialization
    assert (f["rtt_min_s"] > 60e-6).all() and (f["rtt_min_s"] < 200e-6).all()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (apt-get install tshark)")
def test_tshark_reads_the_capture(run):
    res, out = run
    lines = subprocess.run(
        [
            "tshark",
            "-r",
            str(out / "pcap" / "left-right.pcap"),
            "-T",
            "fields",
            "-e",
            "tcp.seq_raw",
            "-e",
            "ip.dsfield.ecn",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    bottleneck = res.links[(res.links["src"] == "left") & (res.links["dst"] == "right")].iloc[0]
    assert len(lines) == bottleneck["tx_packets"]
    assert sum(1 for ln in lines if ln.split("\t")[1] == "3") == bottleneck["ecn_marks"]


def test_windows_and_limits(tmp_path):
    p = SCENARIO_FILE(tmp_path)
    full = fctlab.run(p)
    cut = fctlab.run(p, set=["monitor.pcap_from=1ms", "monitor.pcap_until=2ms", "monitor.pcap_max_packets=10"])
    [s0, _, link] = cut.pcaps
    assert (s0.name, s0.packets, link.name, link.packets) == ("s0", 10, "left->right", 10)
    times = _packets_bytes(link.data, tmp_path)["t"]
    assert times.between(1e-3, 2e-3, inclusive="left").all()
    inside = _packets_bytes(full.pcaps[2].data, tmp_path)["t"].between(1e-3, 2e-3, inclusive="left").sum()
    assert link.missed == inside - 10
    # captures and the trace change nothing else
    plain = fctlab.run(p, set=["monitor.drops=false"], unset=["monitor.pcap"])
    pd.testing.assert_frame_equal(plain.flows, full.flows)
    assert plain.drops is None and plain.pcaps == []


def _packets_bytes(data: bytes, tmp_path):
    f = tmp_path / "x.pcap"
    f.write_bytes(data)
    return _packets(f)


@pytest.mark.parametrize(
    "monitor, message",
    [
        ('pcap = ["left"]', r'monitor.pcap\[0\]: "left" is a switch; capture one of its links'),
        ('pcap = ["nowhere"]', r'monitor.pcap\[0\]: "nowhere" is neither a host nor a link'),
        ('pcap = ["s0->r0"]', r'monitor.pcap\[0\]: "s0->r0" is not a link'),
        ('pcap = ["s0", "s0"]', r'monitor.pcap\[1\]: "s0" is listed twice'),
        ('pcap_until = "1ms"', r"monitor.pcap_until: needs `pcap`"),
        ('pcap = ["s0"]\npcap_max_packets = 0', r"monitor.pcap_max_packets: expected 1 to"),
        ('pcap = ["s0"]\npcap_from = "2ms"\npcap_until = "1ms"', r"monitor.pcap_until: must be after `pcap_from`"),
        ('drops = "yes"', r"monitor.drops"),
    ],
)
def test_bad_capture_keys_are_one_line_errors(tmp_path, monitor, message):
    text = SCENARIO.replace('drops = true\npcap = ["s0", "s1", "left->right"]', monitor)
    with pytest.raises(fctlab.ScenarioError, match=message) as e:
        fctlab.run(_write(tmp_path, text))
    assert "\n" not in str(e.value)


def _write(tmp_path, text):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


def test_cli_flags(tmp_path):
    p = SCENARIO_FILE(tmp_path)
    text = p.read_text().replace('drops = true\npcap = ["s0", "s1", "left->right"]', "")
    p.write_text(text)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fctlab.cli",
            "run",
            str(p),
            "--out",
            str(tmp_path / "o"),
            "--pcap",
            "r0",
            "--trace-drops",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "drops.parquet" in out.stdout
    assert f"capture    {tmp_path / 'o'}/pcap/r0.pcap: r0," in out.stdout
    assert (tmp_path / "o" / "pcap" / "r0.pcap").stat().st_size > 24
    # a second run into the same directory without captures removes the old ones
    subprocess.run([sys.executable, "-m", "fctlab.cli", "run", str(p), "--out", str(tmp_path / "o"), "-q"], check=True)
    assert not (tmp_path / "o" / "pcap").exists() and not (tmp_path / "o" / "drops.parquet").exists()


@pytest.mark.parametrize(
    "queue, cause",
    [
        ('queue = "red"\nred_min_threshold = "3pkt"\nred_max_threshold = "9pkt"\nred_max_p = 0.5', "early"),
        ('queue = "priority"\npriority_tags = ["hi"]\npriority_pushout = true', "pushed_out"),
    ],
)
def test_the_drop_trace_names_the_discipline_s_drops(tmp_path, queue, cause):
    text = SCENARIO.replace('queue = "ecn"\necn_threshold = "10pkt"', queue).replace(
        'protocol = "dctcp"', 'protocol = "tcp"'
    )
    text = text.replace('start = "50us"', 'start = "50us"\ntag = "hi"')
    res = fctlab.run(_write(tmp_path, text))
    d = res.drops
    assert cause in set(d["cause"]) and len(d) == res.summary["drops"]
    assert d.groupby("flow_id").size().sum() == res.flows["drops"].sum()
