"""Strict-priority ports on the testbed (the simulator's ``queue = "priority"``).

This kernel family may lack the ``prio`` qdisc, so a port with N bands is an HTB tree:

- the root class at the port's rate (its ``ceil`` too; burst 1 ms of traffic, as a TBF
  port's);
- one leaf class per band, ``prio`` = band, ``ceil`` = the port's rate and a guaranteed
  ``rate`` of 0.1% of it (HTB needs one): every leaf borrows from the root, and HTB lends to
  the lowest ``prio`` first, so band 0 is served before band 1 and so on. A band can send
  ahead of a higher one only on its 0.1%, in bursts of at most two frames;
- a byte FIFO under each leaf, as long as the whole buffer;
- u32 filters sending DSCP ``b`` to band ``b`` (DSCP 1-7 beyond the last band to the last
  band, as the simulator's port clamps a packet's band); other packets (DSCP 0, ARP) go to
  band 0.

The buffer is the port's, shared by the bands: ``kernel/ecn_mark.bpf.c`` on the egress hook
drops a packet that would take the HTB root's backlog above it, and marks ECN on the same
backlog (per-port marking, ``priority_ecn_per_port = true``). Senders set DSCP: PIAS's
tagger (``pias.py``) by the bytes a flow has sent.
"""

from __future__ import annotations

from .shell import run

#: HTB's priorities run 0-7.
MAX_BANDS = 8
#: Guaranteed rate of each band, as a fraction of the port's rate.
LEAF_SHARE = 1e-3
ROOT = "1:1"


def band_class(band: int) -> str:
    """The HTB class of ``band``."""
    return f"1:{0x10 + band:x}"


def commands(dev: str, rate_bps: float, limit_bytes: int, bands: int, burst: int, frame: int) -> list[list[str]]:
    """The ``tc`` arguments (without ``tc -n NS``) that build a strict-priority port of
    ``bands`` bands on ``dev``."""
    if not 2 <= bands <= MAX_BANDS:
        raise ValueError(f"{bands} bands: a testbed priority port has 2-{MAX_BANDS}")
    rate = f"{int(rate_bps)}bit"
    leaf = f"{max(8000, int(rate_bps * LEAF_SHARE))}bit"
    out = [
        ["qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", f"{0x10:x}"],
        ["class", "add", "dev", dev, "parent", "1:", "classid", ROOT, "htb", "rate", rate, "ceil", rate]
        + ["burst", str(burst), "cburst", str(burst)],
    ]
    for b in range(bands):
        cls = band_class(b)
        out.append(
            ["class", "add", "dev", dev, "parent", ROOT, "classid", cls, "htb", "rate", leaf, "ceil", rate]
            + ["burst", str(2 * frame), "cburst", str(burst), "prio", str(b), "quantum", str(frame)]
        )
        out.append(["qdisc", "add", "dev", dev, "parent", cls, "bfifo", "limit", str(limit_bytes)])
    for dscp in range(1, MAX_BANDS):
        out.append(
            ["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32"]
            + ["match", "ip", "dsfield", f"0x{dscp << 2:02x}", "0xfc", "flowid", band_class(min(dscp, bands - 1))]
        )
    return out


def install(ns: str, dev: str, rate_bps: float, limit_bytes: int, bands: int, burst: int, frame: int) -> None:
    """Makes ``dev``'s egress in namespace ``ns`` a strict-priority port (one ``tc -batch``)."""
    script = "".join(" ".join(args) + "\n" for args in commands(dev, rate_bps, limit_bytes, bands, burst, frame))
    run(["tc", "-n", ns, "-batch", "-"], input=script)
