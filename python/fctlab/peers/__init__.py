"""Other simulators fctlab runs beside itself (``fctlab crosscheck --against``), built from
their own source into a cache directory (``$FCTLAB_CACHE``, else ``~/.cache/fctlab``).

    fctlab peers build htsim --source DIR|GIT-URL
    fctlab peers build ns3
    fctlab peers list

A peer is a module with
  build(source, log) -> Peer         builds (from a checkout or a git URL when it needs one: NEEDS_SOURCE)
  find() -> Peer | None              the built peer, or None
  how_to_get() -> str                one line: how to build it
  BuildError: type                   what `build` raises when the build fails (one line)
A Peer prints as one line saying what was built and where.
"""

from __future__ import annotations

import sys

from .._argparse import OneLineParser
from . import htsim, ns3
from .cache import cache_dir as cache_dir

PEERS = {"htsim": htsim, "ns3": ns3}


def configure(p) -> None:
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    b = sub.add_parser("build", help="build a peer simulator from its source")
    b.add_argument("peer", choices=sorted(PEERS))
    b.add_argument("--source", help="a checkout of the peer's repository, or a git URL to clone (htsim)")
    sub.add_parser("list", help="the peers and whether they are built")


def run(a) -> int:
    if a.cmd == "list":
        for name, mod in PEERS.items():
            peer = mod.find()
            if peer is None:
                print(f"{name}: not built ({mod.how_to_get()})")
            else:
                print(f"{name}: {peer}")
        return 0
    mod = PEERS[a.peer]
    if a.source is None and getattr(mod, "NEEDS_SOURCE", False):
        print(f"fctlab peers: error: {a.peer} is built from its source: {mod.how_to_get()}", file=sys.stderr)
        return 2
    try:
        peer = mod.build(a.source, log=lambda msg: print(f"[peers] {msg}", file=sys.stderr, flush=True))
    except getattr(mod, "BuildError", RuntimeError) as e:
        print(f"fctlab peers: error: {e}", file=sys.stderr)
        return 2
    print(f"{a.peer}: {peer}")
    return 0
