"""Peer simulators fctlab can install and run beside itself."""

# A minimal registry for the ns-3 crosscheck target (fctlab.crosscheck.ns3 imports
# fctlab.peers.ns3); the registry of every peer and its `fctlab peers` commands extend it.
from . import ns3

#: Peers by name (each module has build(), find() and how_to_get()).
PEERS = {"ns3": ns3}
