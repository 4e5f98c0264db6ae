"""What the thesis reproduction's items share (:mod:`.thesis` items 1-10 and
:mod:`.thesis_claims` items 11-18): the protocols compared, how each is run, and the
measurements every item reads."""

from __future__ import annotations

import pandas as pd

PROTOCOLS = ("racs", "rcp", "sdc", "tcp")
#: TCP SACK with RED marking ECN-capable packets (chapter 3's "SACK+RED/ECN")
RED = "tcp_red"
LABEL = {"racs": "RACS", "rcp": "RCP", "sdc": "SDC", "tcp": "TCP SACK", RED: "SACK+RED/ECN"}
#: RED's settings for the SACK+RED/ECN runs: fctlab's RED defaults (ns-2's: min 5 and max 15
#: packets, max_p 0.02, weight 0.002, gentle) marking instead of dropping.
RED_SETTINGS = {"network__queue": "red", "network__red_ecn": True, "transport__ecn": True}


def _as(p: str) -> dict:
    """The overrides that run protocol `p` (or the SACK+RED/ECN baseline)."""
    return {"transport__protocol": "tcp", **RED_SETTINGS} if p == RED else {"transport__protocol": p}


#: The wire size of a full packet under the ns2 profile (1000 B + 40 B of headers); 100 of
#: them are the byte-counted buffer of item 3.
PACKET_BYTES = 1040


def _port(res, src: str, dst: str) -> pd.Series:
    links = res.links
    return links[(links["src"] == src) & (links["dst"] == dst)].iloc[0]


def _loss_rate(res) -> float:
    """Packets dropped in the network per data packet sent."""
    sent = float(res.flows["packets_sent"].sum())
    return float(res.summary["drops"]) / sent if sent else float("nan")


def _set(n: int) -> str:
    return "h1" if n == 1 else f"h1..h{n}"
