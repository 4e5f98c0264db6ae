"""Peer simulators fctlab can install and run beside itself."""

from . import ns3

#: Peers by name (each module has build(), find() and how_to_get()).
PEERS = {"ns3": ns3}
